package cost

import (
	"context"
	"encoding/json"
	"math"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/awslambda"
)

// StoreRoundTrip is the time one admit batch spends on the cache (one
// SMEMBERS, then the rooms' scripts in one pipeline): about a millisecond
// in one AZ with TLS. The batches are paced by the clock, so it changes an
// invocation's length only when the invocation stops early.
const StoreRoundTrip = time.Millisecond

// admitMetricsFlush is how often AdmitMetrics writes its records while an
// invocation runs (awslambda's flushEvery), plus once at the end.
const admitMetricsFlush = time.Second

// AdmitRun is what one admit invocation does, found by running the real
// handler (awslambda.AdmitFunction over a waitroom.Admitter) on a virtual
// clock against a store that answers instantly after StoreRoundTrip.
type AdmitRun struct {
	Seconds float64 // from start to return
	Batches int     // store round trips (each one SMEMBERS at least)
	Flushes int     // EMF record sets written (a heartbeat line each)
}

// BilledMs is the run's billed duration: Lambda rounds up to 1 ms.
func (r AdmitRun) BilledMs() float64 { return math.Ceil(r.Seconds * 1000) }

// SimulateAdmit runs one invocation with cfg's ADMIT_BATCHES and
// ADMIT_INTERVAL_MS. busy says whether one room has a line (a batch admits
// cfg.BatchSize users and leaves people waiting) or no room exists at all
// (idle: nobody waiting, no live token).
func SimulateAdmit(cfg waitroom.Config, busy bool) (AdmitRun, error) {
	clock := &virtualClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	q := &simQueue{clock: clock, busy: busy, batch: int(math.Ceil(cfg.BatchSize()))}
	start := clock.t
	var run AdmitRun
	handler := awslambda.AdmitFunction(&waitroom.Admitter{
		Queue:    q,
		Interval: cfg.AdmitInterval,
		Batches:  cfg.AdmitBatches,
		OnBatch:  func(waitroom.Batch) {},
		Now:      clock.now,
		Sleep:    clock.sleep,
		Rand:     func() float64 { return PollJitterU },
	}, nil)
	event := json.RawMessage(`{"source":"aws.events","detail-type":"Scheduled Event","detail":{}}`)
	if _, err := handler(context.Background(), event); err != nil {
		return AdmitRun{}, err
	}
	run.Seconds = clock.t.Sub(start).Seconds()
	run.Batches = q.calls
	run.Flushes = int(math.Ceil(run.Seconds / admitMetricsFlush.Seconds()))
	if run.Flushes == 0 && run.Batches > 0 {
		run.Flushes = 1 // the flush at the end of the invocation
	}
	return run, nil
}

type virtualClock struct{ t time.Time }

func (c *virtualClock) now() time.Time { return c.t }

func (c *virtualClock) sleep(ctx context.Context, d time.Duration) error {
	if d > 0 {
		c.t = c.t.Add(d)
	}
	return ctx.Err()
}

// simQueue answers AdmitBatch only; the admit handler calls nothing else
// (the embedded nil Queue would panic if it did).
type simQueue struct {
	waitroom.Queue
	clock *virtualClock
	busy  bool
	batch int
	calls int
}

func (q *simQueue) AdmitBatch(context.Context) (waitroom.Batch, error) {
	q.calls++
	q.clock.t = q.clock.t.Add(StoreRoundTrip)
	if !q.busy {
		return waitroom.Batch{}, nil
	}
	rb := waitroom.RoomBatch{Room: SampleRoom, Waiting: 1_000_000, ActiveTokens: int64(q.batch)}
	for i := 0; i < q.batch; i++ {
		rb.Admitted = append(rb.Admitted, waitroom.Admission{User: "u", Token: "t", ExpiresAt: q.clock.t})
	}
	return waitroom.Batch{Rooms: []waitroom.RoomBatch{rb}}, nil
}
