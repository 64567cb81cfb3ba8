package httpapi_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/dynamotest"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/metrics"
	"github.com/waitroom/waitroom/orderrecord"
)

// forgetfulQueue is the store after a failover that lost the gate's
// writes of an order: the commit never landed on the promoted replica,
// so the token is valid again and its lock is gone.
type forgetfulQueue struct{ waitroom.Store }

func (q forgetfulQueue) CommitOrder(ctx context.Context, l waitroom.Lease, _ waitroom.StoredAnswer) error {
	return q.Store.ReleaseOrder(ctx, l)
}

// withRecord gives the harness's gate a durable record on a fresh
// dynalite, in a table of its own.
func withRecord(t *testing.T, h *harness) (*dynamotest.Server, waitroom.OrderRecord) {
	t.Helper()
	srv := dynamotest.Start(t)
	r, cfg := srv.Record(t)
	h.api.Record = r
	return srv, cfg
}

// A token buys once even when the store forgets that it bought (issue
// 33): the durable record refuses its second use with what the gate
// answers for a used token, and the order API is called once.
func TestOrderRecordRefusesASecondUseAfterAFailover(t *testing.T) {
	t.Parallel() // a dynalite of its own; asserts answers and calls, not timing (own store)
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		withRecord(t, h)
		h.api.Queue = forgetfulQueue{h.store}
		tokens := h.admitted(t, "ann")
		if r := h.order("ann", tokens["ann"], "", `{"sku":"tv"}`); r.StatusCode != 201 {
			t.Fatalf("first order: %d %s", r.StatusCode, r.Body)
		}
		wantError(t, h.order("ann", tokens["ann"], "other-key", `{"sku":"tv"}`), 403, "entry_token_invalid")
		if n := h.down.calls.Load(); n != 1 {
			t.Fatalf("the order API was called %d times for one token", n)
		}
		// Its lock was given back: the refusal holds nothing of the user's.
		wantError(t, h.order("ann", tokens["ann"], "", `{}`), 403, "entry_token_invalid")
	})
}

// Many requests with one token at once, the store forgetting each
// commit: exactly one 201, and the order API called once.
func TestOrderRecordConcurrentUsesOrderOnce(t *testing.T) {
	t.Parallel() // a dynalite of its own; asserts counts, not timing (own store)
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		withRecord(t, h)
		h.api.Queue = forgetfulQueue{h.store}
		h.down.delay.Store(int64(20 * time.Millisecond))
		token := h.admitted(t, "bo")["bo"]
		var created, gaveUp atomic.Int64
		var wg sync.WaitGroup
		for i := range 24 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for round := range 4 {
					switch r := h.order("bo", token, "k"+strconv.Itoa(i*10+round), `{}`); r.StatusCode {
					case 201:
						created.Add(1)
					case 502, 504: // a loaded machine's timeout: the token is kept, by contract
						gaveUp.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		if created.Load() != 1 || h.down.calls.Load() != 1+gaveUp.Load() {
			t.Fatalf("%d answers 201 and %d order API calls (%d given up) for one token; want 1 and 1", created.Load(), h.down.calls.Load(), gaveUp.Load())
		}
	})
}

// An Idempotency-Key replay of a completed order still replays after the
// store lost it: the record keeps the keyed order's answer. Another body
// under the key is still idempotency_key_reused; the downstream is called once.
func TestOrderRecordReplaysAfterAFailover(t *testing.T) {
	t.Parallel() // a dynalite of its own; asserts answers and calls, not timing (own store)
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		withRecord(t, h)
		h.api.Queue = forgetfulQueue{h.store}
		token := h.admitted(t, "cy")["cy"]
		first := h.order("cy", token, "key-1", `{"sku":"tv"}`)
		if first.StatusCode != 201 {
			t.Fatalf("first order: %d %s", first.StatusCode, first.Body)
		}
		again := h.order("cy", token, "key-1", `{"sku":"tv"}`)
		if again.StatusCode != 201 || again.Body != first.Body || again.Headers["Content-Type"] != first.Headers["Content-Type"] {
			t.Fatalf("replay: %d %s, want the first answer %s", again.StatusCode, again.Body, first.Body)
		}
		wantError(t, h.order("cy", token, "key-1", `{"sku":"radio"}`), 422, "idempotency_key_reused")
		if n := h.down.calls.Load(); n != 1 {
			t.Fatalf("the order API was called %d times", n)
		}
		// With the store's own copy (no failover) the replay is the store's, as before.
		h.api.Queue = h.store
		token2 := h.admitted(t, "dee")["dee"]
		one := h.order("dee", token2, "key-2", `{}`)
		if two := h.order("dee", token2, "key-2", `{}`); one.StatusCode != 201 || two.StatusCode != 201 || two.Body != one.Body {
			t.Fatalf("replay from the store: %d %s then %d %s", one.StatusCode, one.Body, two.StatusCode, two.Body)
		}
	})
}

// The record's item expires with the token (the table's TTL attribute),
// and a failed order gives the token back in the record as in the store.
func TestOrderRecordTTLIsTheTokensExpiry(t *testing.T) {
	t.Parallel() // sleeps a second; a later run only widens the difference it checks (own store)
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		_, cfg := withRecord(t, h)
		token := h.admitted(t, "eve")["eve"]
		expiresAt, err := time.Parse(time.RFC3339, decode(t, h.position("eve"))["expiresAt"].(string))
		if err != nil {
			t.Fatal(err)
		}
		h.down.status.Store(500)
		if r := h.order("eve", token, "", `{}`); r.StatusCode != 500 {
			t.Fatalf("failing order: %d %s", r.StatusCode, r.Body)
		}
		if item := dynamotest.Item(t, cfg, "default", token); item != nil {
			t.Fatalf("a failed order left the token used in the record: %v", item)
		}
		h.down.status.Store(201)
		// A second on, the token's expiry and "now + ENTRY_TOKEN_TTL_SECONDS"
		// differ: the item must carry the former.
		time.Sleep(1100 * time.Millisecond)
		if r := h.order("eve", token, "", `{}`); r.StatusCode != 201 {
			t.Fatalf("order after a failed one: %d %s", r.StatusCode, r.Body)
		}
		item := dynamotest.Item(t, cfg, "default", token)
		if item[orderrecord.AttrExpires] != strconv.FormatInt(expiresAt.Unix(), 10) {
			t.Fatalf("expiresAt %q, want the token's expiry %d", item[orderrecord.AttrExpires], expiresAt.Unix())
		}
	})
}

// The record unreachable: 503 with Retry-After, the order API not called
// and the token not lost (a later order works); with ORDER_GATE_FAIL_OPEN
// the order goes on, guarded by the store's lock and token alone.
func TestOrderRecordUnreachable(t *testing.T) {
	t.Parallel() // waits on an unreachable record; asserts answers, not timing (own store)
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		srv, _ := withRecord(t, h)
		var out safeBuffer
		h.api.Metrics = metrics.NewRecorder(&out)
		tokens := h.admitted(t, "fay", "gus")
		srv.Stop()
		r := h.order("fay", tokens["fay"], "", `{}`)
		wantError(t, r, 503, "unavailable")
		if r.Headers["Retry-After"] == "" || h.down.calls.Load() != 0 {
			t.Fatalf("Retry-After %q, order API calls %d", r.Headers["Retry-After"], h.down.calls.Load())
		}
		wantMetric(t, &out, metrics.StoreUnavailable)
		withRecord(t, h) // the record is back
		if r := h.order("fay", tokens["fay"], "", `{}`); r.StatusCode != 201 {
			t.Fatalf("the token after the outage: %d %s", r.StatusCode, r.Body)
		}

		down := dynamotest.Start(t)
		rec, _ := down.Record(t)
		h.api.Record = rec
		down.Stop()
		h.api.Config.FailOpenOrders = true
		if r := h.order("gus", tokens["gus"], "", `{}`); r.StatusCode != 201 {
			t.Fatalf("fail open: %d %s", r.StatusCode, r.Body)
		}
		wantMetric(t, &out, metrics.OrdersFailOpen)
		wantError(t, h.order("gus", tokens["gus"], "", `{}`), 403, "entry_token_invalid")
	})
}
