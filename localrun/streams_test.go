package localrun_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/openapitest"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/localrun"
)

// The caps of issue 19 bite here, not the abuse limiter: every test of
// this file lets one identity and one address make a billion calls (the
// buckets still run, and write their keys).
var unlimited = map[string]string{"ADMIT_RATE_PER_SEC": "0.001",
	"CLIENT_RATE_PER_SEC": "0.001", "CLIENT_BURST": "1000000000", "IP_RATE_PER_SEC": "0.001", "IP_BURST": "1000000000"}

func withEnv(extra map[string]string) map[string]string {
	env := map[string]string{}
	for _, m := range []map[string]string{unlimited, extra} {
		for k, v := range m {
			env[k] = v
		}
	}
	return env
}

// inLine enters "ahead" (whom the runner's first batch admits) and then
// users, so that the users' streams stay open: nobody behind "ahead" is
// admitted for a thousand seconds.
func inLine(t *testing.T, r *localrun.Runner, room string, users ...string) {
	t.Helper()
	enter(t, r, room, "ahead")
	for _, u := range users {
		enter(t, r, room, u)
	}
}

// from is a client whose connections leave from the loopback address ip
// (Linux routes all of 127.0.0.0/8 to lo), as a second host would.
func from(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 100}}
}

// refused asserts that a connect was refused before the stream started:
// 429 rate_limited with Retry-After, as docs/openapi.yaml describes it.
func refused(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	if resp.StatusCode != 429 { // a stream: its body never ends
		t.Fatalf("%s: %d; want 429 rate_limited", what, resp.StatusCode)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), `"error":"rate_limited"`) {
		t.Fatalf("%s: %d %s (Retry-After %q); want 429 rate_limited with Retry-After", what, resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	if err := openapitest.Check(openapitest.Exchange{Request: resp.Request, Status: resp.StatusCode, Header: resp.Header, Body: body}); err != nil {
		t.Errorf("contract: %v", err)
	}
}

// closes reports whether ch closes (the stream's response ends) within d;
// events that come meanwhile are dropped.
func closes(ch <-chan event, d time.Duration) bool {
	deadline := time.After(d)
	for {
		select {
		case _, open := <-ch:
			if !open {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

// A new stream of an identity in a room ends its previous one there,
// cleanly (the response ends), and leaves the identity's stream in another
// room alone.
func TestStreamOfAnIdentityReplacesItsPrevious(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		r, _ := startRunner(t, engine, withEnv(nil))
		inLine(t, r, "tv", "u1")
		inLine(t, r, "radio", "u1")
		url := r.URL + "/queue/events?room="
		_, first := openStream(t, http.DefaultClient, url+"tv", userHeader("u1"))
		_, radio := openStream(t, http.DefaultClient, url+"radio", userHeader("u1"))
		for _, ch := range []<-chan event{first, radio} {
			if e := <-ch; e.Status != "WAITING" {
				t.Fatalf("first event %+v", e)
			}
		}
		_, second := openStream(t, http.DefaultClient, url+"tv", userHeader("u1"))
		if e := <-second; e.Status != "WAITING" {
			t.Fatalf("the second stream's first event: %+v", e)
		}
		if !closes(first, 5*time.Second) {
			t.Fatal("u1's first stream in tv is still open 5 s after a second one opened")
		}
		if closes(second, 500*time.Millisecond) || closes(radio, 500*time.Millisecond) {
			t.Fatal("u1's second stream in tv, or its stream in radio, ended")
		}
	})
}

// STREAMS_PER_IP streams at once from one address, then 429 before any
// store call; another address has its own count, and a stream that ends
// gives its place back.
func TestStreamsPerSourceAddressAreCapped(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		r, srv := startRunner(t, engine, withEnv(map[string]string{"STREAMS_PER_IP": "2"}))
		inLine(t, r, "tv", "u1", "u2", "u3", "u4")
		url := r.URL + "/queue/events?room=tv"
		ctx, cancelU1 := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		req.Header = userHeader("u1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("u1: %v %v", resp, err)
		}
		defer resp.Body.Close()
		if _, ch := openStream(t, http.DefaultClient, url, userHeader("u2")); (<-ch).Status != "WAITING" {
			t.Fatal("u2's stream did not start")
		}

		// A connect's store call takes a token from the limiter's bucket of
		// its identity: a field naming it in the room's hash (its settings and buckets).
		named := func(user string) []string {
			fields, _, _ := srv.Client().HScan(context.Background(), "wr:{tv}:settings", 0, "*"+user+"*", 1000).Result()
			return append(fields, srv.Client().Keys(context.Background(), "*"+user+"*").Val()...)
		}
		third, _ := openStream(t, http.DefaultClient, url, userHeader("stranger"))
		refused(t, "a third stream from 127.0.0.1", third)
		if keys := named("stranger"); len(keys) > 0 {
			t.Errorf("the refused connect reached the store: it wrote %v", keys)
		}
		if _, ch := openStream(t, from("127.0.0.2"), url, userHeader("visitor")); (<-ch).Status != "NOT_IN_QUEUE" || len(named("visitor")) == 0 {
			t.Fatalf("a stream that reached the store left no key naming its user (keys %v): the check above proves nothing", named("visitor"))
		}
		if _, ch := openStream(t, from("127.0.0.2"), url, userHeader("u3")); (<-ch).Status != "WAITING" {
			t.Fatal("u3's stream from 127.0.0.2 did not start: another address has its own count")
		}

		cancelU1() // u1's client goes: its place is given back
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			resp, ch := openStream(t, http.DefaultClient, url, userHeader("u4"))
			if resp.StatusCode == 200 {
				if (<-ch).Status != "WAITING" {
					t.Fatal("u4's stream did not start")
				}
				break
			}
			resp.Body.Close()
			if time.Now().After(deadline) {
				t.Fatalf("5 s after u1's client went, a stream from 127.0.0.1 is still refused: %d", resp.StatusCode)
			}
		}
	})
}

// MAX_STREAMS streams at once in the process, from any addresses.
func TestMaxStreamsPerProcess(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		r, _ := startRunner(t, engine, withEnv(map[string]string{"STREAMS_PER_IP": "0", "MAX_STREAMS": "3"}))
		inLine(t, r, "tv", "u1", "u2", "u3", "u4")
		url := r.URL + "/queue/events?room=tv"
		for i, ip := range []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"} {
			if _, ch := openStream(t, from(ip), url, userHeader(fmt.Sprintf("u%d", i+1))); (<-ch).Status != "WAITING" {
				t.Fatalf("stream %d did not start", i+1)
			}
		}
		fourth, _ := openStream(t, from("127.0.0.4"), url, userHeader("u4"))
		refused(t, "a fourth stream in a process of MAX_STREAMS=3", fourth)
		if total, bySource, _ := localrun.OpenStreams(r); total != 3 || len(bySource) != 3 {
			t.Errorf("counted %d streams from %v; want 3, one from each address", total, bySource)
		}
		r.Close() // ends every stream
		localrun.WaitNoStreams(t, r, "the runner closed")
	})
}

// A burst of concurrent connects from one address never holds more than
// STREAMS_PER_IP streams: exactly the cap get a stream, the rest 429. Then,
// with streams ending while others connect, no client ever holds a stream
// beyond the cap. A client counts its stream from its 200 to just before it
// closes, a subset of the server's count, so any over-admission shows.
func TestConcurrentConnectsNeverExceedTheCap(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		const perIP, burst = 5, 60
		r, _ := startRunner(t, engine, withEnv(map[string]string{"STREAMS_PER_IP": fmt.Sprint(perIP)}))
		users := make([]string, burst)
		for i := range users {
			users[i] = fmt.Sprintf("u%02d", i)
		}
		inLine(t, r, "tv", users...)
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: burst}}
		url := r.URL + "/queue/events?room=tv"
		connect := func(ctx context.Context, user string) (*http.Response, error) {
			req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
			req.Header = userHeader(user)
			return client.Do(req)
		}

		var streams, limited atomic.Int64
		hold := make(chan struct{})
		start := make(chan struct{})
		var answered, done sync.WaitGroup
		for _, u := range users {
			answered.Add(1)
			done.Add(1)
			go func() {
				defer done.Done()
				<-start
				resp, err := connect(context.Background(), u)
				answered.Done()
				if err != nil {
					t.Error(err)
					return
				}
				defer resp.Body.Close()
				switch resp.StatusCode {
				case 200:
					streams.Add(1)
					<-hold
				case 429:
					limited.Add(1)
				default:
					t.Errorf("%s: %d", u, resp.StatusCode)
				}
			}()
		}
		close(start)
		answered.Wait()
		if streams.Load() != perIP || limited.Load() != burst-perIP {
			t.Errorf("%d concurrent connects from one address: %d streams, %d refused; want exactly %d streams (STREAMS_PER_IP), the rest 429",
				burst, streams.Load(), limited.Load(), perIP)
		}
		if total, bySource, owners := localrun.OpenStreams(r); total != perIP || bySource["127.0.0.1"] != perIP || owners != perIP {
			t.Errorf("while held: %d streams counted (%v, %d owners); want %d", total, bySource, owners, perIP)
		}
		close(hold)
		done.Wait()
		localrun.WaitNoStreams(t, r, "the burst's clients went")

		opened, most := churn(t, connect, users[:16], 15)
		if most > perIP || opened == 0 {
			t.Errorf("with streams ending and connecting, clients held up to %d streams at once (%d opened); want at most %d", most, opened, perIP)
		}
		t.Logf("churn: %d streams opened, at most %d at once", opened, most)
		localrun.WaitNoStreams(t, r, "the churn ended")
	})
}

// churn has each user connect times times, holding each stream it gets for
// up to 3 ms; it returns how many streams were opened and the most that
// clients held at once.
func churn(t *testing.T, connect func(context.Context, string) (*http.Response, error), users []string, times int) (opened, most int64) {
	var open, top, count atomic.Int64
	var wg sync.WaitGroup
	for _, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range times {
				ctx, cancel := context.WithCancel(context.Background())
				resp, err := connect(ctx, u)
				if err != nil {
					cancel()
					t.Error(err)
					return
				}
				if resp.StatusCode == 200 {
					n := open.Add(1)
					for m := top.Load(); n > m && !top.CompareAndSwap(m, n); m = top.Load() {
					}
					count.Add(1)
					time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
					open.Add(-1) // before the client closes: a subset of the server's count
				} else if resp.StatusCode != 429 {
					t.Errorf("%s: %d", u, resp.StatusCode)
				}
				cancel()
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	return count.Load(), top.Load()
}
