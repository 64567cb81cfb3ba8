// Package demoorder is a stand-in for the order API that Waitroom protects:
// a fixed pool of database connections, each order holding one for about
// 200 ms, and requests beyond the pool queueing for a connection. It is the
// bottleneck of the brief, small enough to run anywhere.
package demoorder

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Service serves POST /orders.
type Service struct {
	pool        chan struct{}
	serviceTime func() time.Duration

	seq      atomic.Int64
	inFlight atomic.Int64 // holding a connection
	queued   atomic.Int64 // waiting for one
	mu       sync.Mutex
	maxIn    int64
	maxQueue int64
	orders   map[string]order // by user + Idempotency-Key
	tokens   map[string]order // by X-Waitroom-Token-Id: one order per entry token
}

type order struct {
	OrderID string `json:"orderId"`
	UserID  string `json:"userId"`
}

// New returns a service with connections connections, each order taking serviceTime().
func New(connections int, serviceTime func() time.Duration) *Service {
	return &Service{pool: make(chan struct{}, connections), serviceTime: serviceTime, orders: map[string]order{}, tokens: map[string]order{}}
}

// Default is the brief's bottleneck: 20 connections, 200 ms ± 20% per order.
func Default() *Service {
	return New(20, func() time.Duration {
		return time.Duration(float64(200*time.Millisecond) * (0.8 + 0.4*rand.Float64()))
	})
}

// Stats is what the pool went through so far.
type Stats struct {
	Orders      int64 `json:"orders"`
	MaxInFlight int64 `json:"maxInFlight"`
	MaxQueued   int64 `json:"maxQueued"`
}

// Stats reports the orders taken and the pool's high-water marks.
func (s *Service) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Orders: s.seq.Load(), MaxInFlight: s.maxIn, MaxQueued: s.maxQueue}
}

func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/orders" {
		http.Error(w, `{"error":"not_found"}`, http.StatusNotFound)
		return
	}
	user := r.Header.Get("X-User-Id")
	key := r.Header.Get("Idempotency-Key")
	tokenID := r.Header.Get("X-Waitroom-Token-Id")

	s.track(&s.queued, &s.maxQueue, 1)
	select {
	case s.pool <- struct{}{}:
		s.track(&s.queued, &s.maxQueue, -1)
	case <-r.Context().Done():
		s.track(&s.queued, &s.maxQueue, -1)
		return
	}
	s.track(&s.inFlight, &s.maxIn, 1)
	defer func() { s.track(&s.inFlight, &s.maxIn, -1); <-s.pool }()

	time.Sleep(s.serviceTime())

	s.mu.Lock()
	o, replay := s.orders[user+"\x00"+key]
	if byToken, seen := s.tokens[tokenID]; seen && tokenID != "" {
		o, replay = byToken, true // one order per entry token (docs/API.md, POST /orders)
	}
	if !replay || (key == "" && tokenID == "") {
		o = order{OrderID: fmt.Sprintf("ord-%d", s.seq.Add(1)), UserID: user}
		if key != "" {
			s.orders[user+"\x00"+key] = o
		}
		if tokenID != "" {
			s.tokens[tokenID] = o
		}
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(o)
}

func (s *Service) track(gauge *atomic.Int64, high *int64, delta int64) {
	v := gauge.Add(delta)
	if delta > 0 {
		s.mu.Lock()
		if v > *high {
			*high = v
		}
		s.mu.Unlock()
	}
}
