// Command order-gate is the Lambda function behind POST /orders.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/waitroom/waitroom/awslambda"
	"github.com/waitroom/waitroom/envconfig"
	"github.com/waitroom/waitroom/internal/lambdaenv"
	"github.com/waitroom/waitroom/orderrecord"
)

func main() {
	env := lambdaenv.Load(envconfig.OrderGate) // ORDER_API_URL is required here
	api := env.API()
	// The order record (ORDER_RECORD_TABLE, set by the stack) is the gate's
	// alone: only this function links the DynamoDB client.
	record, err := orderrecord.Open(context.Background(), env.Config)
	if err != nil {
		env.Log.Error("init failed", "err", err)
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if record != nil { // never a typed nil in the interface
		api.Record = record
	}
	lambda.Start(awslambda.HTTPFunction(api.Order))
}
