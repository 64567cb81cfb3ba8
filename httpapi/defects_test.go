package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/awslambda"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/metrics"
)

// Issue 12, defect 1: the downstream took the order, then the store froze
// for longer than one store call. The gate keeps committing for the rest
// of the request's budget, so the token is consumed and never orders again.
func TestCommitOutlivesABriefStoreFreezeOnRedisServer(t *testing.T) {
	h := newHarness(t, redistest.RedisServer)
	h.api.StoreTimeout = 300 * time.Millisecond
	tokens := h.admitted(t, "u")
	freeze := func() {
		h.redis.Server.Pause()
		time.AfterFunc(time.Second, h.redis.Server.Resume)
	}
	h.down.onCall.Store(&freeze)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	first := h.checked(orderReq("u", tokens["u"]), h.api.Route(ctx, orderReq("u", tokens["u"])))
	if first.StatusCode != 201 {
		t.Fatalf("first order: %d %s", first.StatusCode, first.Body)
	}
	h.down.onCall.Store(nil)
	wantError(t, h.order("u", tokens["u"], "", "{}"), 403, "entry_token_invalid")
	if n := h.down.calls.Load(); n != 1 {
		t.Fatalf("the downstream saw %d orders, want 1", n)
	}
}

// Defect 1, the commit never lands: the order lock then lives as long as
// the token, so the token cannot pass the gate again once a lock TTL is over.
func TestUncommittedOrderKeepsTheTokenLockedOnRedisServer(t *testing.T) {
	h := newHarness(t, redistest.RedisServer)
	h.api.StoreTimeout = 200 * time.Millisecond
	tokens := h.admitted(t, "u")
	freeze := func() { h.redis.Server.Pause() }
	h.down.onCall.Store(&freeze)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if r := h.api.Route(ctx, orderReq("u", tokens["u"])); r.StatusCode != 201 {
		t.Fatalf("first order: %d %s", r.StatusCode, r.Body)
	}
	h.redis.Server.Resume()
	ttl, err := h.redis.Client().PTTL(context.Background(), "wr:{default}:lock:h:u").Result()
	if err != nil {
		t.Fatal(err)
	}
	if min := h.cfg.EntryTokenTTL - 30*time.Second; ttl < min {
		t.Fatalf("order lock expires in %v, before the token (%v): the token could order again", ttl, h.cfg.EntryTokenTTL)
	}
}

// Defect 2: the same Idempotency-Key with another body is refused with 422.
func TestIdempotencyKeyReusedWithAnotherBody(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		tokens := h.admitted(t, "u")
		if r := h.order("u", tokens["u"], "K", `{"sku":"tv"}`); r.StatusCode != 201 {
			t.Fatalf("first: %d %s", r.StatusCode, r.Body)
		}
		if r := h.order("u", tokens["u"], "K", `{"sku":"tv"}`); r.StatusCode != 201 {
			t.Fatalf("replay: %d %s", r.StatusCode, r.Body)
		}
		wantError(t, h.order("u", tokens["u"], "K", `{"sku":"laptop","qty":50}`), 422, "idempotency_key_reused")
		if n := h.down.calls.Load(); n != 1 {
			t.Fatalf("the downstream saw %d orders, want 1", n)
		}
	})
}

// Defect 3: a query that cannot be decoded is refused, never read as "no room".
func TestMalformedQueryIsRefused(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		for _, raw := range []string{"room=tv%ZZ", "room=%", "a=1;room=tv"} {
			req := request("POST", "/queue/enter", "u", nil)
			req.RawQueryString = raw
			r := h.api.Route(context.Background(), req)
			if r.StatusCode != 400 || !strings.Contains(r.Body, `"invalid_request"`) {
				t.Fatalf("%s: %d %s", raw, r.StatusCode, r.Body)
			}
		}
	})
}

// Defect 5: claims that are not strings (API Gateway has sent numbers and
// arrays) do not spoil the event when sub is a string.
func TestNonStringJWTClaims(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		fn := awslambda.HTTPFunction(h.api.Enter)
		ev := `{"version":"2.0","rawPath":"/queue/enter","requestContext":{"http":{"method":"POST","path":"/queue/enter"},
	  "authorizer":{"jwt":{"claims":{"sub":"alice","exp":1700000000,"groups":["a","b"],"email_verified":true,"nested":{"x":1}},"scopes":null}}}}`
		resp, err := fn(context.Background(), json.RawMessage(ev))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%v %d %s", err, resp.StatusCode, resp.Body)
		}
		// A sub that is not a string is still no identity.
		ev = strings.Replace(ev, `"sub":"alice"`, `"sub":42`, 1)
		resp, _ = fn(context.Background(), json.RawMessage(ev))
		if resp.StatusCode != 400 && resp.StatusCode != 401 {
			t.Fatalf("numeric sub: %d %s", resp.StatusCode, resp.Body)
		}
	})
}

// Defect 5: every order forwarded unguarded is logged and counted.
func TestFailOpenIsLoggedAndCounted(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		tokens := h.admitted(t, "u", "v")
		var logs, rec bytes.Buffer
		h.api.Log = slog.New(slog.NewJSONHandler(&logs, nil))
		h.api.Metrics = metrics.NewRecorder(&rec)
		h.api.Config.FailOpenOrders = true
		h.redis.Stop()
		for _, u := range []string{"u", "v"} {
			if r := h.order(u, tokens[u], "", "{}"); r.StatusCode != 201 {
				t.Fatalf("fail-open order: %d %s", r.StatusCode, r.Body)
			}
		}
		if n := strings.Count(logs.String(), "ORDER_GATE_FAIL_OPEN"); n != 2 {
			t.Fatalf("%d fail-open log lines, want 2:\n%s", n, logs.String())
		}
		if n := strings.Count(rec.String(), `"`+metrics.OrdersFailOpen+`":1`); n != 2 {
			t.Fatalf("%d %s records, want 2:\n%s", n, metrics.OrdersFailOpen, rec.String())
		}
		if strings.Contains(logs.String(), tokens["u"]) {
			t.Fatal("an entry token is in the log")
		}
	})
}
