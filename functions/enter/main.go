// Command enter is the Lambda function behind POST /queue/enter.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/waitroom/waitroom/awslambda"
	"github.com/waitroom/waitroom/envconfig"
	"github.com/waitroom/waitroom/internal/lambdaenv"
)

func main() {
	env := lambdaenv.Load(envconfig.Signing)
	lambda.Start(awslambda.HTTPFunction(env.EnterAPI().Enter))
}
