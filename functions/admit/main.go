// Command admit is the Lambda function the admission schedule invokes.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/waitroom/waitroom/envconfig"
	"github.com/waitroom/waitroom/internal/lambdaenv"
)

func main() {
	env := lambdaenv.Load(envconfig.Function)
	lambda.Start(env.AdmitHandler())
}
