package failover

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
)

// client calls the runner's routes as a page would, noting every answer:
// an account sends back the place its last answer gave (X-Queue-Place, as
// the page's wr_place cookie does), an anonymous visitor the ticket its
// last answer gave (X-Queue-Ticket, as the wr_ticket cookie does).
type client struct {
	base, room string
	http       *http.Client
	obs        *observer
}

type answer struct {
	status      int
	Status      string `json:"status"`
	EntryToken  string `json:"entryToken"`
	Error       string `json:"error"`
	PollAfterMs *int64 `json:"pollAfterMs"`
	Place       string `json:"place"`
	Ticket      string `json:"ticket"`
	Number      int64  `json:"number"`
	Position    int64  `json:"position"`
}

// call sends one request as v (its identity, place or ticket, and hdr);
// route names it in the counts.
func (c *client) call(ctx context.Context, route, method, path string, v *visitor, hdr map[string]string) answer {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, nil)
	if err != nil {
		panic(err)
	}
	for k, val := range v.headers() {
		req.Header.Set(k, val)
	}
	for k, val := range hdr {
		if val != "" {
			req.Header.Set(k, val)
		}
	}
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			c.obs.note(route, 0, nil, err, time.Since(start))
		}
		return answer{}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	c.obs.note(route, resp.StatusCode, resp.Header, nil, time.Since(start))
	a := answer{status: resp.StatusCode}
	_ = json.Unmarshal(body, &a)
	return a
}

// headers are what v's page sends on every call: an account its user and
// place, an anonymous visitor its ticket (none before its first answer).
func (v *visitor) headers() map[string]string {
	h := map[string]string{}
	switch {
	case v.anon && v.ticket != "":
		h[waitroom.TicketHeader] = v.ticket
	case !v.anon:
		h["X-User-Id"] = v.user
		if v.place != "" {
			h[waitroom.PlaceHeader] = v.place
		}
	}
	return h
}

func (c *client) enter(ctx context.Context, v *visitor) answer {
	return c.call(ctx, "enter", http.MethodPost, "/queue/enter?room="+c.room, v, nil)
}

func (c *client) position(ctx context.Context, v *visitor) answer {
	return c.call(ctx, "position", http.MethodGet, "/queue/position?room="+c.room, v, nil)
}

func (c *client) order(ctx context.Context, v *visitor, token, key string) answer {
	return c.call(ctx, "orders", http.MethodPost, "/orders", v, map[string]string{"X-Entry-Token": token, "Idempotency-Key": key})
}

// visitor is one person in line: what it was told, and when.
type visitor struct {
	user            string // an account's X-User-Id; an anonymous visitor's v-… id once an entry token names it
	anon            bool   // no X-User-Id: its place is its ticket
	buyer           bool   // orders only once the replica lags (see scenario.run)
	sentAt, ackedAt time.Time
	acked           bool
	number          int64    // the number of its first WAITING answer after the ack (0: none yet)
	lost            string   // how its acknowledged enter was lost ("": it was not; see lose)
	tokens          []string // distinct entry token ids it was shown READY with
	issued          int64    // when its last admission was made, the store's ms (0: unknown)
	takenBack       int      // READY, then back in line or out of it without an order
	ordered         string   // the entry token its order went through with
	orderKey        string
	place           string      // an account's signed place its last answer gave, sent back
	ticket          string      // an anonymous visitor's ticket its last answer gave, sent back
	last, prev      answer      // its last two 200 answers to enter or position
	orders          map[int]int // its order requests by the status answered (0: none)
}

// kind names the visitor's kind in the figures and the log.
func (v *visitor) kind() string {
	if v.anon {
		return "anonymous"
	}
	return "account"
}

// storeUser is the user the store keys the visitor's records by: an
// account's header id in its namespace, an anonymous visitor's id.
func (v *visitor) storeUser() string {
	if v.anon {
		return v.user
	}
	return "h:" + v.user
}

// lose notes the first way its acknowledged enter was lost, the same for
// both kinds: told NOT_IN_QUEUE, sent to the back (a later number than
// its place's), or never admitted (see finish).
func (v *visitor) lose(how string) {
	if v.acked && v.lost == "" && v.ordered == "" {
		v.lost = fmt.Sprintf("%s; told before: %s", how, v.prev.told())
	}
}

// told is an answer in short: status, number, position, token id.
func (a answer) told() string {
	id, _ := claims(a.EntryToken)
	return fmt.Sprintf("%s number %d position %d token %q", a.Status, a.Number, a.Position, id)
}

// finish, once the traffic is over: an acknowledged visitor never shown
// an entry token was never admitted.
func (v *visitor) finish() {
	if len(v.tokens) == 0 {
		v.prev = v.last
		v.lose("never admitted")
	}
}

// unordered is how a visitor shown an entry token never ordered with it
// ("": it ordered, or was never shown one): its order requests by status.
func (v *visitor) unordered() string {
	if len(v.tokens) == 0 || v.ordered != "" {
		return ""
	}
	return fmt.Sprintf("shown %d token(s), never ordered; its orders answered (status: count) %v", len(v.tokens), v.orders)
}

// claims are the entry token's id and subject (its payload's jti and sub).
func claims(token string) (id, sub string) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return token, ""
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return token, ""
	}
	var c struct {
		ID  string `json:"jti"`
		Sub string `json:"sub"`
	}
	_ = json.Unmarshal(b, &c)
	return c.ID, c.Sub
}

// issuedAt reads when the store admitted user (the store's key) with
// token id: the record's issue time (expiry:issued:room.id), 0 when it
// cannot tell.
func issuedAt(ctx context.Context, rdb redis.UniversalClient, room, user, id string) int64 {
	for i := 0; i < 20 && ctx.Err() == nil; i++ {
		rec, err := rdb.Get(ctx, "wr:{"+room+"}:u:"+user).Result()
		if err == nil {
			parts := strings.SplitN(rec, ":", 3)
			if len(parts) == 3 && strings.HasSuffix(parts[2], "."+id) {
				n, _ := strconv.ParseInt(parts[1], 10, 64)
				return n
			}
			return 0
		}
		if err == redis.Nil {
			return 0
		}
		time.Sleep(50 * time.Millisecond)
	}
	return 0
}

// pause sleeps about d (±20%), false when ctx ends first.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(time.Duration(float64(d) * (0.8 + 0.4*rand.Float64())))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// sleep sleeps d, false when ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func newKey() string { return fmt.Sprintf("k-%016x", rand.Uint64()) }

// visit is the visitor's page: enter until acknowledged, poll as told
// (every ~100 ms here, so that a lost place's holder asks as soon as it
// can), carrying its place or ticket, order once READY, enter again when
// told NOT_IN_QUEUE before an order. It ends with an order or with ctx.
func (v *visitor) visit(ctx context.Context, c *client, rdb redis.UniversalClient, lagging <-chan struct{}, answered func()) {
	inLine, current := false, ""
	for ctx.Err() == nil && v.ordered == "" {
		var a answer
		if !inLine {
			sent := time.Now()
			if a = c.enter(ctx, v); a.status == http.StatusOK {
				inLine = true
				if !v.acked {
					v.acked, v.sentAt, v.ackedAt = true, sent, time.Now()
				}
			}
		} else {
			a = c.position(ctx, v)
		}
		if a.status != http.StatusOK {
			pause(ctx, 100*time.Millisecond)
			continue
		}
		v.note(a)
		switch a.Status {
		case "WAITING":
			if current != "" {
				v.takenBack, current = v.takenBack+1, ""
			}
		case "NOT_IN_QUEUE": // the place is gone: join again, as the page does
			if v.lost == "" {
				v.lose("told NOT_IN_QUEUE (the store then: " + roomState(ctx, rdb, c.room, v.prev.Number) + ")")
			}
			if current != "" {
				v.takenBack, current = v.takenBack+1, ""
			}
			inLine = false
			continue
		case "READY":
			current = v.ready(ctx, c, rdb, a, current)
			v.buy(ctx, c, a.EntryToken, lagging, answered)
		}
		pause(ctx, 100*time.Millisecond)
	}
}

// note keeps what an answer renews (the place, the ticket) and its
// number: a WAITING number later than the place's first is the back.
func (v *visitor) note(a answer) {
	v.prev, v.last = v.last, a
	if a.Place != "" {
		v.place = a.Place
	}
	if a.Ticket != "" {
		v.ticket = a.Ticket
	}
	if a.Status != "WAITING" || a.Number == 0 {
		return
	}
	if v.number == 0 {
		v.number = a.Number
	} else if a.Number > v.number {
		v.lose(fmt.Sprintf("sent to the back (number %d, then %d)", v.number, a.Number))
	}
}

// ready notes a READY answer's token (a new one: its admission time) and
// returns its id. A holder of a number (either kind) is admitted when a
// batch passes it and claims its token a call later: its admission time
// is its batch's; one admitted at its enter (no number yet), its token's.
func (v *visitor) ready(ctx context.Context, c *client, rdb redis.UniversalClient, a answer, current string) string {
	id, sub := claims(a.EntryToken)
	if v.anon && sub != "" {
		v.user = sub
	}
	if id != current {
		v.orderKey = newKey()
		if !slices.Contains(v.tokens, id) {
			v.tokens = append(v.tokens, id)
		}
		v.issued = 0
		if v.number > 0 {
			v.issued = batchAt(ctx, rdb, c.room, v.number)
		}
		if v.issued == 0 {
			v.issued = issuedAt(ctx, rdb, c.room, v.storeUser(), id)
		}
	}
	return id
}

// roomState is what the store holds of the line when a visitor hears its
// place is gone, for the log: the room's counter (line.lua: front, next,
// born) and the batch that would hold number n (none: 0).
func roomState(ctx context.Context, rdb redis.UniversalClient, room string, n int64) string {
	f, err := rdb.HMGet(ctx, "wr:{"+room+"}:settings", "front", "next", "born", "pending").Result()
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("front %v next %v born %v pending %v; batch of %d at %d", f[0], f[1], f[2], f[3], n, batchAt(ctx, rdb, room, n))
}

// batchAt is when admission passed the number n: the time of the batch
// that holds it (redisstore/admit.lua's batches, "first:at ms" scored by
// the batch's last number), 0 when none does. Its holder's claim's record
// says when it claimed, a poll later.
func batchAt(ctx context.Context, rdb redis.UniversalClient, room string, n int64) int64 {
	got, err := rdb.ZRangeByScore(ctx, "wr:{"+room+"}:batches", &redis.ZRangeBy{Min: strconv.FormatInt(n, 10), Max: "+inf", Count: 1}).Result()
	if err != nil || len(got) == 0 {
		return 0
	}
	first, at, ok := strings.Cut(got[0], ":")
	if f, _ := strconv.ParseInt(first, 10, 64); !ok || f > n {
		return 0
	}
	ms, _ := strconv.ParseInt(at, 10, 64)
	return ms
}

// buy places the order (a buyer first waits for the replica to lag); a
// 2xx ends the visit, anything else is retried at the next poll.
func (v *visitor) buy(ctx context.Context, c *client, token string, lagging <-chan struct{}, answered func()) {
	if v.buyer {
		select {
		case <-lagging:
		case <-ctx.Done():
			return
		}
	}
	a := c.order(ctx, v, token, v.orderKey)
	if v.orders == nil {
		v.orders = map[int]int{}
	}
	v.orders[a.status]++
	if v.buyer && a.status != 0 {
		answered()
	}
	if a.status >= 200 && a.status < 300 {
		v.ordered = token
	}
}
