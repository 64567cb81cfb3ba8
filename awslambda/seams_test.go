package awslambda_test

import (
	"strings"
	"testing"

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
