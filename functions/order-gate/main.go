// Command order-gate is the Lambda function behind POST /orders.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/waitroom/waitroom/awslambda"
	"github.com/waitroom/waitroom/internal/lambdaenv"
)

func main() {
	env := lambdaenv.Load()
	if env.Config.OrderAPIURL == "" {
		fmt.Fprintln(os.Stderr, "config: ORDER_API_URL is required by the order gate")
		os.Exit(1)
	}
	lambda.Start(awslambda.HTTPFunction(env.API().Order))
}
