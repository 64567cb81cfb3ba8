// Command admin is the Lambda function behind the operators' routes
// /admin/…, which API Gateway authorizes with AWS_IAM (SigV4).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/waitroom/waitroom/awslambda"
	"github.com/waitroom/waitroom/envconfig"
	"github.com/waitroom/waitroom/internal/lambdaenv"
)

func main() {
	env := lambdaenv.Load(envconfig.Function)
	lambda.Start(awslambda.HTTPFunction(env.Admin().Route))
}
