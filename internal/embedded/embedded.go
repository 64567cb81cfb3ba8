// Package embedded is the store `make run` gives every newcomer: a
// Redis-compatible server in this process (alicebob/miniredis, whose Lua is
// gopher-lua), with keys that expire in real time.
//
// miniredis never expires a key on its own: its TTLs only fall when its
// FastForward is called (it is made for unit tests with a fake clock). Left
// so, entry tokens, order locks, idle rooms and limiter buckets would live
// for ever in the local runner. Server therefore moves every TTL forward by
// the time that really passed, on a tick. FastForward walks (and sorts)
// every key while it holds the store's lock, so the tick lengthens with the
// number of keys to keep that walk under a tenth of the store's time: keys
// expire within 100 ms of their time in a small store, within about half a
// second with 100,000 keys (docs/design.md, "The embedded store").
package embedded

import (
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// MinTick is the shortest time between two expiry passes.
const MinTick = 100 * time.Millisecond

// pumpShare is the most of the store's time the expiry pass may take.
const pumpShare = 10

// Server is a running embedded store.
type Server struct {
	mr   *miniredis.Miniredis
	stop chan struct{}
	done sync.WaitGroup
}

// Start runs an embedded store on a free loopback port.
func Start() (*Server, error) {
	mr, err := miniredis.Run()
	if err != nil {
		return nil, err
	}
	s := &Server{mr: mr, stop: make(chan struct{})}
	s.done.Add(1)
	go s.expire()
	return s, nil
}

// Addr is host:port of the store.
func (s *Server) Addr() string { return s.mr.Addr() }

// URL is the store's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.mr.Addr() }

// Close stops the store; its data is gone.
func (s *Server) Close() {
	close(s.stop)
	s.done.Wait()
	s.mr.Close()
}

// Stop closes the listener but keeps the data, as a store that went down
// and comes back: Restart serves the same data on the same address.
func (s *Server) Stop() { s.mr.Close() }

// Restart serves again after Stop, on the same address.
func (s *Server) Restart() error { return s.mr.Restart() }

// expire moves the store's TTLs forward by the time that passed, until Close.
func (s *Server) expire() {
	defer s.done.Done()
	last := time.Now()
	tick := MinTick
	for {
		select {
		case <-s.stop:
			return
		case <-time.After(tick):
		}
		now := time.Now()
		s.mr.FastForward(now.Sub(last))
		last = now
		tick = max(MinTick, pumpShare*time.Since(now))
	}
}
