package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/httpapi"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// countingStore counts the store calls a poll can make.
type countingStore struct {
	waitroom.Store
	positions, views atomic.Int64
}

func (c *countingStore) Position(ctx context.Context, room string, who waitroom.Caller) (waitroom.Standing, error) {
	c.positions.Add(1)
	return c.Store.Position(ctx, room, who)
}

func (c *countingStore) View(ctx context.Context, room string) (waitroom.View, error) {
	c.views.Add(1)
	return c.Store.View(ctx, room)
}

// placed is a waiting caller and the credential its answers gave it: a
// visitor's ticket, an account's place.
type placed struct {
	user, ticket, place string
	number              int64
}

func (p *placed) request(method, path string) events.APIGatewayV2HTTPRequest {
	req := request(method, path, p.user, nil)
	if p.ticket != "" {
		req = withCookie(req, p.ticket)
	}
	if p.place != "" {
		req.Headers["x-queue-place"] = p.place
	}
	return req
}

// keep takes the credential and number an answer gives.
func (p *placed) keep(t *testing.T, r events.APIGatewayV2HTTPResponse) map[string]any {
	t.Helper()
	body := decode(t, r)
	if tk, ok := body["ticket"].(string); ok {
		p.ticket = tk
	}
	if pl, ok := body["place"].(string); ok {
		p.place = pl
	}
	if n, ok := body["number"].(float64); ok {
		p.number = int64(n)
	}
	return body
}

// A waiting caller who carries its place (a visitor's ticket, an account's
// X-Queue-Place) is answered from the room's view: no store call but one
// reading of the view per process and ViewMaxAge, and the same position,
// wait and pollAfterMs the store would give. Its turn (the front at its
// number) goes to the store, which answers READY.
func TestWaitingPollsLeaveTheStoreAlone(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		// Batches of 3 every 10 s: the test admits one batch, and admission
		// is not stalled (no batch for five intervals) while it runs, so
		// that the view's answers and the store's are taken in one state.
		h := anonymousHarness(t, engine, func(c *waitroom.Config) { c.AdmitRatePerSec, c.AdmitInterval = 0.3, 10*time.Second })
		counted := &countingStore{Store: h.store}
		h.api.Queue = counted
		var line []*placed
		for i := range 12 {
			p := &placed{}
			if i%2 == 0 {
				p.user = fmt.Sprintf("acct-%d", i)
			}
			r := h.call(p.request("POST", "/queue/enter"))
			if body := p.keep(t, r); body["status"] != "WAITING" || p.number == 0 || (p.ticket == "") == (p.place == "") {
				t.Fatalf("enter %d: %d %s", i, r.StatusCode, r.Body)
			}
			line = append(line, p)
		}
		polls := func() {
			t.Helper()
			before, views, start := counted.positions.Load(), counted.views.Load(), time.Now()
			for _, p := range line {
				fast := p.keep(t, h.call(p.request("GET", "/queue/position")))
				slow := storeAnswer(t, h, counted, p)
				for _, f := range []string{"status", "position", "estimatedWaitSeconds", "pollAfterMs", "number"} {
					if fast[f] != slow[f] {
						t.Errorf("%s: from the view %v, from the store %v (%v / %v)", f, fast[f], slow[f], fast, slow)
					}
				}
			}
			// The store's answers by identity, and the polls within the next
			// batch (3 users), whose turn the view does not tell.
			if got, want := counted.positions.Load()-before, int64(len(line)+3); got != want {
				t.Errorf("%d store polls for %d polls with a place and %d by identity, want %d", got, len(line), len(line), want)
			}
			// At most one reading per ViewMaxAge (each poll here also asks
			// the store by identity, which takes time under -race).
			if got, most := counted.views.Load()-views, 1+int64(time.Since(start)/waitroom.ViewMaxAge); got > most {
				t.Errorf("%d readings of the view for %d polls in %v", got, len(line), time.Since(start))
			}
		}
		polls()
		// Three admitted: the view, read again after ViewMaxAge, sends their
		// polls to the store (READY) and moves everyone else up.
		if _, err := h.store.AdmitBatch(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(waitroom.ViewMaxAge + 10*time.Millisecond)
		admitted := 0
		for _, p := range line {
			if r := decode(t, h.call(p.request("GET", "/queue/position"))); r["status"] == "READY" {
				admitted++
			}
		}
		if admitted == 0 {
			t.Fatal("nobody READY after a batch")
		}
		line = line[admitted:]
		polls()
	})
}

// storeAnswer is the store's answer to p's poll, as the handlers render
// it: an account's by its identity alone, an anonymous visitor's by its
// place, which is all the store knows of it (redisstore's line.lua).
func storeAnswer(t *testing.T, h *harness, store waitroom.Store, p *placed) map[string]any {
	t.Helper()
	req := p.request("GET", "/queue/position")
	if p.user != "" {
		delete(req.Headers, "x-queue-place")
	}
	who, err := h.api.Identify(req, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Position(context.Background(), "default", httpapi.CallerIn("default", who))
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, h.api.StandingAnswer("default", st, who))
}

// An account's place is believed only from its account: another's
// X-Queue-Place is ignored, and the store answers for the caller.
func TestAnotherAccountsPlaceIsIgnored(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := anonymousHarness(t, engine)
		counted := &countingStore{Store: h.store}
		h.api.Queue = counted
		alice := &placed{user: "alice"}
		alice.keep(t, h.call(alice.request("POST", "/queue/enter")))
		if alice.place == "" {
			t.Fatal("no place for an account")
		}
		bob := &placed{user: "bob", place: alice.place}
		if r := decode(t, h.call(bob.request("GET", "/queue/position"))); r["status"] != "NOT_IN_QUEUE" || counted.positions.Load() != 1 {
			t.Errorf("bob with alice's place: %v after %d store polls", r, counted.positions.Load())
		}
	})
}

// GET /queue/line is the same bytes for everyone, cacheable for a second:
// the front is the first waiting caller's number; a closed room says so at
// once; an unknown room's 404 is cacheable too; a bad name is 400 no-store.
func TestLineIsTheSameForEveryone(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := anonymousHarness(t, engine)
		first := &placed{user: "first"}
		first.keep(t, h.call(withRoom(first.request("POST", "/queue/enter"), "sale")))
		line := func(room string, headers map[string]string) events.APIGatewayV2HTTPResponse {
			return h.call(withRoom(request("GET", "/queue/line", "", headers), room))
		}
		r := line("sale", nil)
		body := decode(t, r)
		if r.StatusCode != 200 || r.Headers["Cache-Control"] != "public, max-age=1" || body["front"] != float64(first.number) ||
			body["exact"] != true || body["status"] != "OPEN" || len(r.Cookies) != 0 {
			t.Fatalf("line: %d %v %s", r.StatusCode, r.Headers, r.Body)
		}
		if other := line("sale", map[string]string{"x-user-id": "someone", "cookie": "wr_ticket=x"}); other.Body != r.Body {
			t.Errorf("another caller's line differs: %s", other.Body)
		}
		if empty := decode(t, line("empty", nil)); empty["front"] != nil || empty["status"] != "OPEN" {
			t.Errorf("an empty room's line: %v", empty)
		}
		if bad := line("Bad_Room", nil); bad.StatusCode != 400 || bad.Headers["Cache-Control"] != "no-store" {
			t.Errorf("bad room: %d %v", bad.StatusCode, bad.Headers)
		}
		closed := anonymousHarness(t, engine, func(c *waitroom.Config) { c.OpenRooms = false })
		req := withRoom(request("GET", "/queue/line", "", nil), "nobody-made-it")
		if nf := closed.call(req); nf.StatusCode != http.StatusNotFound || nf.Headers["Cache-Control"] != "public, max-age=1" {
			t.Errorf("unknown room: %d %v %s", nf.StatusCode, nf.Headers, nf.Body)
		}
	})
}

// A failover that loses the last enters' writes loses no acknowledged
// place whose holder asks the store before the line passes its number:
// each visitor still carries its number in its ticket (an account in its
// place), and the store puts the place back at that number (here: the
// first poll, within the next batch, asks the store); polling as its
// answers say, everyone gets READY, the newcomer who took a lost number too.
func TestAnAcknowledgedPlaceSurvivesALostWrite(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := anonymousHarness(t, engine)
		var line []*placed
		for i := range 6 {
			p := &placed{}
			if i%2 == 1 {
				p.user = fmt.Sprintf("acct-%d", i)
			}
			p.keep(t, h.call(p.request("POST", "/queue/enter")))
			line = append(line, p)
		}
		// The replica never had the last two enters: the account's record is
		// gone, and the counter is back at the anonymous visitor's number.
		rdb := h.redis.Client()
		ctx := context.Background()
		bucket, field := redisstore.AccountKey("default", "h:"+line[5].user)
		rdb.HDel(ctx, bucket, field)
		rdb.HSet(ctx, "wr:{default}:settings", "next", line[4].number)
		late := &placed{}
		late.keep(t, h.call(late.request("POST", "/queue/enter")))
		line = append(line, late)
		ready := map[*placed]bool{}
		for deadline := time.Now().Add(admitWithin); len(ready) < len(line); {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d READY", len(ready), len(line))
			}
			for _, p := range line {
				if body := p.keep(t, h.call(p.request("GET", "/queue/position"))); body["status"] == "READY" {
					ready[p] = true
				} else if body["status"] != "WAITING" {
					t.Fatalf("%q: %v", p.user, body)
				}
			}
			if _, err := h.store.AdmitBatch(ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(waitroom.ViewMaxAge)
		}
	})
}

// A refresh of a place held is answered from the view as enter answers:
// the room's page with it; in a closed room, enter's refusal (403).
func TestEnterFromTheViewIsEntersAnswer(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := anonymousHarness(t, engine, func(c *waitroom.Config) { c.AdmitRatePerSec = 1 }) // batches of 1: the second waits beyond it
		ctx := context.Background()
		change := func(f func(*waitroom.Settings)) {
			t.Helper()
			if _, err := h.store.Update(ctx, "default", true, func(s waitroom.Settings) (waitroom.Settings, error) { f(&s); return s, nil }); err != nil {
				t.Fatal(err)
			}
		}
		change(func(s *waitroom.Settings) { s.Title = "The TV sale" })
		first, second := &placed{}, &placed{}
		first.keep(t, h.call(first.request("POST", "/queue/enter")))
		second.keep(t, h.call(second.request("POST", "/queue/enter")))
		counted := &countingStore{Store: h.store}
		h.api.Queue = counted
		again := second.keep(t, h.call(second.request("POST", "/queue/enter")))
		if again["status"] != "WAITING" || again["position"] != float64(2) || again["title"] != "The TV sale" || counted.positions.Load() != 0 {
			t.Errorf("a refresh from the view: %v", again)
		}
		change(func(s *waitroom.Settings) { s.Closed = true })
		time.Sleep(waitroom.ViewMaxAge)
		if r := h.call(second.request("POST", "/queue/enter")); r.StatusCode != http.StatusForbidden || decode(t, r)["title"] != "The TV sale" {
			t.Errorf("a refresh in a closed room: %d %s", r.StatusCode, r.Body)
		}
	})
}

// A caller that hangs up while the room's view is read does not cut the
// reading short for everyone else; a query that cannot be decoded is a
// 400, never another room's line.
func TestLineReadingOutlivesItsCaller(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := anonymousHarness(t, engine)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req := withRoom(request("GET", "/queue/line", "", nil), "sale")
		h.api.Route(ctx, req) // gone before it was answered
		if r := h.call(req); r.StatusCode != http.StatusOK {
			t.Errorf("the next caller within 100 ms: %d %s", r.StatusCode, r.Body)
		}
		bad := request("GET", "/queue/line", "", nil)
		bad.RawQueryString = "room=%zz"
		if r := h.call(bad); r.StatusCode != http.StatusBadRequest || decode(t, r)["error"] != "invalid_request" {
			t.Errorf("an undecodable query: %d %s", r.StatusCode, r.Body)
		}
	})
}

// A visitor's ticket keeps its number once admitted: the store keeps no
// record of the visitor but its token's, and a failover that loses the
// token lets the visitor claim its turn again with the number (redisstore's
// claim.lua). It leaves the ticket when the line is gone (NOT_IN_QUEUE).
func TestAVisitorsTicketKeepsItsNumberOnceAdmitted(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := anonymousHarness(t, engine)
		p := &placed{}
		if body := p.keep(t, h.call(p.request("POST", "/queue/enter"))); body["status"] != "WAITING" || p.number == 0 {
			t.Fatalf("enter: %v", body)
		}
		if _, err := h.store.AdmitBatch(context.Background()); err != nil {
			t.Fatal(err)
		}
		if body := p.keep(t, h.call(p.request("GET", "/queue/position"))); body["status"] != "READY" {
			t.Fatalf("after the batch: %v", body)
		}
		got, err := h.cfg.Visitor.Tickets.Verify(p.ticket, time.Now())
		if err != nil || got.Spot.Number != p.number || got.Spot.Room != "default" {
			t.Fatalf("the READY answer's ticket carries %+v (%v), want number %d", got.Spot, err, p.number)
		}
		// An account's place, too.
		a := &placed{user: "acct"}
		if body := a.keep(t, h.call(a.request("POST", "/queue/enter"))); body["status"] != "WAITING" || a.number == 0 || a.place == "" {
			t.Fatalf("the account's enter: %v", body)
		}
		if _, err := h.store.AdmitBatch(context.Background()); err != nil {
			t.Fatal(err)
		}
		if body := a.keep(t, h.call(a.request("GET", "/queue/position"))); body["status"] != "READY" {
			t.Fatalf("the account after the batch: %v", body)
		}
		spot, err := h.cfg.Visitor.Tickets.VerifyPlace(a.place, "h:acct", time.Now())
		if err != nil || spot.Number != a.number || spot.Room != "default" {
			t.Fatalf("the READY answer's place carries %+v (%v), want number %d", spot, err, a.number)
		}
	})
}

// A paused room whose tokens live 20 s tells its line to come back within
// 10 s (half the claim window), not at the far tier (60 s ± 20 %): a
// number admitted after the answer is still claimed when its holder,
// following the answer, comes back. The line tells the window, for a page
// that paces itself (claimWindowMs).
func TestAPausedRoomsPollsKeepTheClaimWindow(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine, func(c *waitroom.Config) { c.PollTiers = waitroom.PollTiers{{MinWaitSeconds: 0, PollMs: 60000}} })
		withAdmin(h, false)
		if r := h.admin("PUT", "/admin/rooms/sale", `{"ratePerSec": 1, "paused": true, "entryTokenTtlSeconds": 20}`); r.StatusCode != 200 {
			t.Fatalf("PUT: %d %s", r.StatusCode, r.Body)
		}
		for _, u := range []string{"alice", "bob"} {
			w := decode(t, h.call(withRoom(request("POST", "/queue/enter", u, nil), "sale")))
			if ms, _ := w["pollAfterMs"].(float64); w["status"] != "WAITING" || w["paused"] != true || ms < 1 || ms > 10000 {
				t.Fatalf("%s in a paused room with tokens of 20 s: %v; want pollAfterMs within 10000", u, w)
			}
		}
		w := decode(t, h.call(withRoom(request("GET", "/queue/position", "bob", nil), "sale")))
		if ms, _ := w["pollAfterMs"].(float64); ms < 1 || ms > 10000 {
			t.Fatalf("bob's poll: %v; want pollAfterMs within 10000", w)
		}
		line := decode(t, h.call(withRoom(request("GET", "/queue/line", "", nil), "sale")))
		if line["claimWindowMs"] != 20000.0 || line["paused"] != true {
			t.Fatalf("line: %v; want claimWindowMs 20000", line)
		}
	})
}
