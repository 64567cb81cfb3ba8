package failover

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
)

// orderAPI is the shop's order API behind the gate: it records every
// order it takes by the X-Waitroom-Token-Id the gate forwards. With dedup
// it keeps the contract docs/API.md asks of an order API (at most one
// order per entry token: a second request for a token it already ordered
// gets the first order's answer and orders nothing); without, it orders
// whatever reaches it, so that what the gate alone guarantees shows.
type orderAPI struct {
	dedup bool
	url   string

	mu      sync.Mutex
	byToken map[string]int    // orders made per token id
	first   map[string]string // token id -> its order
	byUser  map[string]int    // orders made per X-User-Id
	replays int               // requests answered from first (dedup)
	orders  int
}

func startOrderAPI(tb testing.TB, dedup bool) *orderAPI {
	tb.Helper()
	o := &orderAPI{dedup: dedup, byToken: map[string]int{}, first: map[string]string{}, byUser: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: o}
	go func() { _ = srv.Serve(ln) }()
	tb.Cleanup(func() { _ = srv.Close() })
	o.url = "http://" + ln.Addr().String()
	return o
}

func (o *orderAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, user := r.Header.Get("X-Waitroom-Token-Id"), r.Header.Get("X-User-Id")
	if r.Method != http.MethodPost || r.URL.Path != "/orders" || token == "" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	id, seen := o.first[token]
	if seen && o.dedup {
		o.replays++
	} else {
		o.orders++
		id = fmt.Sprintf("ord-%d", o.orders)
		o.byToken[token]++
		o.byUser[user]++
		if !seen {
			o.first[token] = id
		}
	}
	o.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]string{"orderId": id})
}

// tally is what the order API went through.
type tally struct {
	Orders, Tokens, MaxPerToken, TokensTwice, UsersTwice, Replays int
}

func (o *orderAPI) tally() tally {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := tally{Orders: o.orders, Tokens: len(o.byToken), Replays: o.replays}
	for _, n := range o.byToken {
		t.MaxPerToken = max(t.MaxPerToken, n)
		if n > 1 {
			t.TokensTwice++
		}
	}
	for _, n := range o.byUser {
		if n > 1 {
			t.UsersTwice++
		}
	}
	return t
}
