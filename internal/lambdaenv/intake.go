package lambdaenv

import (
	"context"
	"fmt"
	"os"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/awslambda"
	"github.com/waitroom/waitroom/intake"
	"github.com/waitroom/waitroom/sqs"
)

// EnterAPI is API with the broker of INTAKE broker and fallback: the SQS
// queue at INTAKE_QUEUE_URL. In broker mode enter never reaches the store,
// so the function runs outside the VPC; the Redis client connects lazily and
// is never used.
func (e Env) EnterAPI() *awslambda.API {
	api := e.API()
	if e.Config.Intake == waitroom.IntakeDirect {
		return api
	}
	q, err := sqs.New(context.Background(), e.Config.IntakeQueueURL)
	if err != nil {
		e.Log.Error("init failed", "err", err)
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	api.Broker = q
	return api
}

// Consumer is the intake consumer function's: entries are worth applying
// for as long as their receipts live (TICKET_TTL_SECONDS).
func (e Env) Consumer() *intake.Consumer {
	return &intake.Consumer{Store: e.Store, Keep: e.Config.Visitor.TicketTTL, Log: e.Log, Metrics: e.Metrics}
}
