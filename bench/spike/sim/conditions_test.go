package sim

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestConditionsSchedule(t *testing.T) {
	s := time.Second
	c := Conditions{Slow: []Slowdown{{Span{30 * s, 90 * s}, 2}}, Conns: []ConnChange{{50 * s, 10}, {70 * s, 15}}, Down: []Span{{100 * s, 110 * s}}}
	for _, x := range []struct {
		at       time.Duration
		factor   float64
		conns    int
		down     bool
		capacity float64
	}{
		{0, 1, 20, false, 100},
		{30 * s, 2, 20, false, 50}, // From is inside
		{50 * s, 2, 10, false, 25},
		{80 * s, 2, 15, false, 37.5},
		{90 * s, 1, 15, false, 75}, // To is outside
		{100 * s, 1, 15, true, 0},
		{110 * s, 1, 15, false, 75},
	} {
		if f, n, d, cp := c.Factor(x.at), c.Connections(20, x.at), c.IsDown(x.at), c.Capacity(20, 200*time.Millisecond, x.at); f != x.factor || n != x.conns || d != x.down || cp != x.capacity {
			t.Errorf("at %s: factor %g conns %d down %v capacity %g; want %g %d %v %g", x.at, f, n, d, cp, x.factor, x.conns, x.down, x.capacity)
		}
	}
	if got, want := c.Changes(105*s), []time.Duration{30 * s, 50 * s, 70 * s, 90 * s, 100 * s}; !slices.Equal(got, want) {
		t.Errorf("changes %v, want %v (those before the end, in order)", got, want)
	}
	half := c.Scaled(0.5)
	if half.Slow[0].From != 15*s || half.Slow[0].To != 45*s || half.Slow[0].Factor != 2 || half.Conns[1].At != 35*s || half.Conns[1].Connections != 15 || half.Down[0] != (Span{50 * s, 55 * s}) {
		t.Errorf("scaled: %+v", half)
	}
}

// poolCall posts one order to the pool and returns the status and how long it took.
func poolCall(t *testing.T, url, user string) (int, time.Duration) {
	t.Helper()
	t0 := time.Now()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url+"/orders", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-User-Id", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode, time.Since(t0)
}

// The pool follows its conditions on its own clock: a 503 at once while
// down, the service time multiplied while slow, and no more connections
// in use than its size once it shrank.
func TestPoolFollowsConditions(t *testing.T) {
	const ms = time.Millisecond
	const service = 40 * ms
	pool := NewPool(4, ServiceTime{Kind: "const", Mean: service}, 1)
	pool.SetConditions(Conditions{Down: []Span{{0, 300 * ms}}, Slow: []Slowdown{{Span{300 * ms, 600 * ms}, 3}}, Conns: []ConnChange{{600 * ms, 1}}})
	url, stop, err := servePool(pool)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	epoch := time.Now()
	pool.Reset(epoch)
	if code, took := poolCall(t, url, "down"); code != http.StatusServiceUnavailable || took >= service {
		t.Errorf("while down: %d after %s, want 503 at once", code, took)
	}
	time.Sleep(time.Until(epoch.Add(350 * ms)))
	if code, took := poolCall(t, url, "slow"); code != http.StatusCreated || took < 3*service {
		t.Errorf("while slow: %d after %s, want 201 after ≥ %s", code, took, 3*service)
	}
	time.Sleep(time.Until(epoch.Add(650 * ms)))
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); poolCall(t, url, "after-"+string(rune('a'+i))) }()
	}
	wg.Wait()
	var starts, ends []time.Duration
	refused := 0
	for _, e := range pool.Events() {
		if e.Refused {
			refused++
		}
		if e.Served && strings.HasPrefix(e.User, "after-") {
			starts, ends = append(starts, e.Start), append(ends, e.End)
		}
	}
	if refused != 1 || len(starts) != 4 {
		t.Fatalf("refused %d, served after the shrink %d; want 1, 4", refused, len(starts))
	}
	if peak := slices.Max(Timeline(starts, ends, time.Millisecond, time.Since(epoch))); peak != 1 {
		t.Errorf("%d connections in use at once after the pool shrank to 1", peak)
	}
}

// A caller that gives up while queued leaves the queue: the pool must read
// the body for net/http to tell it, else it would serve nobody's order.
func TestPoolDropsCallersThatGaveUp(t *testing.T) {
	pool := NewPool(1, ServiceTime{Kind: "const", Mean: 300 * time.Millisecond}, 1)
	url, stop, err := servePool(pool)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	pool.Reset(time.Now())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); poolCall(t, url, "holder") }()
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/orders", strings.NewReader(`{"sku":"tv-55"}`))
	req.Header.Set("X-User-Id", "impatient")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_ = resp.Body.Close()
		t.Fatalf("answered %d before the holder's order finished", resp.StatusCode)
	}
	wg.Wait()
	time.Sleep(50 * time.Millisecond) // the pool records the cancelled wait as it notices it
	for _, e := range pool.Events() {
		if e.User == "impatient" && (e.Served || e.End == 0 || e.End > 250*time.Millisecond) {
			t.Errorf("the impatient caller: served %v, left the queue at %s; want not served, gone at ~100 ms", e.Served, e.End)
		}
	}
	if n := len(pool.Events()); n != 2 {
		t.Errorf("%d events, want 2", n)
	}
}
