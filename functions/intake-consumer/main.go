// Command intake-consumer applies the entries enter accepted into the SQS
// FIFO queue (INTAKE broker or fallback) to the line, batch by batch from
// the queue's event source mapping.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/waitroom/waitroom/awslambda"
	"github.com/waitroom/waitroom/envconfig"
	"github.com/waitroom/waitroom/internal/lambdaenv"
)

func main() {
	env := lambdaenv.Load(envconfig.Function)
	lambda.Start(awslambda.ConsumeFunction(env.Consumer()))
}
