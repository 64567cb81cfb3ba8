package localrun

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/envconfig"
	"github.com/waitroom/waitroom/httpapi"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// An IPv6 host is counted by its /64, an IPv4-mapped address as IPv4.
func TestStreamSourceOf(t *testing.T) {
	for ip, want := range map[string]string{
		"192.0.2.7":               "192.0.2.7",
		"::ffff:192.0.2.7":        "192.0.2.7",
		"2001:db8:1:2:3:4:5:6":    "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::1":    "2001:db8:1:2::/64",
		"2001:db8:1:3::1":         "2001:db8:1:3::/64",
		"fe80::1%eth0":            "fe80::/64",
		"::1":                     "::/64",
		"":                        "",
		"not an address":          "not an address",
		"2001:db8::1:2:3:4:5:6:7": "2001:db8::1:2:3:4:5:6:7", // too long: itself
	} {
		if got := sourceOf(ip); got != want {
			t.Errorf("sourceOf(%q) = %q, want %q", ip, got, want)
		}
	}
	c := newStreamCaps(waitroom.StreamCaps{PerIP: 2, Max: 100})
	for i, ip := range []string{"2001:db8:1:2::a", "2001:db8:1:2::b"} {
		if _, err := c.acquire(context.Background(), "tv", fmt.Sprint("u", i), ip); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.acquire(context.Background(), "tv", "u2", "2001:db8:1:2:c::"); waitroom.ErrorCode(err) != waitroom.ERateLimited {
		t.Errorf("a third address of the /64: %v, want rate_limited", err)
	}
	if _, err := c.acquire(context.Background(), "tv", "u2", "2001:db8:1:3::a"); err != nil {
		t.Errorf("another /64: %v", err)
	}
}

// A refusal changes nothing, a release counts once, and a stream that
// replaces its owner's is not refused for the slot the old one gives up.
func TestStreamCapsCounts(t *testing.T) {
	c := newStreamCaps(waitroom.StreamCaps{PerIP: 1, Max: 2})
	a, err := c.acquire(context.Background(), "tv", "a", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.acquire(context.Background(), "tv", "b", "192.0.2.1"); waitroom.ErrorCode(err) != waitroom.ERateLimited {
		t.Fatalf("second stream of the address: %v", err)
	}
	go func() { <-a.replaced; c.release(a) }() // a's handler, told to end
	a2, err := c.acquire(context.Background(), "tv", "a", "192.0.2.1")
	if err != nil {
		t.Fatalf("a's reconnect at the cap: %v", err)
	}
	c.release(a) // again: nothing
	if total, src, owners := c.counts(); total != 1 || src["192.0.2.1"] != 1 || owners != 1 {
		t.Fatalf("after the replacement: %d %v %d", total, src, owners)
	}
	b, _ := c.acquire(context.Background(), "radio", "a", "192.0.2.2")
	if _, err := c.acquire(context.Background(), "tv", "c", "192.0.2.3"); waitroom.ErrorCode(err) != waitroom.ERateLimited {
		t.Fatalf("a third stream of MAX 2: %v", err)
	}
	c.release(a2)
	c.release(b)
	if total, src, owners := c.counts(); total != 0 || len(src) != 0 || owners != 0 {
		t.Fatalf("after every release: %d %v %d", total, src, owners)
	}
}

// testEvents serves the events handler alone on a fresh store of engine,
// with no admitter: tests admit by hand. Every enter queues
// (INSTANT_ADMIT=false unless env says otherwise): the streams are the
// line's.
type testEvents struct {
	*events
	url   string
	store *redisstore.Store
	done  chan struct{}
}

func serveEvents(t *testing.T, engine redistest.Engine, env map[string]string, tweak func(*events, *httptest.Server)) *testEvents {
	t.Helper()
	srv := engine.Start(t)
	env["REDIS_URL"] = srv.URL()
	if _, ok := env["INSTANT_ADMIT"]; !ok {
		env["INSTANT_ADMIT"] = "false"
	}
	cfg, err := envconfig.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, envconfig.Local)
	if err != nil {
		t.Fatal(err)
	}
	store := redisstore.New(srv.Client(), cfg)
	done := make(chan struct{})
	ev := &events{api: &httpapi.API{Config: cfg, Queue: store}, seats: store, hub: newHub(store, cfg.AdmitInterval, time.Second),
		caps: newStreamCaps(cfg.Trust.Streams), done: done}
	ts := httptest.NewUnstartedServer(ev)
	if tweak != nil {
		tweak(ev, ts)
	}
	ts.Start()
	t.Cleanup(ts.Close)
	return &testEvents{events: ev, url: ts.URL + "/queue/events?room=tv", store: store, done: done}
}

func (te *testEvents) enter(t *testing.T, users ...string) {
	t.Helper()
	for _, u := range users {
		if _, err := te.store.Enter(context.Background(), "tv", waitroom.Unlimited("h:"+u)); err != nil { // as X-User-Id names u
			t.Fatal(err)
		}
	}
}

// open starts user's stream and reads its first event; the stream's
// lines follow on the channel, closed when the response ends.
func (te *testEvents) open(t *testing.T, ctx context.Context, user string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel) // before the server closes, which waits for every stream
	req, _ := http.NewRequestWithContext(ctx, "GET", te.url, nil)
	req.Header.Set("X-User-Id", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%s: %v %v", user, resp, err)
	}
	lines := make(chan string, 100)
	go func() {
		defer resp.Body.Close()
		defer close(lines)
		for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	if first := <-lines; !strings.HasPrefix(first, "event: standing") {
		t.Fatalf("%s: first line %q", user, first)
	}
	return lines
}

// until reads lines until the stream ends, and returns them.
func until(t *testing.T, what string, lines <-chan string) string {
	t.Helper()
	var got []string
	deadline := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return strings.Join(got, "\n")
			}
			got = append(got, l)
		case <-deadline:
			t.Fatalf("%s: still open 10 s later", what)
		}
	}
}

// waitNoStreams waits until c counts no stream: every handler has returned.
func waitNoStreams(t *testing.T, c *streamCaps, after string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		total, bySource, owners := c.counts()
		if total == 0 && len(bySource) == 0 && owners == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("5 s after %s, %d streams are still counted (%v, %d owners)", after, total, bySource, owners)
		}
	}
}

// Every way a stream ends gives its slot back: the client goes, READY,
// NOT_IN_QUEUE, the stream's life, a newer stream of the owner, shutdown,
// and a client that stops reading.
func TestEveryEndGivesTheSlotBack(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		env := map[string]string{"ADMIT_RATE_PER_SEC": "10"} // one user a batch
		t.Run("client gone", func(t *testing.T) {
			te := serveEvents(t, engine, env, nil)
			te.enter(t, "first", "second")
			ctx, cancel := context.WithCancel(context.Background())
			lines := te.open(t, ctx, "second")
			cancel()
			until(t, "a cancelled stream", lines)
			waitNoStreams(t, te.caps, "the client went")
		})
		t.Run("READY and NOT_IN_QUEUE", func(t *testing.T) {
			te := serveEvents(t, engine, env, nil)
			te.enter(t, "first")
			lines := te.open(t, context.Background(), "first")
			if _, err := te.store.AdmitBatch(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := until(t, "an admitted visitor's stream", lines); !strings.Contains(got, `"status":"READY"`) {
				t.Fatalf("the stream ended without READY:\n%s", got)
			}
			until(t, "a stranger's stream", te.open(t, context.Background(), "stranger"))
			waitNoStreams(t, te.caps, "READY and NOT_IN_QUEUE")
		})
		t.Run("life", func(t *testing.T) {
			te := serveEvents(t, engine, env, func(e *events, _ *httptest.Server) { e.life = 300 * time.Millisecond })
			te.enter(t, "first", "second")
			until(t, "a stream past its life", te.open(t, context.Background(), "second"))
			waitNoStreams(t, te.caps, "the stream's life")
		})
		t.Run("replaced", func(t *testing.T) {
			te := serveEvents(t, engine, env, nil)
			te.enter(t, "first", "second")
			old := te.open(t, context.Background(), "second")
			ctx, cancel := context.WithCancel(context.Background())
			newer := te.open(t, ctx, "second")
			if got := until(t, "a replaced stream", old); !strings.HasSuffix(strings.TrimSpace(got), ": replaced by a newer stream") {
				t.Errorf("the replaced stream ended on:\n%s", got)
			}
			if total, _, owners := te.caps.counts(); total != 1 || owners != 1 {
				t.Errorf("after the replacement: %d streams, %d owners; want 1 and 1", total, owners)
			}
			cancel()
			until(t, "the newer stream", newer)
			waitNoStreams(t, te.caps, "a replacement and its end")
		})
		t.Run("shutdown", func(t *testing.T) {
			te := serveEvents(t, engine, env, nil)
			te.enter(t, "first", "second", "third")
			a, b := te.open(t, context.Background(), "second"), te.open(t, context.Background(), "third")
			close(te.done)
			until(t, "a stream at shutdown", a)
			until(t, "a stream at shutdown", b)
			waitNoStreams(t, te.caps, "shutdown")
		})
		t.Run("client stops reading", func(t *testing.T) {
			te := serveEvents(t, engine, env, func(e *events, ts *httptest.Server) {
				e.keepAlive, e.writeTimeout = 100*time.Microsecond, 200*time.Millisecond
				ts.Listener = smallSendBuffers{ts.Listener}
			})
			te.enter(t, "first", "second")
			conn := stalled(t, te.url, "second")
			defer conn.Close()
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
				if total, _, _ := te.caps.counts(); total == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the stalled client's stream never started")
				}
			}
			waitNoStreams(t, te.caps, "a client stopped reading")
		})
	})
}

// smallSendBuffers gives each accepted connection a fixed 4 KB send buffer
// (Linux otherwise grows it to megabytes), so that writes to a client that
// does not read block within a second.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		err = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// stalled opens user's stream over a connection with a small receive
// buffer and never reads it: the server's writes soon block.
func stalled(t *testing.T, url, user string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024) }); cerr != nil {
			return cerr
		}
		return err
	}}
	host := strings.TrimPrefix(url, "http://")
	host, path, _ := strings.Cut(host, "/")
	conn, err := d.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(conn, "GET /%s HTTP/1.1\r\nHost: %s\r\nX-User-Id: %s\r\n\r\n", path, host, user); err != nil {
		t.Fatal(err)
	}
	return conn
}

// counts are the open streams in all, by source and by owner (for tests).
func (c *streamCaps) counts() (total int, bySource map[string]int, owners int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	bySource = make(map[string]int, len(c.sources))
	for k, v := range c.sources {
		bySource[k] = v
	}
	return c.total, bySource, len(c.owners)
}
