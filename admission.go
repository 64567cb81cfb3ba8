package waitroom

import (
	"context"
	"math/rand/v2"
	"time"
)

// Store keeps the line of every room. Implementations must be safe for
// concurrent use by any number of processes sharing one store.
type Store interface {
	// Enter joins room's line as c.User, or reports the current standing
	// when c.User is already in line or admitted; the abuse limiter counts
	// c (and spends its challenge). A full line is an EQueueFull error.
	Enter(ctx context.Context, room string, c Caller) (Standing, error)
	// Position reports c.User's standing without changing anything but
	// the limiter's count of c.
	Position(ctx context.Context, room string, c Caller) (Standing, error)
	// View reads room's front and the room as one View, in one round
	// trip; a room that does not exist is an ERoomNotFound error.
	View(ctx context.Context, room string) (View, error)
	// AdmitBatch admits the front of every room's line, as far as each room's
	// rate budget allows, and issues entry tokens in the same atomic step. It
	// hands over the control windows that ended (RoomBatch.Downstream) but
	// decides nothing on them: call it through RunBatch, which does.
	AdmitBatch(ctx context.Context) (Batch, error)
	// StoreDecisions keeps the admission loop's decisions on the windows a
	// batch handed over (RunBatch), every room's in one round trip; a
	// decision on a window no newer than the room's last decided one is
	// dropped (admitters may overlap). One that does not land leaves the
	// rate as it was.
	StoreDecisions(ctx context.Context, decided []RoomDecision) error
	// BeginOrder validates c.User's entry token and takes its order lock,
	// or returns the stored answer of an earlier success with the same key;
	// the limiter counts c. An unavailable error may come with a lease
	// whose LockValue is set: the check may have taken the lock (its reply
	// lost, or no replica acknowledged it), and the caller, who calls no
	// order API, gives it up with ReleaseOrder.
	BeginOrder(ctx context.Context, c Caller, o OrderAttempt) (Lease, error)
	// CommitOrder consumes the token, stores the answer under the
	// idempotency key and releases the lock, atomically.
	CommitOrder(ctx context.Context, l Lease, answer StoredAnswer) error
	// ReleaseOrder releases the lock and keeps the token.
	ReleaseOrder(ctx context.Context, l Lease) error
	// Admissible makes the checks an enter makes before it touches the line
	// (the room exists; c is within the abuse limiter, its challenge
	// unspent), for an entry about to be handed to a broker.
	Admissible(ctx context.Context, room string, c Caller) error
}

// Batch is what one admission batch did, room by room.
type Batch struct {
	Rooms []RoomBatch
}

// Idle reports whether the batch admitted nobody and left nobody waiting
// and no entry token live, in any room (no rooms at all is idle too):
// admission has nothing to do until someone enters.
func (b Batch) Idle() bool {
	for _, r := range b.Rooms {
		if r.Waiting > 0 || r.ActiveTokens > 0 || len(r.Admitted) > 0 {
			return false
		}
	}
	return true
}

// RoomBatch is one room's share of a batch.
type RoomBatch struct {
	Room          string
	Admitted      []Admission
	Waiting       int64 // still in line after the batch
	ActiveTokens  int64 // live entry tokens after the batch
	TokensExpired int64 // tokens found expired unused during the batch
	// EffectiveRatePerSec is the rate the batch admitted at: the adaptive
	// rate, or the room's ratePerSec.
	EffectiveRatePerSec float64
	// Downstream is the control window the batch handed over (the order
	// gate's measurements, for the admission loop to decide on: RunBatch);
	// nil for none.
	Downstream *Window
	// Control and Adaptive come with Downstream: what the law remembered
	// when the window was handed over, and the room's adaptive setting
	// (nil: a fixed rate, the window measured only, for status).
	Control  ControlState
	Adaptive *Adaptive
}

// Admission is one user moved to READY.
type Admission struct {
	User  string
	Token string
	// Number is an anonymous visitor's place the batch admitted (User and
	// Token empty): its holder claims the token at its next call.
	Number    int64
	ExpiresAt time.Time
	Waited    time.Duration // enter → admitted, to the second
}

// RoomDecision is the admission loop's decision on one room's handed-over
// window, for the store to keep (Store.StoreDecisions).
type RoomDecision struct {
	Room string
	// Window is the end of the window decided on: the store keeps a
	// decision only on a window newer than the last one it kept.
	Window time.Time
	// Decision: the window's P95 and ErrorRate (for status) and, when
	// Adapted, the law's Rate and Debt.
	Decision
	Adapted bool
	State   ControlState // what the law remembers for the next window
}

// Decide runs the law on the window the room's batch handed over, if any
// (ok false when none): the window is read once (Summary), and a room at a
// fixed rate is measured only.
func (rb RoomBatch) Decide() (rd RoomDecision, ok bool) {
	if rb.Downstream == nil {
		return rd, false
	}
	w := rb.Downstream.Summary()
	rd = RoomDecision{Room: rb.Room, Window: rb.Downstream.End, State: rb.Control, Decision: Decision{P95: w.P95, ErrorRate: w.ErrorRate}}
	if rb.Adaptive != nil {
		rd.Decision, rd.State = rb.Adaptive.next(rb.EffectiveRatePerSec, w, rb.Control)
		rd.Adapted = true
	}
	return rd, true
}

// batchJitter shortens the gap before each batch by up to this share of the
// interval. Shortening (never lengthening) spreads the batches in time while
// the Redis budget, which holds at most one batch, never overflows between
// two of them: no admission is lost to the jitter or to timer noise.
const batchJitter = 0.2

// Admitter runs the batches of one admit invocation.
type Admitter struct {
	Queue    Store
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
func RunBatch(ctx context.Context, q Store) (Batch, error) {
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
