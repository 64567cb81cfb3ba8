package awslambda

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/httpapi"
	"github.com/waitroom/waitroom/metrics"
)

// HTTPFunction adapts a route handler to lambda.Start. It decodes the event
// itself so that a malformed event gets a 400 answer instead of a runtime
// error, and it never returns an error: API Gateway would turn that into a
// bare 500.
func HTTPFunction(h httpapi.Handler) func(context.Context, json.RawMessage) (events.APIGatewayV2HTTPResponse, error) {
	return func(ctx context.Context, raw json.RawMessage) (events.APIGatewayV2HTTPResponse, error) {
		req, err := decodeEvent(raw)
		if err != nil {
			return httpapi.ErrorResponse(waitroom.Errorf(waitroom.EInvalidRequest, "the event is not an API Gateway HTTP API payload 2.0 request")), nil
		}
		return h(ctx, req), nil
	}
}

// AdmitResult is what an admit invocation returns (visible in the console
// and to tests that invoke it).
type AdmitResult struct {
	Batches  int  `json:"batches"`
	Failed   int  `json:"failed"`
	Admitted int  `json:"admitted"`
	Idle     bool `json:"idle"` // nobody waited and no token was live: one batch only
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
		return AdmitResult{Batches: sum.Batches, Failed: sum.Failed, Admitted: sum.Admitted, Idle: sum.Idle}, err
	}
}

// AdmitMetrics sums admission batches and emits them about once a second
// rather than once per batch: ten times fewer log lines for the same
// dashboard, whose finest period is a minute anyway.
type AdmitMetrics struct {
	rec   *metrics.Recorder
	now   func() time.Time
	mu    sync.Mutex
	since time.Time
	count int // batches since the last flush
	rooms map[string]*roomSums
	// live are the rooms whose last record was not all zeros.
	live map[string]bool
}

type roomSums struct {
	admitted, expired     int
	waiting, activeTokens int64   // gauges: the latest batch's
	effectiveRate         float64 // gauge: the latest batch's
	waits                 []float64
}

// quiet: nobody waits, no token lives and nothing happened since the last flush.
func (r *roomSums) quiet() bool {
	return r.admitted == 0 && r.expired == 0 && r.waiting == 0 && r.activeTokens == 0
}

// flushEvery and maxSamples bound a record: EMF takes up to 100 values per metric.
const (
	flushEvery = time.Second
	maxSamples = 100
)

// NewAdmitMetrics returns an aggregator writing to rec.
func NewAdmitMetrics(rec *metrics.Recorder) *AdmitMetrics {
	return &AdmitMetrics{rec: rec, now: time.Now, rooms: map[string]*roomSums{}, live: map[string]bool{}}
}

// Observe adds a batch; it is the Admitter's OnBatch.
func (m *AdmitMetrics) Observe(b waitroom.Batch) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.count == 0 {
		m.since = m.now()
	}
	m.count++
	full := false
	for _, r := range b.Rooms {
		sums := m.rooms[r.Room]
		if sums == nil {
			sums = &roomSums{}
			m.rooms[r.Room] = sums
		}
		sums.admitted += len(r.Admitted)
		sums.expired += int(r.TokensExpired)
		sums.waiting, sums.activeTokens, sums.effectiveRate = r.Waiting, r.ActiveTokens, r.EffectiveRatePerSec
		for _, a := range r.Admitted {
			sums.waits = append(sums.waits, a.Waited.Seconds())
		}
		full = full || len(sums.waits) >= maxSamples
	}
	if full || m.now().Sub(m.since) >= flushEvery {
		m.flushLocked()
	}
}

// Flush emits what has not been emitted yet (at the end of an invocation).
func (m *AdmitMetrics) Flush() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.flushLocked()
}

func (m *AdmitMetrics) flushLocked() {
	if m.count == 0 {
		return
	}
	m.rec.Record("", metrics.Of(metrics.AdmitBatches, metrics.Count, float64(m.count)))
	for room, r := range m.rooms {
		// A created room stays in every batch while nobody is in it, and
		// CloudWatch bills each metric for every hour it is published: a
		// quiet room gets one record of zeros (the gauges fall to 0), then
		// none until someone enters. The heartbeat above goes on.
		if r.quiet() && !m.live[room] {
			continue
		}
		if r.quiet() {
			delete(m.live, room)
		} else {
			m.live[room] = true
		}
		for len(r.waits) > maxSamples { // only with rates above 100 users a batch
			m.rec.Record(room, metrics.Value{Name: metrics.WaitSeconds, Unit: metrics.Seconds, Values: r.waits[:maxSamples]})
			r.waits = r.waits[maxSamples:]
		}
		m.rec.Record(room,
			metrics.Of(metrics.Admitted, metrics.Count, float64(r.admitted)),
			metrics.Of(metrics.QueueDepth, metrics.Count, float64(r.waiting)),
			metrics.Of(metrics.ActiveTokens, metrics.Count, float64(r.activeTokens)),
			metrics.Of(metrics.EffectiveRate, metrics.PerSecond, r.effectiveRate),
			metrics.Of(metrics.TokensExpired, metrics.Count, float64(r.expired)),
			metrics.Value{Name: metrics.WaitSeconds, Unit: metrics.Seconds, Values: r.waits},
		)
	}
	m.count, m.rooms = 0, map[string]*roomSums{}
}
