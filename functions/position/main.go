// Command position is the Lambda function behind GET /queue/position,
// GET /queue/line (a room's line, cacheable) and GET /.well-known/jwks.json
// (the entry tokens' public keys).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/waitroom/waitroom/awslambda"
	"github.com/waitroom/waitroom/envconfig"
	"github.com/waitroom/waitroom/internal/lambdaenv"
)

func main() {
	env := lambdaenv.Load(envconfig.Signing)
	api := env.API()
	lambda.Start(awslambda.HTTPFunction(api.WithJWKS(api.WithLine(api.Position))))
}
