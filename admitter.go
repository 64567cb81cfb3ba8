package waitroom

import (
	"context"
	"math/rand/v2"
	"time"
)

// batchJitter shortens the gap before each batch by up to this share of the
// interval. Shortening (never lengthening) spreads the batches in time while
// the Redis budget, which holds at most one batch, never overflows between
// two of them: no admission is lost to the jitter or to timer noise.
const batchJitter = 0.2

// Admitter runs the batches of one admit invocation.
type Admitter struct {
	Queue    Queue
	Interval time.Duration
	// Batches × Interval is the time one invocation covers: back-to-back
	// invocations (the local runner) or one a minute with Batches = 700
	// (AWS) keep admission flowing without a gap while anyone waits.
	Batches int
	// OnBatch, when set, sees every batch (metrics, logs).
	OnBatch func(Batch)
	// Now, Sleep and Rand are injectable for tests; nil means the real ones.
	// Rand returning 0 spaces batches exactly Interval apart.
	Now   func() time.Time
	Sleep func(context.Context, time.Duration) error
	Rand  func() float64
}

// RunSummary counts what one invocation did.
type RunSummary struct {
	Batches  int // batches that reached the store
	Failed   int // batches the store did not answer
	Admitted int
	Idle     bool // the first batch found nobody waiting and no live token: the invocation stopped there
}

// Run covers Batches × Interval: a batch at the start, then one after every
// gap of 80–100% of Interval, so at least Batches batches run. It stops
// after the first batch that reaches the store when that batch finds the
// rooms idle (Batch.Idle): an idle waiting room then costs one batch per
// invocation, and the next invocation admits whoever arrives meanwhile in
// its first batch. It stops early when ctx ends. A failing batch does not
// stop the others: the store may come back within the invocation. The
// error is the last failure when no batch succeeded.
func (a *Admitter) Run(ctx context.Context) (RunSummary, error) {
	now, sleep, random := a.Now, a.Sleep, a.Rand
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = sleepContext
	}
	if random == nil {
		random = rand.Float64
	}
	var sum RunSummary
	var lastErr error
	start := now()
	end := start.Add(a.Interval * time.Duration(a.Batches))
	for next := start; next.Before(end); next = next.Add(time.Duration(float64(a.Interval) * (1 - batchJitter*random()))) {
		if err := sleep(ctx, next.Sub(now())); err != nil {
			break
		}
		batch, err := RunBatch(ctx, a.Queue)
		if err != nil {
			sum.Failed++
			lastErr = err
			if ctx.Err() != nil {
				break
			}
			continue
		}
		sum.Batches++
		for _, r := range batch.Rooms {
			sum.Admitted += len(r.Admitted)
		}
		if a.OnBatch != nil {
			a.OnBatch(batch)
		}
		if sum.Batches == 1 && batch.Idle() {
			sum.Idle = true
			break
		}
	}
	if sum.Batches == 0 && lastErr != nil {
		return sum, lastErr
	}
	if sum.Batches == 0 && ctx.Err() != nil {
		return sum, ctx.Err()
	}
	return sum, nil
}

// RunBatch is one turn of admission's control loop: the store admits a
// batch; the law decides on every control window the batch handed over
// (RoomBatch.Decide); the store keeps the decisions, one more round trip,
// once a window, only in a batch that handed one over. Every admitter goes
// through it (Admitter.Run, the benchmarks), so none forgets the law. A
// decision that does not land leaves the rate as it was: the next window
// decides again, so its error does not fail the batch, which went through.
func RunBatch(ctx context.Context, q Queue) (Batch, error) {
	batch, err := q.AdmitBatch(ctx)
	if err != nil {
		return batch, err
	}
	var decided []RoomDecision
	for _, rb := range batch.Rooms {
		if d, ok := rb.Decide(); ok {
			decided = append(decided, d)
		}
	}
	if len(decided) > 0 {
		_ = q.StoreDecisions(ctx, decided)
	}
	return batch, nil
}

func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
