package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/linetest"
	"github.com/waitroom/waitroom/internal/redistest"
)

func ticketKeys(t *testing.T, fill byte) waitroom.TicketKeys {
	t.Helper()
	k, err := waitroom.ParseTicketKeys(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{fill}, 32)))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func anonymousHarness(t *testing.T, engine redistest.Engine, mutate ...func(*waitroom.Config)) *harness {
	t.Helper()
	h := newHarness(t, engine, append([]func(*waitroom.Config){func(c *waitroom.Config) {
		c.Visitor.Anonymous, c.Visitor.Tickets, c.Visitor.TicketTTL = true, ticketKeys(t, 1), time.Hour
	}}, mutate...)...)
	return h
}

// ticketOf returns the body's ticket and checks that the cookie carries the same.
func ticketOfAnswer(t *testing.T, r events.APIGatewayV2HTTPResponse) string {
	t.Helper()
	tk, _ := decode(t, r)["ticket"].(string)
	if tk == "" || len(r.Cookies) != 1 {
		t.Fatalf("no ticket in %d %s, cookies %v", r.StatusCode, r.Body, r.Cookies)
	}
	c, err := http.ParseSetCookie(r.Cookies[0])
	if err != nil || c.Name != waitroom.TicketCookie || c.Value != tk || !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteLaxMode || c.Path != "/" {
		t.Fatalf("cookie %q (%v) does not carry the ticket with HttpOnly; Secure; SameSite=Lax; Path=/", r.Cookies[0], err)
	}
	return tk
}

func withCookie(req events.APIGatewayV2HTTPRequest, ticket string) events.APIGatewayV2HTTPRequest {
	req.Cookies = []string{"other=1", waitroom.TicketCookie + "=" + ticket}
	return req
}

func TestAnonymousVisitorKeepsPlaceWithTicket(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := anonymousHarness(t, engine)
		clock := time.Now()
		h.api.Now = func() time.Time { return clock }
		if r := h.enter("someone-else"); r.StatusCode != 200 {
			t.Fatal(r.Body)
		}
		first := h.call(request("POST", "/queue/enter", "", nil))
		if first.StatusCode != 200 || decode(t, first)["position"] != 2.0 {
			t.Fatalf("anonymous enter: %d %s", first.StatusCode, first.Body)
		}
		tk := ticketOfAnswer(t, first)
		vt, err := h.api.Config.Visitor.Tickets.Verify(tk, clock)
		visitor := vt.Visitor
		if err != nil || !strings.HasPrefix(visitor, "v-") || len(visitor) != 24 {
			t.Fatalf("visitor %q, %v", visitor, err)
		}

		// The cookie and the header both identify the visitor; every answer renews the ticket.
		clock = clock.Add(10 * time.Minute)
		byCookie := h.call(withCookie(request("GET", "/queue/position", "", nil), tk))
		renewed := ticketOfAnswer(t, byCookie)
		if byCookie.StatusCode != 200 || decode(t, byCookie)["position"] != 2.0 || renewed == tk {
			t.Fatalf("position by cookie: %s (renewed: %v)", byCookie.Body, renewed != tk)
		}
		clock = clock.Add(55 * time.Minute) // the first ticket has expired, the renewed one not
		if r := h.call(request("GET", "/queue/position", "", map[string]string{"x-queue-ticket": tk})); r.StatusCode != 401 {
			t.Fatalf("expired ticket: %d %s", r.StatusCode, r.Body)
		}
		again := h.call(request("POST", "/queue/enter", "", map[string]string{"x-queue-ticket": renewed}))
		if again.StatusCode != 200 || decode(t, again)["position"] != 2.0 {
			t.Fatalf("re-enter by header: %s", again.Body)
		}
		if n := linetest.Length(t, h.redis.Client(), "default"); n != 2 {
			t.Fatalf("line holds %d, want 2: a reload must not take a second place", n)
		}
	})
}

func TestInvalidTicketsCreateNothing(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := anonymousHarness(t, engine)
		good := ticketOfAnswer(t, h.call(request("POST", "/queue/enter", "", nil)))
		other, _ := ticketKeys(t, 9).Sign("v-forged", time.Now(), time.Now().Add(time.Hour), waitroom.Spot{})
		expired, _ := h.cfg.Visitor.Tickets.Sign("v-late", time.Now(), time.Now().Add(-time.Second), waitroom.Spot{})
		kid, _, _ := strings.Cut(good, ".")
		altered := []byte(good)
		altered[len(kid)+3] ^= 1
		rdb := h.redis.Client()
		before, _ := rdb.DBSize(context.Background()).Result()
		for name, tk := range map[string]string{
			"forged (other key, same key id)": kid + "." + strings.SplitN(other, ".", 2)[1],
			"unknown key id":                  other,
			"altered":                         string(altered),
			"expired":                         expired,
			"garbage":                         "x",
		} {
			for _, req := range []events.APIGatewayV2HTTPRequest{
				withCookie(request("POST", "/queue/enter", "", nil), tk),
				request("POST", "/queue/enter", "", map[string]string{"x-queue-ticket": tk}),
				withCookie(request("GET", "/queue/position", "", nil), tk),
				withCookie(request("POST", "/orders", "", map[string]string{"x-entry-token": "default.AAAAAAAAAAAAAAAAAAAAAA"}), tk),
			} {
				r := h.call(req)
				wantError(t, r, 401, "invalid_ticket")
				if len(r.Cookies) != 1 || !strings.Contains(r.Cookies[0], "Max-Age=0") {
					t.Errorf("%s: the cookie is not cleared: %v", name, r.Cookies)
				}
			}
		}
		if after, _ := rdb.DBSize(context.Background()).Result(); after != before {
			t.Errorf("keys %d → %d: an invalid ticket created something", before, after)
		}
		if n := linetest.Length(t, rdb, "default"); n != 1 {
			t.Errorf("line holds %d, want 1", n)
		}
	})
}

// JWT claims → Lambda authorizer → X-User-Id (trusted) → ticket → new visitor.
func TestIdentityOrder(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := anonymousHarness(t, engine)
		tk, _ := h.cfg.Visitor.Tickets.Sign("v-ticketed", time.Now(), time.Now().Add(time.Hour), waitroom.Spot{})
		jwt := func(req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
			req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
				JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "jwt-user"}}}
			return req
		}
		lambdaAuth := func(req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
			req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"userId": "lambda-user"}}
			return req
		}
		cases := []struct {
			name     string
			req      events.APIGatewayV2HTTPRequest
			user     string
			ticketed bool
		}{
			// The store's user is the id in its source's namespace.
			{"JWT over everything", jwt(withCookie(request("POST", "/queue/enter", "header-user", nil), "garbage")), "a:jwt-user", false},
			{"authorizer over header and ticket", lambdaAuth(withCookie(request("POST", "/queue/enter", "header-user", nil), tk)), "a:lambda-user", false},
			{"trusted header over ticket", withCookie(request("POST", "/queue/enter", "header-user", nil), tk), "h:header-user", false},
			{"ticket", withCookie(request("POST", "/queue/enter", "", nil), tk), "v-ticketed", true},
		}
		for _, c := range cases {
			who, err := h.api.Identify(c.req, waitroom.DefaultRoom)
			if err != nil || who.User != c.user || who.Ticketed() != c.ticketed {
				t.Errorf("%s: %+v, %v; want %s (ticketed %v)", c.name, who, err, c.user, c.ticketed)
			}
			r := h.call(c.req)
			if _, has := decode(t, r)["ticket"]; r.StatusCode != 200 || has != c.ticketed {
				t.Errorf("%s: %d %s (ticket expected: %v)", c.name, r.StatusCode, r.Body, c.ticketed)
			}
		}
		// Position never creates a visitor; neither does enter with anonymous visitors off.
		wantError(t, h.call(request("GET", "/queue/position", "", nil)), 401, "unauthenticated")
		h.api.Config.Visitor.Anonymous = false
		wantError(t, h.call(request("POST", "/queue/enter", "", nil)), 401, "unauthenticated")
	})
}

func TestOrderGateForwardsBuyerHeaders(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := anonymousHarness(t, engine, func(c *waitroom.Config) { c.Visitor.ForwardHeaders = []string{"X-Shop-Session"} })
		tk := ticketOfAnswer(t, h.call(request("POST", "/queue/enter", "", nil)))
		vt, _ := h.cfg.Visitor.Tickets.Verify(tk, time.Now())
		visitor := vt.Visitor
		// Admitted by number, the visitor claims its token at its next poll.
		var token string
		for token == "" {
			if _, err := h.store.AdmitBatch(context.Background()); err != nil {
				t.Fatal(err)
			}
			token, _ = decode(t, h.call(withCookie(request("GET", "/queue/position", "", nil), tk)))["entryToken"].(string)
			time.Sleep(20 * time.Millisecond)
		}
		req := withCookie(request("POST", "/orders", "", map[string]string{
			"x-entry-token": token, "idempotency-key": "k1", "authorization": "Bearer shop-jwt",
			"x-shop-session": "s-1", "x-not-listed": "no"}), tk)
		req.Body = `{"sku":"tv-55"}`
		if r := h.call(req); r.StatusCode != 201 {
			t.Fatalf("order: %d %s", r.StatusCode, r.Body)
		}
		got := h.down.last.Load().Header
		if got.Get("Authorization") != "Bearer shop-jwt" || got.Get("X-Shop-Session") != "s-1" || got.Get("X-Not-Listed") != "" || got.Get("X-User-Id") != visitor {
			t.Errorf("downstream headers %v; want Authorization, X-Shop-Session and X-User-Id %s only", got, visitor)
		}
	})
}
