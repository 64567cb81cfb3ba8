package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ServiceTime draws how long one order holds a connection.
type ServiceTime struct {
	Kind   string        // "uniform", "exp", "lognormal" or "const"
	Mean   time.Duration // 200 ms in the brief
	Spread float64       // uniform: ± share of Mean; lognormal: sigma
}

// ParseServiceTime reads "uniform:200ms:0.2", "exp:200ms", "lognormal:200ms:0.25" or "const:200ms".
func ParseServiceTime(s string) (ServiceTime, error) {
	parts := strings.Split(s, ":")
	st := ServiceTime{Kind: parts[0], Mean: 200 * time.Millisecond, Spread: 0.2}
	if len(parts) > 1 {
		d, err := time.ParseDuration(parts[1])
		if err != nil || d <= 0 {
			return st, fmt.Errorf("service time %q: bad mean", s)
		}
		st.Mean = d
	}
	if len(parts) > 2 {
		f, err := strconv.ParseFloat(parts[2], 64)
		if err != nil || f < 0 {
			return st, fmt.Errorf("service time %q: bad spread", s)
		}
		st.Spread = f
	}
	switch st.Kind {
	case "uniform", "exp", "lognormal", "const":
	default:
		return st, fmt.Errorf("service time %q: kind must be uniform, exp, lognormal or const", s)
	}
	return st, nil
}

func (s ServiceTime) String() string {
	switch s.Kind {
	case "const", "exp":
		return fmt.Sprintf("%s:%s", s.Kind, s.Mean)
	}
	return fmt.Sprintf("%s:%s:%g", s.Kind, s.Mean, s.Spread)
}

// Draw returns one service time.
func (s ServiceTime) Draw(r *rand.Rand) time.Duration {
	m := float64(s.Mean)
	switch s.Kind {
	case "exp":
		return time.Duration(r.ExpFloat64() * m)
	case "lognormal":
		// mean-preserving: exp(mu + sigma^2/2) = m
		mu := math.Log(m) - s.Spread*s.Spread/2
		return time.Duration(math.Exp(mu + s.Spread*r.NormFloat64()))
	case "const":
		return s.Mean
	}
	return time.Duration(m * (1 - s.Spread + 2*s.Spread*r.Float64()))
}

// PoolEvent is one request at the downstream: when it arrived, when it got a
// connection, when it finished. Start is zero when the caller gave up while
// queued (End is then when it gave up) or when it was refused before it got
// a connection.
type PoolEvent struct {
	User    string
	Arrive  time.Duration // since the pool's epoch
	Start   time.Duration
	End     time.Duration
	Served  bool
	Refused bool  // answered 503: the order API was down (Conditions.Down)
	ArrSeq  int64 // first arrival of this user at the pool (1-based)
	ConnSeq int64 // order in which requests got a connection (1-based)
}

// Pool is the simulated order API: a number of database connections, each
// order holding one for a drawn service time, requests beyond the pool
// queueing (FIFO) for a connection. Conditions change the pool's size, its
// service time and whether it answers at all over the run. Unlike demoorder
// it records every request.
type Pool struct {
	size    int
	service ServiceTime
	cond    Conditions
	epoch   time.Time

	mu       sync.Mutex
	rng      *rand.Rand
	events   []PoolEvent
	inFlight int
	queued   int
	maxIn    int
	maxQ     int
	orders   int64
	firstArr map[string]int64
	connSeq  int64
	// waiters keeps FIFO order among queued requests (Go channels do not promise it).
	waiters []chan struct{}
}

// SetConditions makes the pool follow c from its epoch on (before Reset).
func (p *Pool) SetConditions(c Conditions) {
	p.mu.Lock()
	p.cond = c
	p.mu.Unlock()
}

// NewPool returns a pool with n connections.
func NewPool(n int, st ServiceTime, seed uint64) *Pool {
	p := &Pool{size: n, service: st, epoch: time.Now(),
		rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), firstArr: map[string]int64{}}
	return p
}

// Reset forgets everything and restarts the clock.
func (p *Pool) Reset(epoch time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.epoch = epoch
	p.events = nil
	p.inFlight, p.queued, p.maxIn, p.maxQ, p.orders, p.connSeq = 0, 0, 0, 0, 0, 0
	p.firstArr = map[string]int64{}
}

// acquire takes a connection, queueing FIFO for one; false when the caller
// gave up first.
func (p *Pool) acquire(r *http.Request) bool {
	p.mu.Lock()
	p.dispatch()
	if len(p.waiters) == 0 && p.inFlight < p.sizeNow() {
		p.take()
		p.mu.Unlock()
		return true
	}
	ch := make(chan struct{})
	p.waiters = append(p.waiters, ch)
	p.queued++
	if p.queued > p.maxQ {
		p.maxQ = p.queued
	}
	p.mu.Unlock()
	select {
	case <-ch: // dispatch gave us a connection
		return true
	case <-r.Context().Done():
		p.mu.Lock()
		for i, w := range p.waiters {
			if w == ch {
				p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
				p.queued--
				p.mu.Unlock()
				return false
			}
		}
		p.mu.Unlock()
		// We were given the connection just as we gave up: pass it on.
		p.release()
		return false
	}
}

// sizeNow is the pool's size at this moment of the run (mu held).
func (p *Pool) sizeNow() int { return p.cond.Connections(p.size, time.Since(p.epoch)) }

// take counts one more connection in use (mu held).
func (p *Pool) take() {
	p.inFlight++
	if p.inFlight > p.maxIn {
		p.maxIn = p.inFlight
	}
}

// dispatch hands free connections to the queue's head (mu held). After the
// pool shrinks, connections in use above its size are not handed on.
func (p *Pool) dispatch() {
	for len(p.waiters) > 0 && p.inFlight < p.sizeNow() {
		ch := p.waiters[0]
		p.waiters = p.waiters[1:]
		p.queued--
		p.take()
		close(ch)
	}
}

func (p *Pool) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inFlight--
	p.dispatch()
}

func (p *Pool) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/orders" {
		http.Error(w, `{"error":"not_found"}`, http.StatusNotFound)
		return
	}
	// Read the body first: net/http notices a caller that gave up (its
	// context cancelled, the connection closed) only once the body is read.
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	_, _ = io.Copy(io.Discard, r.Body)
	if attackPool(w, r, body) {
		return
	}
	user := r.Header.Get("X-User-Id")
	p.mu.Lock()
	ev := PoolEvent{User: user, Arrive: time.Since(p.epoch)}
	if _, ok := p.firstArr[user]; !ok {
		p.firstArr[user] = int64(len(p.firstArr) + 1)
	}
	ev.ArrSeq = p.firstArr[user]
	down := p.cond.IsDown(ev.Arrive)
	p.mu.Unlock()
	if down {
		p.refuse(w, ev)
		return
	}
	if !p.acquire(r) {
		ev.End = time.Since(p.epoch)
		p.record(ev)
		return
	}
	p.mu.Lock()
	ev.Start = time.Since(p.epoch)
	if p.cond.IsDown(ev.Start) { // it went down while the request queued
		p.mu.Unlock()
		p.release()
		p.refuse(w, ev)
		return
	}
	p.connSeq++
	ev.ConnSeq = p.connSeq
	d := time.Duration(float64(p.service.Draw(p.rng)) * p.cond.Factor(ev.Start))
	p.mu.Unlock()
	time.Sleep(d)
	p.mu.Lock()
	ev.End = time.Since(p.epoch)
	ev.Served = true
	p.orders++
	id := p.orders
	p.mu.Unlock()
	p.release()
	p.record(ev)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]string{"orderId": fmt.Sprintf("ord-%d", id), "userId": user})
}

// refuse answers 503 at once, as an order API that is down.
func (p *Pool) refuse(w http.ResponseWriter, ev PoolEvent) {
	ev.Start, ev.End, ev.Refused = 0, time.Since(p.epoch), true
	p.record(ev)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte(`{"error":"unavailable"}` + "\n"))
}

func (p *Pool) record(ev PoolEvent) {
	p.mu.Lock()
	p.events = append(p.events, ev)
	p.mu.Unlock()
}

// Events returns the recorded requests, by arrival.
func (p *Pool) Events() []PoolEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := append([]PoolEvent(nil), p.events...)
	sort.Slice(out, func(i, j int) bool { return out[i].Arrive < out[j].Arrive })
	return out
}

// HighWater returns the largest number of requests holding and waiting for a connection.
func (p *Pool) HighWater() (maxInFlight, maxQueued int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.maxIn, p.maxQ
}
