package awslambda

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/metrics"
)

// HTTPHandler is one route's handler.
type HTTPHandler func(context.Context, events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse

// HTTPFunction adapts a route handler to lambda.Start. It decodes the event
// itself so that a malformed event gets a 400 answer instead of a runtime
// error, and it never returns an error: API Gateway would turn that into a
// bare 500.
func HTTPFunction(h HTTPHandler) func(context.Context, json.RawMessage) (events.APIGatewayV2HTTPResponse, error) {
	return func(ctx context.Context, raw json.RawMessage) (events.APIGatewayV2HTTPResponse, error) {
		var req events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(raw, &req); err != nil {
			return errorResponse(waitroom.Errorf(waitroom.EInvalidRequest, "the event is not an API Gateway HTTP API payload 2.0 request")), nil
		}
		return h(ctx, req), nil
	}
}

// AdmitResult is what an admit invocation returns (visible in the console
// and to tests that invoke it).
type AdmitResult struct {
	Batches  int `json:"batches"`
	Failed   int `json:"failed"`
	Admitted int `json:"admitted"`
}

// deadlineMargin stops batches early enough to return before the Lambda
// timeout, so that a long invocation ends cleanly instead of being killed.
const deadlineMargin = 500 * time.Millisecond

// AdmitFunction adapts an Admitter to lambda.Start for EventBridge
// scheduled events. The event's content is not needed: every invocation
// does the same, and the Redis budget makes overlapping ones harmless.
func AdmitFunction(a *waitroom.Admitter, log *slog.Logger) func(context.Context, json.RawMessage) (AdmitResult, error) {
	return func(ctx context.Context, raw json.RawMessage) (AdmitResult, error) {
		var ev events.EventBridgeEvent
		if err := json.Unmarshal(raw, &ev); err != nil && log != nil {
			log.Warn("admit invoked with an unexpected payload; admitting anyway", "err", err)
		}
		if dl, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, dl.Add(-deadlineMargin))
			defer cancel()
		}
		sum, err := a.Run(ctx)
		return AdmitResult{Batches: sum.Batches, Failed: sum.Failed, Admitted: sum.Admitted}, err
	}
}

// RecordBatch emits the metrics of one admission batch.
func RecordBatch(rec *metrics.Recorder) func(waitroom.Batch) {
	return func(b waitroom.Batch) {
		rec.Record("", metrics.Of(metrics.AdmitBatches, metrics.Count, 1))
		for _, r := range b.Rooms {
			waits := make([]float64, len(r.Admitted))
			for i, ad := range r.Admitted {
				waits[i] = ad.Waited.Seconds()
			}
			rec.Record(r.Room,
				metrics.Of(metrics.Admitted, metrics.Count, float64(len(r.Admitted))),
				metrics.Of(metrics.QueueDepth, metrics.Count, float64(r.Waiting)),
				metrics.Of(metrics.ActiveTokens, metrics.Count, float64(r.ActiveTokens)),
				metrics.Of(metrics.TokensExpired, metrics.Count, float64(r.TokensExpired)),
				metrics.Value{Name: metrics.WaitSeconds, Unit: metrics.Seconds, Values: waits},
			)
		}
	}
}
