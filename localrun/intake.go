package localrun

import (
	"context"
	"log/slog"
	"sync"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/httpapi"
	"github.com/waitroom/waitroom/intake"
	"github.com/waitroom/waitroom/redisstore"
	"github.com/waitroom/waitroom/sqs"
)

// intakeBroker wires INTAKE: with broker or fallback, enter sends to the
// SQS queue at INTAKE_QUEUE_URL (an SQS-compatible server such as goaws, or
// SQS itself) and the returned function runs the consumer on that queue until
// its context ends, as the consumer function does in AWS; it returns a
// function that waits for the consumer to stop.
func intakeBroker(cfg waitroom.Config, api *httpapi.API, store *redisstore.Store, log *slog.Logger) (func(context.Context) func(), error) {
	api.Applied = store
	if cfg.Intake == waitroom.IntakeDirect {
		return func(context.Context) func() { return func() {} }, nil
	}
	q, err := sqs.New(context.Background(), cfg.IntakeQueueURL)
	if err != nil {
		return nil, err
	}
	// One message a receive: goaws marks a second message of a room's group
	// in flight without returning it (internal/sqstest says more).
	q.Batch = 1
	api.Broker = q
	log.Info("intake through the broker", "mode", cfg.Intake, "queue", cfg.IntakeQueueURL)
	c := &intake.Consumer{Store: store, Keep: cfg.Visitor.TicketTTL, Log: log, Metrics: api.Metrics}
	return func(ctx context.Context) func() {
		var wg sync.WaitGroup
		wg.Go(func() { c.Run(ctx, q) })
		return wg.Wait
	}, nil
}
