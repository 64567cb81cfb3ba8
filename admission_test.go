package waitroom_test

import (
	"context"
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// fakeQueue admits from a scripted list of answers; only AdmitBatch is used.
type fakeQueue struct {
	waitroom.Store
	answers []error
	calls   int
}

func (q *fakeQueue) AdmitBatch(context.Context) (waitroom.Batch, error) {
	err := q.answers[q.calls%len(q.answers)]
	q.calls++
	if err != nil {
		return waitroom.Batch{}, err
	}
	return waitroom.Batch{Rooms: []waitroom.RoomBatch{{Room: "r", Admitted: make([]waitroom.Admission, 3)}}}, nil
}

// fakeClock advances only when slept on.
type fakeClock struct {
	now    time.Time
	sleeps []time.Duration
}

func (c *fakeClock) Now() time.Time { return c.now }
func (c *fakeClock) Sleep(_ context.Context, d time.Duration) error {
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return nil
}

func TestAdmitterSpacingAndJitter(t *testing.T) {
	for _, u := range []float64{0, 0.5, 0.999} {
		clock := &fakeClock{now: time.Unix(0, 0)}
		q := &fakeQueue{answers: []error{nil}}
		a := &waitroom.Admitter{Queue: q, Interval: 100 * time.Millisecond, Batches: 10, Now: clock.Now, Sleep: clock.Sleep, Rand: func() float64 { return u }}
		sum, err := a.Run(context.Background())
		// The invocation covers 10 intervals; shortened gaps fit more batches into it.
		want := int(math.Ceil(1000 / (100 * (1 - 0.2*u))))
		if err != nil || sum.Batches != want || sum.Admitted != 3*want || q.calls != want {
			t.Fatalf("u=%v: %+v %v (calls %d, want %d)", u, sum, err, q.calls, want)
		}
		if span := clock.now.Sub(time.Unix(0, 0)); span >= time.Second {
			t.Fatalf("u=%v: last batch at %v, after the 1 s the invocation covers", u, span)
		}
		for _, d := range clock.sleeps[1:] {
			// Jitter only ever shortens the gap: the budget never overflows between batches.
			if d > 100*time.Millisecond || d < 80*time.Millisecond {
				t.Fatalf("u=%v: gap %v outside [80ms, 100ms]", u, d)
			}
		}
	}
}

func TestAdmitterSurvivesFailingBatches(t *testing.T) {
	boom := waitroom.Unavailable(errors.New("boom"))
	clock := &fakeClock{now: time.Unix(0, 0)}
	q := &fakeQueue{answers: []error{boom, nil}}
	a := &waitroom.Admitter{Queue: q, Interval: time.Millisecond, Batches: 4, Now: clock.Now, Sleep: clock.Sleep, Rand: func() float64 { return 0 }}
	sum, err := a.Run(context.Background())
	if err != nil || sum.Batches != 2 || sum.Failed != 2 {
		t.Fatalf("%+v %v", sum, err)
	}
	q = &fakeQueue{answers: []error{boom}}
	a.Queue = q
	if _, err := a.Run(context.Background()); waitroom.ErrorCode(err) != waitroom.EUnavailable {
		t.Fatalf("all batches failed: %v", err)
	}
}

// scriptedQueue answers AdmitBatch with batches[i] (the last one repeats).
type scriptedQueue struct {
	waitroom.Store
	batches []waitroom.Batch
	errs    []error
	calls   int
}

func (q *scriptedQueue) AdmitBatch(context.Context) (waitroom.Batch, error) {
	i := min(q.calls, len(q.batches)-1)
	q.calls++
	if i < len(q.errs) && q.errs[i] != nil {
		return waitroom.Batch{}, q.errs[i]
	}
	return q.batches[i], nil
}

func room(waiting, tokens int64) waitroom.RoomBatch {
	return waitroom.RoomBatch{Room: "r", Waiting: waiting, ActiveTokens: tokens}
}

// Nobody waiting and no live token: the invocation stops after its first
// batch, which still counts as the heartbeat; anyone waiting or any live
// token in any room keeps the whole Batches × Interval.
func TestAdmitterIdleStopsAfterOneBatch(t *testing.T) {
	idle := map[string]waitroom.Batch{
		"no rooms":    {},
		"empty rooms": {Rooms: []waitroom.RoomBatch{room(0, 0), room(0, 0)}},
	}
	busy := map[string]waitroom.Batch{
		"someone waits":          {Rooms: []waitroom.RoomBatch{room(0, 0), room(1, 0)}},
		"a token is live":        {Rooms: []waitroom.RoomBatch{room(0, 1)}},
		"just admitted the last": {Rooms: []waitroom.RoomBatch{{Room: "r", Admitted: make([]waitroom.Admission, 1)}}},
	}
	run := func(first waitroom.Batch, errs ...error) (waitroom.RunSummary, int, *fakeClock) {
		clock := &fakeClock{now: time.Unix(0, 0)}
		q := &scriptedQueue{batches: []waitroom.Batch{first, {}}, errs: errs}
		if len(errs) > 0 {
			q.batches = []waitroom.Batch{{}, first, {}}
		}
		seen := 0
		a := &waitroom.Admitter{Queue: q, Interval: 100 * time.Millisecond, Batches: 10, Now: clock.Now, Sleep: clock.Sleep,
			Rand: func() float64 { return 0 }, OnBatch: func(waitroom.Batch) { seen++ }}
		sum, err := a.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if seen != sum.Batches || q.calls != sum.Batches+sum.Failed {
			t.Fatalf("OnBatch saw %d of %d batches (%d calls)", seen, sum.Batches, q.calls)
		}
		return sum, q.calls, clock
	}
	for name, b := range idle {
		sum, calls, clock := run(b)
		if !sum.Idle || sum.Batches != 1 || calls != 1 || clock.now != time.Unix(0, 0) {
			t.Errorf("%s: %+v after %d calls, %v: want one batch, at once", name, sum, calls, clock.now.Sub(time.Unix(0, 0)))
		}
	}
	for name, b := range busy {
		// The later batches are idle: only the first decides.
		sum, calls, clock := run(b)
		if sum.Idle || sum.Batches != 10 || calls != 10 || clock.now.Sub(time.Unix(0, 0)) != 900*time.Millisecond {
			t.Errorf("%s: %+v after %d calls, last batch at %v: want the whole invocation", name, sum, calls, clock.now.Sub(time.Unix(0, 0)))
		}
	}
	// A failed batch says nothing about the rooms: the first batch that
	// reaches the store decides.
	sum, calls, _ := run(waitroom.Batch{}, waitroom.Unavailable(errors.New("boom")))
	if !sum.Idle || sum.Batches != 1 || sum.Failed != 1 || calls != 2 {
		t.Errorf("failure, then idle: %+v after %d calls", sum, calls)
	}
}

// decidingQueue answers AdmitBatch as scriptedQueue does and keeps the
// decisions it is given.
type decidingQueue struct {
	scriptedQueue
	decided [][]waitroom.RoomDecision
	fail    error
}

func (q *decidingQueue) StoreDecisions(_ context.Context, d []waitroom.RoomDecision) error {
	q.decided = append(q.decided, d)
	return q.fail
}

// Admission's control loop is the admitter's (issue 35): every window a
// batch hands over is decided on by the law (an adaptive room) or measured
// (a fixed one), and the decisions go back to the store in one call, only
// from a batch that handed a window over. A decision that does not land
// fails no batch.
func TestAdmitterRunsTheLawOnHandedOverWindows(t *testing.T) {
	calls := func(n int, latency time.Duration, o waitroom.Outcome) waitroom.Window {
		w := waitroom.Window{End: time.UnixMilli(1_000_123), Duration: time.Second, Backlog: true}
		for i := range n {
			w.Calls.Add(waitroom.DownstreamCall{Latency: latency + time.Duration(i)*time.Millisecond, Outcome: o})
		}
		return w
	}
	calm, refused := calls(20, 200*time.Millisecond, waitroom.OutcomeOK), calls(10, 5*time.Millisecond, waitroom.OutcomeOverload)
	law := &waitroom.Adaptive{TargetP95Ms: 250, MinRatePerSec: 10, MaxRatePerSec: 200}
	remembered := waitroom.ControlState{Calm: 2, Bases: []waitroom.Sample{{At: 999_500, V: 205, P95: 221}}}
	handing := waitroom.Batch{Rooms: []waitroom.RoomBatch{
		{Room: "a", Waiting: 5, EffectiveRatePerSec: 20, Downstream: &calm, Control: remembered, Adaptive: law},
		{Room: "f", Waiting: 5, EffectiveRatePerSec: 50, Downstream: &refused, Control: remembered},
		{Room: "n", Waiting: 5, EffectiveRatePerSec: 50},
	}}
	quiet := waitroom.Batch{Rooms: []waitroom.RoomBatch{{Room: "n", Waiting: 5, EffectiveRatePerSec: 50}}}
	for _, fail := range []error{nil, waitroom.Unavailable(errors.New("boom"))} {
		clock := &fakeClock{now: time.Unix(0, 0)}
		q := &decidingQueue{scriptedQueue: scriptedQueue{batches: []waitroom.Batch{handing, quiet}}, fail: fail}
		a := &waitroom.Admitter{Queue: q, Interval: 100 * time.Millisecond, Batches: 2, Now: clock.Now, Sleep: clock.Sleep, Rand: func() float64 { return 0 }}
		sum, err := a.Run(context.Background())
		if err != nil || sum.Batches != 2 || sum.Failed != 0 {
			t.Fatalf("store failing with %v: %+v %v", fail, sum, err)
		}
		if len(q.decided) != 1 || len(q.decided[0]) != 2 {
			t.Fatalf("decisions stored: %+v, want one call of two (none from the batch that handed nothing over)", q.decided)
		}
		wantD, wantSt := law.Next(20, calm, remembered)
		if got := q.decided[0][0]; got.Room != "a" || !got.Adapted || !got.Window.Equal(calm.End) ||
			!reflect.DeepEqual(got.Decision, wantD) || !reflect.DeepEqual(got.State, wantSt) || wantD.Reason != "probe" {
			t.Fatalf("the adaptive room's decision: %+v, want the law's %+v %+v", got, wantD, wantSt)
		}
		measured := waitroom.Decision{P95: refused.Calls.Quantile(0.95), ErrorRate: 1}
		if got := q.decided[0][1]; got.Room != "f" || got.Adapted || !reflect.DeepEqual(got.Decision, measured) || !reflect.DeepEqual(got.State, remembered) {
			t.Fatalf("the fixed room's window, measured only: %+v, want %+v", got, measured)
		}
	}
}
