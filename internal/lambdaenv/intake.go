package lambdaenv

import (
	"context"
	"fmt"
	"os"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/httpapi"
	"github.com/waitroom/waitroom/intake"
	"github.com/waitroom/waitroom/sqs"
)

// EnterAPI is API with the broker of INTAKE broker and fallback: the SQS
// queue at INTAKE_QUEUE_URL. In broker mode too enter reaches the store:
// accept asks it first (the room, the limiter, a challenge's single use,
// one call), so the function runs in the VPC beside the cache, and it lets
// an entry through unchecked only when the store does not answer
// (awslambda/intake.go, accept).
func (e Env) EnterAPI() *httpapi.API {
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
