package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/envconfig"
	"github.com/waitroom/waitroom/internal/linetest"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
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
		h.admitNumbers(t, 1)
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
		loaded, err := envconfig.Load(func(k string) (string, bool) { v, ok := kv[k]; return v, ok }, envconfig.Local)
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
		h.admitNumbers(t, 1)
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

// Issue 19: one client cannot become a crowd. Enters without a ticket from
// one source address make new visitors only as fast as VISITOR_RATE_PER_SEC
// (default 1) past VISITOR_BURST (default 10): then 429 with Retry-After and
// nothing created. An IPv6 address counts by its /64.
func TestOneClientCannotMintACrowd(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine, visitorsFromEnv(t, map[string]string{}))
		mint := func(ip string) eventResp {
			return h.call(withSource(ip, request("POST", "/queue/enter", "", nil)))
		}
		created, start := 0, time.Now()
		for i := 0; i < 320; i++ {
			r := mint("198.51.100.7")
			switch r.StatusCode {
			case 200:
				created++
			case 429:
				if m := decode(t, r); m["error"] != "rate_limited" || r.Headers["Retry-After"] == "" || len(r.Cookies) != 0 {
					t.Fatalf("refused: %v %v %v", m, r.Headers, r.Cookies)
				}
			default:
				t.Fatalf("enter %d: %d %s", i, r.StatusCode, r.Body)
			}
		}
		// What the bucket refilled while the enters ran (seconds on a busy machine).
		refilled := int(waitroom.DefaultVisitorRatePerSec*time.Since(start).Seconds()) + 1
		if created < waitroom.DefaultVisitorBurst || created > waitroom.DefaultVisitorBurst+refilled {
			t.Fatalf("one address made %d visitors from 320 enters; want the burst of %d and at most the %d refilled meanwhile", created, waitroom.DefaultVisitorBurst, refilled)
		}
		if n := linetest.Length(t, h.redis.Client(), "default"); n != int64(created) {
			t.Fatalf("%d places for %d visitors made", n, created)
		}
		for i := 0; i < 3; i++ { // the same /64
			if r := mint(fmt.Sprintf("2001:db8:0:7::%d", i+1)); i < 2 && r.StatusCode != 200 {
				t.Fatalf("a fresh /64: %d %s", r.StatusCode, r.Body)
			}
		}
		for i := 0; i < waitroom.DefaultVisitorBurst; i++ {
			mint("2001:db8:0:7::a")
		}
		if r := mint("2001:db8:0:7:ffff::1"); r.StatusCode != 429 {
			t.Fatalf("another address of the same /64 makes a visitor: %d %s", r.StatusCode, r.Body)
		}
		if r := mint("2001:db8:0:8::1"); r.StatusCode != 200 {
			t.Fatalf("another /64: %d %s", r.StatusCode, r.Body)
		}
	})
}

// Issue 19: the broker's path is limited like the direct one: the limiter
// and the visitor bucket at accept, and with OPEN_ROOMS=false a room nobody
// made is refused there and never written.
func TestBrokerAcceptIsLimited(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newIntakeHarness(t, engine, waitroom.IntakeBroker, 30)
		limited, start := 0, time.Now()
		for i := 0; i < 200; i++ {
			if r := h.enter("flooder"); r.StatusCode == 429 {
				limited++
			}
		}
		refilled := int(waitroom.DefaultClientRatePerSec*time.Since(start).Seconds()) + 1
		if want := 200 - waitroom.DefaultClientBurst - refilled; limited < want {
			t.Fatalf("%d of 200 broker enters by one user limited; want at least %d (the burst of %d and %d refilled)", limited, want, waitroom.DefaultClientBurst, refilled)
		}
		// Position with a receipt alone is limited as its entry's user.
		receipt := h.accepted(t, "poller")
		limited = 0
		for i := 0; i < 40; i++ {
			if r := h.receiptPosition(receipt); r.StatusCode == 429 {
				limited++
			}
		}
		if limited == 0 {
			t.Fatal("40 polls with a receipt, none limited")
		}
	})
}

func TestBrokerRefusesUnknownRooms(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newIntakeHarness(t, engine, waitroom.IntakeBroker, 30)
		h.api.Config.OpenRooms = false
		h.store = redisstore.New(h.redis.Client(), h.api.Config)
		h.api.Queue, h.api.Applied, h.consumer.Store = h.store, h.store, h.store
		wantError(t, h.call(withRoom(request("POST", "/queue/enter", "u", nil), "nobody-made")), 404, "room_not_found")
		// An entry that reaches the consumer anyway (the store was down at
		// accept) writes nothing either.
		if _, _, err := h.store.Apply(context.Background(), waitroom.Entry{Room: "nobody-made", User: "h:u", AcceptedAt: time.Now()}, time.Hour); waitroom.ErrorCode(err) != waitroom.ERoomNotFound {
			t.Fatalf("apply: %v", err)
		}
		if keys := h.redis.Client().Keys(context.Background(), "wr:{nobody-made}*").Val(); len(keys) != 0 {
			t.Fatalf("keys written for a room nobody made: %v", keys)
		}
	})
}

// Issue 19: the limiter refuses when it cannot write its bucket (the store
// is out of memory), instead of letting the call through unlimited.
func TestLimiterRefusesWhenItCannotWriteOnRedisServer(t *testing.T) {
	h := newHarness(t, redistest.RedisServer)
	h.enter("alice")
	ctx := context.Background()
	rdb := h.redis.Client()
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil { // every write that grows memory fails
		t.Fatal(err)
	}
	defer rdb.ConfigSet(ctx, "maxmemory", "0")
	r := h.call(withSource("203.0.113.9", request("GET", "/queue/position", "alice", nil)))
	if r.StatusCode == 200 {
		t.Fatalf("position with the limiter's write refused by the store: %d %s, want a refusal", r.StatusCode, r.Body)
	}
	wantError(t, r, 503, "unavailable")
}

// fromEnv loads the whole configuration as a process would from kv (with
// the harness's store), for settings a test names by their variables.
func fromEnv(t *testing.T, kv map[string]string) func(*waitroom.Config) {
	return func(c *waitroom.Config) {
		kv["REDIS_URL"], kv["TICKET_SECRET"] = c.RedisURL, "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE="
		loaded, err := envconfig.Load(func(k string) (string, bool) { v, ok := kv[k]; return v, ok }, envconfig.Local)
		if err != nil {
			t.Fatal(err)
		}
		loaded.OrderTimeout = c.OrderTimeout
		*c = loaded
	}
}

// Issue 19: behind CloudFront every visitor arrives from an edge's address.
// With ORIGIN_SECRET the functions take only requests that carry it
// (CloudFront adds it; the execute-api endpoint is off), and count each
// visitor by CloudFront-Viewer-Address, which they believe only then.
func TestBehindCloudFrontTheLimiterSeesTheViewer(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		const secret = "an-origin-secret-of-the-stack-0123"
		h := newHarness(t, engine, fromEnv(t, map[string]string{"ORIGIN_SECRET": secret}))
		edge := func(viewer string, withSecret bool) eventResp {
			hdr := map[string]string{"cloudfront-viewer-address": viewer}
			if withSecret {
				hdr["x-origin-secret"] = secret
			}
			return h.call(withSource("130.176.0.1", request("POST", "/queue/enter", "", hdr)))
		}
		if r := edge("198.51.100.1:40001", false); r.StatusCode != 403 {
			t.Fatalf("a request without the origin secret: %d %s, want 403", r.StatusCode, r.Body)
		}
		for i := 0; i < 30; i++ { // thirty visitors through one edge: none limited by the edge's address
			if r := edge(fmt.Sprintf("198.51.100.%d:4%04d", i+10, i), true); r.StatusCode != 200 {
				t.Fatalf("visitor %d through the edge: %d %s", i, r.StatusCode, r.Body)
			}
		}
		limited := 0
		for i := 0; i < 30; i++ { // one viewer minting visitors is limited as itself
			if edge("203.0.113.50:5000", true).StatusCode == 429 {
				limited++
			}
		}
		if limited < 30-waitroom.DefaultVisitorBurst-2 {
			t.Fatalf("one viewer made %d visitors of 30 through the edge", 30-limited)
		}
		if r := edge("[2001:db8::7]:443", true); r.StatusCode != 200 {
			t.Fatalf("an IPv6 viewer: %d %s", r.StatusCode, r.Body)
		}
	})
}
