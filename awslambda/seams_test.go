package awslambda_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
)

// Issue 19: a visitor's id is readable in its ticket ("v-…"); sent as
// X-User-Id it must not name that visitor. Each source of identity has its
// own namespace in the store.
func TestHeaderCannotClaimAVisitor(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := anonymousHarness(t, engine)
		r := h.call(request("POST", "/queue/enter", "", nil))
		ticket := ticketOfAnswer(t, r)
		visitor := strings.Split(ticket, ".")[1]
		h.collectTokens(t, 1)
		if m := decode(t, h.call(request("GET", "/queue/position", "", map[string]string{"x-queue-ticket": ticket}))); m["status"] != "READY" {
			t.Fatalf("the visitor is not READY: %v", m)
		}
		m := decode(t, h.position(visitor)) // X-User-Id: v-…
		if m["status"] != "NOT_IN_QUEUE" || m["entryToken"] != nil {
			t.Fatalf("X-User-Id %s got the visitor's answer: %v", visitor, m)
		}
	})
}

// Issue 19: a receipt names the entry of whoever entered; it never stands
// in for the identity a request proves.
func TestReceiptNeverOverridesAnIdentity(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newIntakeHarness(t, engine, waitroom.IntakeBroker, 30)
		receipt := h.accepted(t, "alice")
		h.run(t)
		r := h.call(request("GET", "/queue/position", "bob", map[string]string{"x-queue-receipt": receipt}))
		wantError(t, r, 401, "invalid_receipt")
	})
}

// visitorsFromEnv loads the visitor settings as a process would from kv.
func visitorsFromEnv(t *testing.T, kv map[string]string) func(*waitroom.Config) {
	return func(c *waitroom.Config) {
		kv["TICKET_SECRET"] = "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE="
		loaded, err := waitroom.LoadConfig(func(k string) (string, bool) { v, ok := kv[k]; return v, ok }, waitroom.LocalDefaults)
		if err != nil {
			t.Fatal(err)
		}
		c.Visitor = loaded.Visitor
	}
}

// Issue 19: a ticket is renewed only while its visitor waits or holds a
// token, and never past TICKET_MAX_AGE_SECONDS after its first issue.
func TestTicketsAreNotRenewedForever(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine, visitorsFromEnv(t, map[string]string{"TICKET_TTL_SECONDS": "60", "TICKET_MAX_AGE_SECONDS": "120"}))
		now := time.Now()
		h.api.Now = func() time.Time { return now }
		ticket := ticketOfAnswer(t, h.call(request("POST", "/queue/enter", "", nil)))
		first := now
		poll := func() events.APIGatewayV2HTTPResponse {
			return h.call(request("GET", "/queue/position", "", map[string]string{"x-queue-ticket": ticket}))
		}
		for _, at := range []time.Duration{50 * time.Second, 100 * time.Second, 115 * time.Second} {
			now = first.Add(at)
			r := poll()
			if r.StatusCode != 200 {
				t.Fatalf("at %v: %d %s", at, r.StatusCode, r.Body)
			}
			if next, _ := decode(t, r)["ticket"].(string); next != "" {
				ticket = next
			}
		}
		now = first.Add(121 * time.Second) // past the ticket's age: no ticket lives on
		if r := poll(); r.StatusCode != 401 {
			t.Fatalf("121 s after its first issue (max age 120 s) the ticket still works: %d %s", r.StatusCode, r.Body)
		}

		// A visitor that neither waits nor holds a token gets no new ticket.
		now = time.Now()
		r := h.call(request("POST", "/queue/enter", "", nil))
		ticket = ticketOfAnswer(t, r)
		h.collectTokens(t, 1)
		m := decode(t, h.call(request("GET", "/queue/position", "", map[string]string{"x-queue-ticket": ticket})))
		tokenOrder := withTicket(request("POST", "/orders", "", map[string]string{"x-entry-token": m["entryToken"].(string)}), ticket)
		tokenOrder.Body = "{}"
		if r := h.call(tokenOrder); r.StatusCode != 201 {
			t.Fatalf("order: %d %s", r.StatusCode, r.Body)
		}
		r = h.call(request("GET", "/queue/position", "", map[string]string{"x-queue-ticket": ticket}))
		if m := decode(t, r); m["status"] != "NOT_IN_QUEUE" || m["ticket"] != nil || len(r.Cookies) != 0 {
			t.Fatalf("NOT_IN_QUEUE renews the ticket: %v %v", m, r.Cookies)
		}
	})
}

func withTicket(req events.APIGatewayV2HTTPRequest, ticket string) events.APIGatewayV2HTTPRequest {
	req.Headers["x-queue-ticket"] = ticket
	return req
}

// Issue 19: an opening more than a day in the past or more than a year
// ahead is a mistake (year 9999, year 1), refused by name.
func TestOpensAtWithinReason(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		withAdmin(h, false)
		now := time.Now().UTC()
		for _, at := range []time.Time{time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
			now.Add(-25 * time.Hour), now.Add(366 * 24 * time.Hour)} {
			r := h.admin("PUT", "/admin/rooms/sale", `{"opensAt":"`+at.Format(time.RFC3339)+`"}`)
			if m := decode(t, r); r.StatusCode != 400 || m["error"] != "invalid_settings" || !strings.Contains(m["message"].(string), "opensAt") {
				t.Errorf("opensAt %v: %d %s", at, r.StatusCode, r.Body)
			}
		}
		for _, at := range []time.Time{now.Add(-23 * time.Hour), now.Add(364 * 24 * time.Hour)} {
			if r := h.admin("PUT", "/admin/rooms/sale", `{"opensAt":"`+at.Format(time.RFC3339)+`"}`); r.StatusCode != 200 {
				t.Errorf("opensAt %v: %d %s", at, r.StatusCode, r.Body)
			}
		}
	})
}
