package sim

import (
	"encoding/json"
	"fmt"
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
// connection, when it finished. Start and End are zero when the caller gave
// up while queued.
type PoolEvent struct {
	User    string
	Arrive  time.Duration // since the pool's epoch
	Start   time.Duration
	End     time.Duration
	Served  bool
	ArrSeq  int64 // first arrival of this user at the pool (1-based)
	ConnSeq int64 // order in which requests got a connection (1-based)
}

// Pool is the simulated order API: a fixed number of database connections,
// each order holding one for a drawn service time, requests beyond the pool
// queueing (FIFO) for a connection. Unlike demoorder it records every request.
type Pool struct {
	size    int
	service ServiceTime
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

func (p *Pool) acquire(r *http.Request) bool {
	p.mu.Lock()
	if p.inFlight < p.size && len(p.waiters) == 0 {
		p.inFlight++
		if p.inFlight > p.maxIn {
			p.maxIn = p.inFlight
		}
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
	case <-ch: // release handed us its connection (inFlight unchanged)
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
		// We were handed the connection just as we gave up: pass it on.
		p.release()
		return false
	}
}

func (p *Pool) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.waiters) > 0 {
		ch := p.waiters[0]
		p.waiters = p.waiters[1:]
		p.queued--
		close(ch)
		return
	}
	p.inFlight--
}

func (p *Pool) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/orders" {
		http.Error(w, `{"error":"not_found"}`, http.StatusNotFound)
		return
	}
	user := r.Header.Get("X-User-Id")
	p.mu.Lock()
	ev := PoolEvent{User: user, Arrive: time.Since(p.epoch)}
	if _, ok := p.firstArr[user]; !ok {
		p.firstArr[user] = int64(len(p.firstArr) + 1)
	}
	ev.ArrSeq = p.firstArr[user]
	p.mu.Unlock()

	if !p.acquire(r) {
		p.record(ev)
		return
	}
	p.mu.Lock()
	ev.Start = time.Since(p.epoch)
	p.connSeq++
	ev.ConnSeq = p.connSeq
	d := p.service.Draw(p.rng)
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
