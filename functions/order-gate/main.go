// Command order-gate is the Lambda function behind POST /orders.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/awslambda"
	"github.com/waitroom/waitroom/internal/lambdaenv"
)

func main() {
	env := lambdaenv.Load(waitroom.OrderGateDefaults) // ORDER_API_URL is required here
	lambda.Start(awslambda.HTTPFunction(env.API().Order))
}
