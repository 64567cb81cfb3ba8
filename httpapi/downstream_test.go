package httpapi_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/orderapi"
)

// leaseRecorder is the real store, keeping the leases the gate ends.
type leaseRecorder struct {
	waitroom.Store
	mu        sync.Mutex
	committed []waitroom.Lease
	released  []waitroom.Lease
}

func (q *leaseRecorder) CommitOrder(ctx context.Context, l waitroom.Lease, a waitroom.StoredAnswer) error {
	q.mu.Lock()
	q.committed = append(q.committed, l)
	q.mu.Unlock()
	return q.Store.CommitOrder(ctx, l, a)
}

func (q *leaseRecorder) ReleaseOrder(ctx context.Context, l waitroom.Lease) error {
	q.mu.Lock()
	q.released = append(q.released, l)
	q.mu.Unlock()
	return q.Store.ReleaseOrder(ctx, l)
}

// The gate measures each order API call with its clock and classes its
// outcome, and hands both to the one script it runs after the call: the
// commit after a 2xx, the release after anything else (a timeout too).
func TestGateMeasuresTheOrderAPI(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine, func(c *waitroom.Config) { c.OrderTimeout = 300 * time.Millisecond })
		h.api.Orders = orderapi.New(h.down.srv.URL, h.cfg.OrderTimeout)
		rec := &leaseRecorder{Store: h.api.Queue}
		h.api.Queue = rec
		for _, c := range []struct {
			status   int
			delay    time.Duration
			want     waitroom.Outcome
			commit   bool
			answered int
		}{
			{http.StatusCreated, 100 * time.Millisecond, waitroom.OutcomeOK, true, 201},
			{http.StatusConflict, 0, waitroom.OutcomeNone, false, 409}, // refused: in no measure (issue 32)
			{http.StatusTooManyRequests, 0, waitroom.OutcomeOverload, false, 429},
			{http.StatusServiceUnavailable, 0, waitroom.OutcomeOverload, false, 503},
			{http.StatusCreated, time.Second, waitroom.OutcomeTimeout, false, 504},
		} {
			h.down.status.Store(int64(c.status))
			h.down.delay.Store(int64(c.delay))
			user := "u" + http.StatusText(c.status)[:3] + c.delay.String()
			tokens := h.admitted(t, user)
			r := h.order(user, tokens[user], "", "{}")
			if r.StatusCode != c.answered {
				t.Fatalf("%d after %v: answered %d %s", c.status, c.delay, r.StatusCode, r.Body)
			}
			rec.mu.Lock()
			ended := rec.released
			if c.commit {
				ended = rec.committed
			}
			got := ended[len(ended)-1].Downstream
			rec.committed, rec.released = nil, nil
			rec.mu.Unlock()
			limit := min(c.delay, h.cfg.OrderTimeout)
			if got.Outcome != c.want || got.Latency < limit || got.Latency > limit+2*time.Second {
				t.Errorf("%d after %v: recorded %+v, want outcome %d and a latency from %v", c.status, c.delay, got, c.want, limit)
			}
		}
	})
}

// A caller who hangs up on its order says nothing of the order API: the
// gate never records its call as the API's timeout (issue 32; locally an
// aborted call was one, and two a second from one holder paused the room).
func TestGateRecordsNoTimeoutForACallersAbort(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine, func(c *waitroom.Config) { c.OrderTimeout = 5 * time.Second })
		h.api.Orders = orderapi.New(h.down.srv.URL, h.cfg.OrderTimeout)
		rec := &leaseRecorder{Store: h.api.Queue}
		h.api.Queue = rec
		h.down.status.Store(http.StatusCreated)
		h.down.delay.Store(int64(time.Second))
		tokens := h.admitted(t, "quitter")
		req := request("POST", "/orders", "quitter", map[string]string{"x-entry-token": tokens["quitter"]})
		req.Body = "{}"
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(100*time.Millisecond, cancel) // the caller hangs up, as net/http tells a handler
		h.api.Route(ctx, req)
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for _, l := range append(rec.released, rec.committed...) {
			if l.Downstream.Outcome == waitroom.OutcomeTimeout || l.Downstream.Outcome == waitroom.OutcomeOverload {
				t.Errorf("the caller's abort recorded as the API's failure: %+v", l.Downstream)
			}
		}
	})
}
