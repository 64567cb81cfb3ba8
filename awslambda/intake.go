package awslambda

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom/intake"
)

// ConsumeFunction is the intake consumer's handler for batches from the SQS
// event source mapping (ReportBatchItemFailures on): the messages it could
// not apply, and every one after the first of them, are reported failed, so
// that SQS delivers them again in the same order and deletes only the rest.
func ConsumeFunction(c *intake.Consumer) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		msgs := make([]intake.Message, len(ev.Records))
		for i, r := range ev.Records {
			msgs[i] = intake.Message{ID: r.MessageId, Handle: r.ReceiptHandle, Body: r.Body}
		}
		done, _ := c.Apply(ctx, msgs)
		var resp events.SQSEventResponse
		for _, m := range msgs[done:] {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.ID})
		}
		return resp, nil
	}
}
