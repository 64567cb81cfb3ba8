package waitroom_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// fakeQueue admits from a scripted list of answers; only AdmitBatch is used.
type fakeQueue struct {
	waitroom.Queue
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
