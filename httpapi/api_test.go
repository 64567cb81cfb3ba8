package httpapi_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/awslambda"
	"github.com/waitroom/waitroom/internal/openapitest"
	"github.com/waitroom/waitroom/internal/redistest"
)

func TestIdentitySources(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		jwt := func(sub string) *events.APIGatewayV2HTTPRequestContextAuthorizerDescription {
			return &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": sub}}}
		}
		lambdaAuth := func(v any) *events.APIGatewayV2HTTPRequestContextAuthorizerDescription {
			return &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"userId": v}}
		}
		cases := []struct {
			name       string
			auth       *events.APIGatewayV2HTTPRequestContextAuthorizerDescription
			header     string
			trust      bool
			wantStatus int
			wantCode   string
			wantUser   string
		}{
			// wantUser is the store's: the id in its source's namespace.
			{"jwt sub wins over header", jwt("jwt-user"), "header-user", true, 200, "", "a:jwt-user"},
			{"lambda authorizer", lambdaAuth("lambda-user"), "header-user", true, 200, "", "a:lambda-user"},
			{"trusted header", nil, "header-user", true, 200, "", "h:header-user"},
			{"untrusted header ignored", nil, "header-user", false, 401, "unauthenticated", ""},
			{"nobody", nil, "", true, 401, "unauthenticated", ""},
			{"empty sub falls through to header", jwt(""), "fallback-user", true, 200, "", "h:fallback-user"},
			{"too long", jwt(strings.Repeat("x", 129)), "", false, 400, "invalid_user", ""},
			{"control character", nil, "bad\x01user", true, 400, "invalid_user", ""},
			{"non-ASCII", nil, "zoë", true, 400, "invalid_user", ""},
			{"non-string lambda userId", lambdaAuth(42.0), "", false, 400, "invalid_user", ""},
			{"128 printable characters", jwt(strings.Repeat("~", 128)), "", false, 200, "", "a:" + strings.Repeat("~", 128)},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if c.wantCode == "" {
					// Each case's user is new: the place checked below is this case's.
					if st, err := h.store.Position(context.Background(), waitroom.DefaultRoom, waitroom.Unlimited(c.wantUser)); err != nil || st.Status != waitroom.NotInQueue {
						t.Fatalf("%s had a place before this case: %+v %v", c.wantUser, st, err)
					}
				}
				h.api.Config.TrustUserHeader = c.trust
				req := request("POST", "/queue/enter", c.header, nil)
				req.RequestContext.Authorizer = c.auth
				resp := h.call(req)
				if c.wantCode != "" {
					wantError(t, resp, c.wantStatus, c.wantCode)
					return
				}
				if resp.StatusCode != 200 {
					t.Fatalf("%d %s", resp.StatusCode, resp.Body)
				}
				// The identity used is the expected one: that user now has a place.
				if st, err := h.store.Position(context.Background(), waitroom.DefaultRoom, waitroom.Unlimited(c.wantUser)); err != nil || st.Status != waitroom.Waiting {
					t.Fatalf("%s has no place: %+v %v", c.wantUser, st, err)
				}
			})
		}
	})
}

func TestRooms(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		for _, bad := range []string{"", "Shoes", "-lead", "a_b", strings.Repeat("a", 65), "sale%20x"} {
			wantError(t, h.call(withRoom(request("POST", "/queue/enter", "u", nil), bad)), 400, "invalid_room")
			wantError(t, h.call(withRoom(request("GET", "/queue/position", "u", nil), bad)), 400, "invalid_room")
		}
		ok := strings.Repeat("a", 64)
		if r := h.call(withRoom(request("POST", "/queue/enter", "u", nil), ok)); r.StatusCode != 200 {
			t.Fatalf("64-character room: %d %s", r.StatusCode, r.Body)
		}
		// Rooms are independent lines.
		h.enter("a")
		r := h.call(withRoom(request("POST", "/queue/enter", "b", nil), "other"))
		if m := decode(t, r); m["position"] != 1.0 {
			t.Fatalf("first in another room: %v", m)
		}
	})
}

func TestWaitingAnswer(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		// A batch of 1 a second: no batch runs here, and admission counts as
		// stalled only after five intervals, far longer than these enters
		// take on a loaded machine.
		h := newHarness(t, engine, func(c *waitroom.Config) { c.AdmitRatePerSec, c.AdmitInterval = 1, time.Second })
		for i := 0; i < 12; i++ {
			h.enter(string(rune('a' + i)))
		}
		r := h.enter("l") // 12th: ceil(12/1) = 12 s; asked back at its turn, 12 s + 750 ms
		m := decode(t, r)
		if m["status"] != "WAITING" || m["position"] != 12.0 || m["estimatedWaitSeconds"] != 12.0 || m["pollAfterMs"] != 12750.0 {
			t.Fatalf("waiting answer: %s", r.Body)
		}
		if m := decode(t, h.position("a")); m["estimatedWaitSeconds"] != 0.0 || m["position"] != 1.0 {
			t.Fatalf("first in line, within one batch: %v", m)
		}
		m = decode(t, h.position("nobody"))
		if m["status"] != "NOT_IN_QUEUE" || m["pollAfterMs"] != nil {
			t.Fatalf("not in queue: %v", m)
		}
		if _, present := m["pollAfterMs"]; !present {
			t.Fatal("pollAfterMs must be present (null)")
		}
	})
}

func TestQueueFullAnswer(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine, func(c *waitroom.Config) { c.QueueCapacity = 2 })
		h.enter("a")
		h.enter("b")
		r := h.enter("c")
		wantError(t, r, 429, "queue_full")
		if r.Headers["Retry-After"] == "" {
			t.Fatal("429 needs Retry-After")
		}
		if m := decode(t, h.enter("a")); m["position"] != 1.0 {
			t.Fatalf("those in line keep their place: %v", m)
		}
	})
}

func TestJourneyAndTokenRules(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		tokens := h.admitted(t, "alice", "bob")

		// READY: enter and position give the same token.
		for _, r := range []events.APIGatewayV2HTTPResponse{h.enter("alice"), h.position("alice")} {
			m := decode(t, r)
			if m["status"] != "READY" || m["entryToken"] != tokens["alice"] || m["pollAfterMs"] != nil {
				t.Fatalf("ready answer: %s", r.Body)
			}
			exp, err := time.Parse(time.RFC3339, m["expiresAt"].(string))
			if err != nil || time.Until(exp) < 290*time.Second || time.Until(exp) > 301*time.Second {
				t.Fatalf("expiresAt %v (%v)", m["expiresAt"], err)
			}
		}

		// Refused tokens never reach the downstream.
		wantError(t, h.order("alice", "", "", "{}"), 403, "entry_token_invalid")
		wantError(t, h.order("alice", "garbage", "", "{}"), 403, "entry_token_invalid")
		wantError(t, h.order("alice", "default.AAAAAAAAAAAAAAAAAAAAAA", "", "{}"), 403, "entry_token_invalid")
		wantError(t, h.order("alice", tokens["bob"], "", "{}"), 403, "entry_token_invalid")
		wantError(t, h.order("alice", tokens["alice"], strings.Repeat("k", 129), "{}"), 400, "invalid_idempotency_key")
		wantError(t, h.order("", tokens["alice"], "", "{}"), 401, "unauthenticated")
		if n := h.down.calls.Load(); n != 0 {
			t.Fatalf("downstream called %d times for refused requests", n)
		}

		// Not the user's fault: the token survives a downstream refusal.
		h.down.status.Store(http.StatusConflict)
		if r := h.order("alice", tokens["alice"], "k1", `{"sku":"tv"}`); r.StatusCode != 409 || !strings.Contains(r.Body, "orderId") {
			t.Fatalf("downstream status and body are passed through: %d %s", r.StatusCode, r.Body)
		}
		// Success: passed through, the body and identity reach the downstream.
		h.down.status.Store(http.StatusCreated)
		r := h.order("alice", tokens["alice"], "k1", `{"sku":"tv"}`)
		if r.StatusCode != 201 {
			t.Fatalf("order: %d %s", r.StatusCode, r.Body)
		}
		last := h.down.last.Load()
		if *h.down.body.Load() != `{"sku":"tv"}` || last.Header.Get("X-User-Id") != "alice" || last.Header.Get("Idempotency-Key") != "k1" {
			t.Fatalf("forwarded body %q, user %q, key %q", *h.down.body.Load(), last.Header.Get("X-User-Id"), last.Header.Get("Idempotency-Key"))
		}
		calls := h.down.calls.Load()

		// The same key replays the stored answer without a downstream call.
		replay := h.order("alice", tokens["alice"], "k1", `{"sku":"tv"}`)
		if replay.StatusCode != 201 || replay.Body != r.Body || h.down.calls.Load() != calls {
			t.Fatalf("replay: %d %s (downstream calls %d → %d)", replay.StatusCode, replay.Body, calls, h.down.calls.Load())
		}
		// The token is consumed: a new key is refused, and the place is free.
		wantError(t, h.order("alice", tokens["alice"], "k2", "{}"), 403, "entry_token_invalid")
		wantError(t, h.order("alice", tokens["alice"], "", "{}"), 403, "entry_token_invalid")
		if m := decode(t, h.position("alice")); m["status"] != "NOT_IN_QUEUE" {
			t.Fatalf("after the order: %v", m)
		}
		// Bob's token is untouched by all of this.
		if m := decode(t, h.position("bob")); m["entryToken"] != tokens["bob"] {
			t.Fatalf("bob: %v", m)
		}
	})
}

func TestUpstreamFailuresKeepTheToken(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine, func(c *waitroom.Config) { c.OrderTimeout = 300 * time.Millisecond })
		tokens := h.admitted(t, "carol")

		h.down.delay.Store(int64(2 * time.Second))
		start := time.Now()
		wantError(t, h.order("carol", tokens["carol"], "", "{}"), 504, "order_timeout")
		if d := time.Since(start); d > time.Second {
			t.Fatalf("timeout took %v", d)
		}
		h.down.delay.Store(0)

		dead := *h.api
		dead.Orders = awslambdaOrders(t, "http://127.0.0.1:1")
		req := orderReq("carol", tokens["carol"])
		wantError(t, h.checked(req, dead.Order(context.Background(), req)), 502, "order_upstream")

		if r := h.order("carol", tokens["carol"], "", "{}"); r.StatusCode != 201 {
			t.Fatalf("token kept after 502/504, and the lock released: %d %s", r.StatusCode, r.Body)
		}
	})
}

// 16 concurrent orders with one token: exactly one reaches the downstream.
func TestConcurrentOrdersOneToken(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		tokens := h.admitted(t, "dave")
		h.down.delay.Store(int64(200 * time.Millisecond))
		const n = 16
		var wg sync.WaitGroup
		statuses := make(chan int, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses <- h.order("dave", tokens["dave"], "", "{}").StatusCode
			}()
		}
		wg.Wait()
		close(statuses)
		count := map[int]int{}
		for s := range statuses {
			count[s]++
		}
		if h.down.calls.Load() != 1 || count[201] != 1 || count[409]+count[403] != n-1 {
			t.Fatalf("downstream calls %d, statuses %v", h.down.calls.Load(), count)
		}
	})
}

func TestBase64BodyIsDecoded(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		tokens := h.admitted(t, "erin")
		req := orderReq("erin", tokens["erin"])
		req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(`{"sku":"hat"}`)), true
		if r := h.call(req); r.StatusCode != 201 || *h.down.body.Load() != `{"sku":"hat"}` {
			t.Fatalf("%d, downstream saw %q", r.StatusCode, *h.down.body.Load())
		}
		req.Body = "%%%"
		wantError(t, h.call(req), 400, "invalid_request")
	})
}

func TestRoutingAndMalformedEvents(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		wantError(t, h.call(request("GET", "/nope", "u", nil)), 404, "not_found")
		r := h.call(request("GET", "/queue/enter", "u", nil))
		wantError(t, r, 405, "method_not_allowed")
		if r.Headers["Allow"] != "POST" {
			t.Fatalf("Allow %q", r.Headers["Allow"])
		}
		// The enter function, as API Gateway routes POST /queue/enter to it.
		fn := awslambda.HTTPFunction(h.api.Enter)
		routed := request("POST", "/queue/enter", "", nil)
		for _, raw := range []string{`not json`, `[]`, `{"requestContext": 7}`, `"string"`} {
			resp, err := fn(context.Background(), json.RawMessage(raw))
			if err != nil {
				t.Fatalf("%s: the function must answer, not fail: %v", raw, err)
			}
			wantError(t, h.checked(routed, resp), 400, "invalid_request")
		}
		// An empty event has no identity.
		resp, err := fn(context.Background(), json.RawMessage(`{}`))
		if err != nil {
			t.Fatalf("an empty event: the function must answer, not fail: %v", err)
		}
		wantError(t, h.checked(routed, resp), 401, "unauthenticated")
	})
}

func orderReq(user, token string) events.APIGatewayV2HTTPRequest {
	req := request("POST", "/orders", user, map[string]string{"x-entry-token": token})
	req.Body = "{}"
	return req
}

// The contract check that every test above goes through bites: a real
// answer passes, the same answer with an undocumented field or status fails.
func TestContractCheckBites(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		req := request("POST", "/queue/enter", "alice", nil)
		resp := h.call(req)
		if err := openapitest.Check(exchange(req, resp)); err != nil {
			t.Fatalf("a real answer: %v", err)
		}
		extra := resp
		extra.Body = strings.Replace(resp.Body, "{", `{"queue":"default",`, 1)
		gone := resp
		gone.StatusCode = http.StatusAccepted
		for name, r := range map[string]events.APIGatewayV2HTTPResponse{"undocumented field": extra, "undocumented status": gone} {
			if err := openapitest.Check(exchange(req, r)); err == nil {
				t.Errorf("%s accepted: %d %s", name, r.StatusCode, r.Body)
			}
		}
	})
}
