package redistest

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/embedded"
)

// An Engine is a server the store's scripts must run on: a real
// redis-server, and the embedded store that `make run` gives every
// newcomer (miniredis, whose Lua is gopher-lua). Tests of the scripts run
// on every engine with the same assertions (Each); a test that only one
// engine can take part in (a cluster, a frozen process) says so in its name.
type Engine struct {
	Name  string // the subtest's name: "redis-server" or "embedded"
	start func(testing.TB) *Instance
}

// Start runs a fresh store of this engine, stopped when the test ends.
func (e Engine) Start(tb testing.TB) *Instance {
	tb.Helper()
	return e.start(tb)
}

// Embedded reports whether e is the embedded store.
func (e Engine) Embedded() bool { return e.Name == EmbeddedEngine.Name }

var (
	// RedisServer is a redis-server process per test (Start).
	RedisServer = Engine{Name: "redis-server", start: func(tb testing.TB) *Instance {
		s := Start(tb)
		return &Instance{Addr: s.Addr, Server: s, tb: tb}
	}}
	// EmbeddedEngine is the local runner's embedded store, in this process.
	EmbeddedEngine = Engine{Name: "embedded", start: func(tb testing.TB) *Instance {
		s, err := embedded.Start()
		if err != nil {
			tb.Fatalf("embedded store: %v", err)
		}
		tb.Cleanup(s.Close)
		return &Instance{Addr: s.Addr(), embedded: s, tb: tb}
	}}
	// Engines is every engine, in the order Each runs them.
	Engines = []Engine{RedisServer, EmbeddedEngine}
)

// Each runs f once per engine, as a subtest named after the engine.
func Each(t *testing.T, f func(t *testing.T, e Engine)) {
	t.Helper()
	for _, e := range Engines {
		t.Run(e.Name, func(t *testing.T) { f(t, e) })
	}
}

// EachParallel is Each for a test that asserts no timing: the test and
// its engines' subtests run in parallel (t.Parallel) with the package's
// other parallel tests, as many at once as -parallel allows, after its
// sequential tests, whose rate and deadline checks keep the process to
// themselves. Each subtest starts a store of its own (Engine.Start).
func EachParallel(t *testing.T, f func(t *testing.T, e Engine)) {
	t.Helper()
	t.Parallel()
	for _, e := range Engines {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			f(t, e)
		})
	}
}

// Instance is one running store of an engine.
type Instance struct {
	Addr string
	// Server is the redis-server process (nil for the embedded store): for
	// what only a process can do, such as freezing it (Pause).
	Server   *Server
	embedded *embedded.Server
	tb       testing.TB
}

// URL is the store's redis:// URL.
func (i *Instance) URL() string { return "redis://" + i.Addr }

// Client returns a client for the store, closed when the test ends.
func (i *Instance) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: i.Addr})
	i.tb.Cleanup(func() { _ = c.Close() })
	return c
}

// Stop takes the store down, keeping its data for Restart.
func (i *Instance) Stop() {
	i.tb.Helper()
	if i.Server != nil {
		i.Server.Stop()
		return
	}
	i.embedded.Stop()
}

// Restart serves the same data again on the same address after Stop.
func (i *Instance) Restart() {
	i.tb.Helper()
	if i.Server != nil {
		i.Server.Restart()
		return
	}
	if err := i.embedded.Restart(); err != nil {
		i.tb.Fatalf("restart the embedded store: %v", err)
	}
}
