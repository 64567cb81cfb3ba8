package cost

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/awslambda"
	"github.com/waitroom/waitroom/metrics"
)

// StoreRoundTrip is the time one admit batch spends on the cache (one
// SMEMBERS, then the rooms' scripts in one pipeline): about a millisecond
// in one AZ with TLS. The batches are paced by the clock, so it changes an
// invocation's length only when the invocation stops early.
const StoreRoundTrip = time.Millisecond

// admitMetricsFlush is how often AdmitMetrics writes its records while an
// invocation runs (awslambda's flushEvery), plus once at the end.
const admitMetricsFlush = time.Second

// DefaultIdleRooms is how many rooms exist while nobody visits. With
// OPEN_ROOMS=false (the stack's default) only rooms an operator created
// exist, and a created room stays registered: every admit batch runs its
// script, whether anyone waits or not. Three: the next sale's room, a
// rehearsal's, and one left from the last sale.
const DefaultIdleRooms = 3

// AdmitRun is what one admit invocation does, found by running the real
// handler (awslambda.AdmitFunction over a waitroom.Admitter) on a virtual
// clock against a store that answers instantly after StoreRoundTrip.
type AdmitRun struct {
	Seconds float64 // from start to return
	Batches int     // store round trips (each one SMEMBERS at least)
	Rooms   int     // rooms each batch runs the admit script in
	Flushes int     // EMF record sets written (a heartbeat line each)
	// EMF is what the real awslambda.AdmitMetrics wrote during the run
	// (idle runs only: a busy run is rendered per second, logs.go).
	EMF []string
}

// BilledMs is the run's billed duration: Lambda rounds up to 1 ms.
func (r AdmitRun) BilledMs() float64 { return math.Ceil(r.Seconds * 1000) }

// ECPU is what the run's batches cost the cache: one SMEMBERS each, and
// the admit script in every room.
func (r AdmitRun) ECPU() float64 {
	return float64(r.Batches * (ECPUAdmitBatch + r.Rooms*ECPUAdmitRoom))
}

// EMFBytes is what the run's metric lines ingest into CloudWatch Logs.
func (r AdmitRun) EMFBytes() float64 { return ingested(r.EMF...) }

// SimulateAdmit runs one invocation with cfg's ADMIT_BATCHES and
// ADMIT_INTERVAL_MS over rooms created rooms. busy says whether the first
// of them has a line (a batch admits cfg.BatchSize users and leaves people
// waiting); the others, or all of them when idle, have nobody waiting and
// no live token. The batches go through the admit function's own metrics
// (awslambda.AdmitMetrics, flushed at the end as the function does), so
// what an idle run writes is measured, not assumed.
func SimulateAdmit(cfg waitroom.Config, busy bool, rooms int) (AdmitRun, error) {
	clock := &virtualClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	q := &simQueue{clock: clock, busy: busy, rooms: rooms, batch: int(math.Ceil(cfg.BatchSize()))}
	start := clock.t
	var emf bytes.Buffer
	recorded := awslambda.NewAdmitMetrics(metrics.NewRecorder(&emf))
	handler := awslambda.AdmitFunction(&waitroom.Admitter{
		Queue:    q,
		Interval: cfg.AdmitInterval,
		Batches:  cfg.AdmitBatches,
		OnBatch:  recorded.Observe,
		Now:      clock.now,
		Sleep:    clock.sleep,
		Rand:     func() float64 { return PollJitterU },
	}, nil)
	event := json.RawMessage(`{"source":"aws.events","detail-type":"Scheduled Event","detail":{}}`)
	if _, err := handler(context.Background(), event); err != nil {
		return AdmitRun{}, err
	}
	recorded.Flush()
	run := AdmitRun{Seconds: clock.t.Sub(start).Seconds(), Batches: q.calls, Rooms: rooms}
	if !busy {
		for _, line := range strings.Split(strings.TrimSpace(emf.String()), "\n") {
			run.EMF = append(run.EMF, stableTime(line))
		}
	}
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
// (the embedded nil Store would panic if it did).
type simQueue struct {
	waitroom.Store
	clock *virtualClock
	busy  bool
	rooms int
	batch int
	calls int
}

// AdmitBatch answers as the store does for created rooms: one RoomBatch
// per room, the quiet ones with nobody waiting and no live token.
func (q *simQueue) AdmitBatch(context.Context) (waitroom.Batch, error) {
	q.calls++
	q.clock.t = q.clock.t.Add(StoreRoundTrip)
	var b waitroom.Batch
	for i := 0; i < q.rooms; i++ {
		b.Rooms = append(b.Rooms, waitroom.RoomBatch{Room: fmt.Sprintf("room-%d", i+1)})
	}
	if q.busy && q.rooms > 0 {
		rb := &b.Rooms[0]
		rb.Room, rb.Waiting, rb.ActiveTokens = SampleRoom, 1_000_000, int64(q.batch)
		for i := 0; i < q.batch; i++ {
			rb.Admitted = append(rb.Admitted, waitroom.Admission{User: "u", Token: "t", ExpiresAt: q.clock.t})
		}
	}
	return b, nil
}
