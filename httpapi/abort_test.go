package httpapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
)

// Issue 32: the Lambda handler's order outlives its caller's cancellation.
// The order API (a real HTTP server) takes the order as it arrives and
// answers 300 ms later; the invocation's context is cancelled in between,
// as a client that gives up cancels a request's. The gate still waits for
// the answer and consumes the token: a second attempt with the token is
// refused, and the order API saw one order. Before, the call was cut, the
// token released, and the second attempt ordered again.
func TestLambdaClientAbortMidOrderOrdersOnce(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		tokens := h.admitted(t, "alice")
		h.down.delay.Store(int64(300 * time.Millisecond))
		arrived := make(chan struct{}, 4)
		onCall := func() { arrived <- struct{}{} }
		h.down.onCall.Store(&onCall)

		ctx, abort := context.WithCancel(context.Background())
		first := make(chan int, 1)
		go func() {
			req := request("POST", "/orders", "alice", map[string]string{"x-entry-token": tokens["alice"]})
			first <- h.checked(req, h.api.Route(ctx, req)).StatusCode
		}()
		<-arrived
		abort()
		if code := <-first; code != 201 {
			t.Errorf("the order the API took, its client gone: %d, want its 201", code)
		}
		r := h.order("alice", tokens["alice"], "", `{"sku":"tv-55"}`)
		if r.StatusCode == 201 || h.down.calls.Load() != 1 {
			t.Fatalf("after an abort, the same token: %d %s; the order API took %d orders, want 1", r.StatusCode, r.Body, h.down.calls.Load())
		}
		wantError(t, r, 403, string(waitroom.ETokenInvalid))
	})
}

// The detached order still ends with the invocation (Lambda's deadline):
// an order API slower than the invocation has left is cut there, not at
// ORDER_TIMEOUT_MS, and the token is kept.
func TestDetachedOrderEndsAtTheInvocationDeadline(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine) // ORDER_TIMEOUT_MS 2 s
		tokens := h.admitted(t, "bob")
		h.down.delay.Store(int64(5 * time.Second))
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		req := request("POST", "/orders", "bob", map[string]string{"x-entry-token": tokens["bob"]})
		r := h.checked(req, h.api.Route(ctx, req))
		if took := time.Since(start); took > 1500*time.Millisecond || r.StatusCode != 504 {
			t.Fatalf("an order past the invocation's deadline: %d %s after %v, want 504 at the deadline (500 ms)", r.StatusCode, r.Body, took)
		}
	})
}
