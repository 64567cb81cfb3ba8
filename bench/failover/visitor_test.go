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
// a visitor sends back the place its last answer gave (an account's
// X-Queue-Place, as the page's wr_place cookie does).
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
}

// call sends one request as user; route names it in the counts.
func (c *client) call(ctx context.Context, route, method, path, user string, hdr map[string]string) answer {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, nil)
	if err != nil {
		panic(err)
	}
	if user != "" {
		req.Header.Set("X-User-Id", user)
	}
	for k, v := range hdr {
		if v != "" {
			req.Header.Set(k, v)
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

// enter and position send place (none when empty) as X-Queue-Place.
func (c *client) enter(ctx context.Context, user, place string) answer {
	return c.call(ctx, "enter", http.MethodPost, "/queue/enter?room="+c.room, user, map[string]string{waitroom.PlaceHeader: place})
}

func (c *client) position(ctx context.Context, user, place string) answer {
	return c.call(ctx, "position", http.MethodGet, "/queue/position?room="+c.room, user, map[string]string{waitroom.PlaceHeader: place})
}

func (c *client) order(ctx context.Context, user, token, key string) answer {
	return c.call(ctx, "orders", http.MethodPost, "/orders", user, map[string]string{"X-Entry-Token": token, "Idempotency-Key": key})
}

// visitor is one person in line: what it was told, and when.
type visitor struct {
	user            string
	buyer           bool // orders only once the replica lags (see scenario.run)
	sentAt, ackedAt time.Time
	acked           bool
	enterLost       bool
	tokens          []string // distinct entry token ids it was shown READY with
	issued          int64    // when its last admission was made, the store's ms (0: unknown)
	takenBack       int      // READY, then back in line or out of it without an order
	ordered         string   // the entry token its order went through with
	orderKey        string
	place           string // the signed place its last answer gave, sent back
}

// jti is the entry token's id (its payload's jti claim).
func jti(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return token
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return token
	}
	var c struct {
		ID string `json:"jti"`
	}
	_ = json.Unmarshal(b, &c)
	return c.ID
}

// issuedAt reads when the store admitted user with token id: the
// record's issue time (expiry:issued:room.id), 0 when it cannot tell.
func issuedAt(ctx context.Context, rdb redis.UniversalClient, room, user, id string) int64 {
	for i := 0; i < 20 && ctx.Err() == nil; i++ {
		rec, err := rdb.Get(ctx, "wr:{"+room+"}:u:h:"+user).Result()
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
// can), carrying its place, order once READY, enter again when told
// NOT_IN_QUEUE before an order. It ends with an order or with ctx.
func (v *visitor) visit(ctx context.Context, c *client, rdb redis.UniversalClient, lagging <-chan struct{}, answered func()) {
	inLine, current := false, ""
	for ctx.Err() == nil && v.ordered == "" {
		var a answer
		if !inLine {
			sent := time.Now()
			if a = c.enter(ctx, v.user, v.place); a.status == http.StatusOK {
				inLine = true
				if !v.acked {
					v.acked, v.sentAt, v.ackedAt = true, sent, time.Now()
				}
			}
		} else {
			a = c.position(ctx, v.user, v.place)
		}
		if a.status != http.StatusOK {
			pause(ctx, 100*time.Millisecond)
			continue
		}
		if a.Place != "" {
			v.place = a.Place
		}
		switch a.Status {
		case "WAITING":
			if current != "" {
				v.takenBack, current = v.takenBack+1, ""
			}
		case "NOT_IN_QUEUE": // the place is gone: join again, as the page does
			v.enterLost = v.enterLost || v.acked
			if current != "" {
				v.takenBack, current = v.takenBack+1, ""
			}
			inLine = false
			continue
		case "READY":
			if id := jti(a.EntryToken); id != current {
				current, v.orderKey = id, newKey()
				if !slices.Contains(v.tokens, id) {
					v.tokens = append(v.tokens, id)
				}
				v.issued = issuedAt(ctx, rdb, c.room, v.user, id)
			}
			v.buy(ctx, c, a.EntryToken, lagging, answered)
		}
		pause(ctx, 100*time.Millisecond)
	}
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
	a := c.order(ctx, v.user, token, v.orderKey)
	if v.buyer && a.status != 0 {
		answered()
	}
	if a.status >= 200 && a.status < 300 {
		v.ordered = token
	}
}
