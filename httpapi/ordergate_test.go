package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/awslambda"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/metrics"
)

// An Idempotency-Key names one user's order: another user presenting the
// same key places their own order and never sees the first user's answer.
func TestIdempotencyKeyIsPerUser(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		tokens := h.admitted(t, "alice", "bob")
		first := h.order("alice", tokens["alice"], "shared-key", `{"sku":"tv"}`)
		if first.StatusCode != 201 || decode(t, first)["user"] != "alice" {
			t.Fatalf("alice's order: %d %s", first.StatusCode, first.Body)
		}
		second := h.order("bob", tokens["bob"], "shared-key", `{"sku":"tv"}`)
		if second.StatusCode != 201 || decode(t, second)["user"] != "bob" || h.down.calls.Load() != 2 {
			t.Fatalf("bob got %d %s after %d downstream calls; want his own order", second.StatusCode, second.Body, h.down.calls.Load())
		}
	})
}

// An order releases the user's lock: admitted again later, the same user
// orders again at once instead of getting 409 for the lock's lifetime.
func TestOrderAgainAfterReadmission(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		tokens := h.admitted(t, "frank")
		if r := h.order("frank", tokens["frank"], "first", "{}"); r.StatusCode != 201 {
			t.Fatalf("first order: %d %s", r.StatusCode, r.Body)
		}
		again := h.admitted(t, "frank")
		if again["frank"] == tokens["frank"] {
			t.Fatal("readmission gave the consumed token again")
		}
		if r := h.order("frank", again["frank"], "second", "{}"); r.StatusCode != 201 {
			t.Fatalf("second order after readmission: %d %s", r.StatusCode, r.Body)
		}
	})
}

// faultyQueue is the real store with one operation broken on purpose.
type faultyQueue struct {
	waitroom.Store
	enterErr  error // Enter and Position fail with it
	panics    bool  // Enter panics
	commitErr error // CommitOrder fails with it
}

func (q *faultyQueue) Enter(ctx context.Context, room string, c waitroom.Caller) (waitroom.Standing, error) {
	if q.panics {
		panic("store bug")
	}
	if q.enterErr != nil {
		return waitroom.Standing{}, q.enterErr
	}
	return q.Store.Enter(ctx, room, c)
}

func (q *faultyQueue) Position(ctx context.Context, room string, c waitroom.Caller) (waitroom.Standing, error) {
	if q.enterErr != nil {
		return waitroom.Standing{}, q.enterErr
	}
	return q.Store.Position(ctx, room, c)
}

func (q *faultyQueue) CommitOrder(ctx context.Context, l waitroom.Lease, a waitroom.StoredAnswer) error {
	if q.commitErr != nil {
		return q.commitErr
	}
	return q.Store.CommitOrder(ctx, l, a)
}

// A store error the store did not classify (a driver's own error, a
// deadline) is the store being unavailable to the user: 503, not 500.
func TestForeignStoreErrorsAre503(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		for _, err := range []error{errors.New("i/o timeout"), context.DeadlineExceeded} {
			h.api.Queue = &faultyQueue{Store: h.store, enterErr: err}
			wantError(t, h.enter("u"), 503, "unavailable")
			wantError(t, h.position("u"), 503, "unavailable")
		}
	})
}

// The order happened downstream, so its answer reaches the user even when
// the store fails at the commit that follows.
func TestCommitFailureKeepsTheOrdersAnswer(t *testing.T) {
	t.Parallel() // waits on the failing commits; asserts answers, not timing (own store)
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		tokens := h.admitted(t, "gina")
		for _, err := range []error{errors.New("connection reset"), waitroom.Unavailable(errors.New("down"))} {
			h.api.Queue = &faultyQueue{Store: h.store, commitErr: err}
			r := h.order("gina", tokens["gina"], "", `{"sku":"hat"}`)
			if r.StatusCode != 201 || decode(t, r)["user"] != "gina" {
				t.Fatalf("commit failing with %v: %d %s", err, r.StatusCode, r.Body)
			}
			h.api.Queue = h.store
			// The token was not consumed: release the lock for the next round.
			if err := h.redis.Client().Del(context.Background(), "wr:{default}:lock:h:gina").Err(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// A panic in a handler is answered with a JSON 500 and does not take the
// process down.
func TestPanicIsA500(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		h.api.Queue = &faultyQueue{Store: h.store, panics: true}
		wantError(t, h.enter("u"), 500, "internal")
		h.api.Queue = h.store
		if r := h.enter("u"); r.StatusCode != 200 {
			t.Fatalf("after a panic: %d %s", r.StatusCode, r.Body)
		}
	})
}

// The handlers count store outages and refused tokens, the two metrics the
// alarms watch.
func TestHandlerMetrics(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		var out safeBuffer
		h.api.Metrics = metrics.NewRecorder(&out)
		tokens := h.admitted(t, "hank", "ivy")

		wantError(t, h.order("hank", "not-a-token", "", "{}"), 403, "entry_token_invalid")
		wantMetric(t, &out, metrics.TokensRejected)
		// Well-formed, but not hank's: refused by the store.
		wantError(t, h.order("hank", tokens["ivy"], "", "{}"), 403, "entry_token_invalid")
		wantMetric(t, &out, metrics.TokensRejected)

		h.redis.Stop()
		wantError(t, h.enter("ivy"), 503, "unavailable")
		wantMetric(t, &out, metrics.StoreUnavailable)
		h.redis.Restart()
	})
}

// wantMetric fails unless out holds a record of name since the last call,
// and empties out.
func wantMetric(t *testing.T, out *safeBuffer, name string) {
	t.Helper()
	text := out.String()
	found := false
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec[name] == 1.0 {
			found = true
		}
	}
	if !found {
		t.Fatalf("no %s record in %q", name, text)
	}
	out.mu.Lock()
	out.b.Reset()
	out.mu.Unlock()
}

// Polls are spread by jitter so that users told the same position do not
// come back in step; without an injected Rand the handler draws its own.
func TestPollJitter(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine, func(c *waitroom.Config) { c.AdmitRatePerSec = 10 })
		for i := 0; i < 5; i++ {
			h.enter(string(rune('a' + i)))
		}
		poll := func() float64 {
			v, _ := decode(t, h.position("e"))["pollAfterMs"].(float64)
			return v
		}
		h.api.Rand = func() float64 { return 0 }
		low := poll()
		h.api.Rand = func() float64 { return 0.999 }
		if high := poll(); high <= low {
			t.Fatalf("pollAfterMs %v at u=0 and %v at u≈1: no jitter", low, high)
		}
		h.api.Rand = nil
		seen := map[float64]bool{}
		for i := 0; i < 20; i++ {
			seen[poll()] = true
		}
		if len(seen) < 2 {
			t.Fatalf("20 polls without Rand all said %v", seen)
		}
	})
}

// The admit function returns before its invocation's deadline, so that a
// long invocation ends cleanly instead of being killed mid-batch.
func TestAdmitFunctionStopsBeforeTheDeadline(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		a := &waitroom.Admitter{Queue: h.store, Interval: 50 * time.Millisecond, Batches: 1000}
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		h.enter("keeps-admission-busy")
		dl, _ := ctx.Deadline()
		// A batch cut short by the deadline may report an error; the point is when.
		_, _ = awslambda.AdmitFunction(a, nil)(ctx, json.RawMessage(`{}`))
		if left := time.Until(dl); left <= 0 {
			t.Fatalf("returned %v after the deadline", -left)
		}
	})
}

// The order lock outlives the order it guards: a second request with the
// same token while the first is still at the order API gets 409 and never
// reaches it.
func TestLockOutlivesTheOrder(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		tokens := h.admitted(t, "judy")
		h.down.delay.Store(int64(800 * time.Millisecond))
		first := make(chan int, 1)
		go func() { first <- h.order("judy", tokens["judy"], "", "{}").StatusCode }()
		time.Sleep(400 * time.Millisecond) // the first order waits for the order API
		wantError(t, h.order("judy", tokens["judy"], "", "{}"), 409, "order_in_progress")
		if status := <-first; status != 201 || h.down.calls.Load() != 1 {
			t.Fatalf("first order %d, %d downstream calls", status, h.down.calls.Load())
		}
	})
}
