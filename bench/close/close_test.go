// Package close measures closing a room mid-sale (issue 22): 10,000
// visitors wait in an operator-created room on a real redis-server behind
// the local runner; 1,000 of them follow the live stream. The operator
// closes the room with a message through the admin API (what `waitroomctl
// close` sends). Measured: how long until every polling visitor is answered
// CLOSED (each one's first poll after the close, all 10,000 at once), how
// long until every stream got its CLOSED event, how long until the line's
// keys are gone, and Redis's used_memory before and after. Run it with
// `make bench-close`; it is a measurement, not a check, and is skipped unless
// WAITROOM_CLOSE_BENCH is set.
package close

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/runnertest"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/bench/spike/sim"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/localrun"
	"github.com/waitroom/waitroom/redisstore"
)

const (
	visitors = 10_000
	streams  = 1_000
	pollers  = 64 // concurrent connections polling
	room     = "drop"
	message  = "Sold out. Thank you for waiting!"
)

func TestCloseBench(t *testing.T) {
	if os.Getenv("WAITROOM_CLOSE_BENCH") == "" {
		t.Skip("a measurement: run `make bench-close` (WAITROOM_CLOSE_BENCH=1)")
	}
	srv := redistest.Start(t)
	env := map[string]string{"REDIS_URL": srv.URL(), "ADDR": "127.0.0.1:0", "ADMIN_TOKEN": "bench-close-admin-token-0123456789",
		"OPEN_ROOMS": "false", "CLIENT_RATE_PER_SEC": "0", "IP_RATE_PER_SEC": "0", "VISITOR_RATE_PER_SEC": "0",
		"STREAMS_PER_IP": "0", "MAX_STREAMS": strconv.Itoa(streams + 10)}
	cfg := runnertest.Config(t, env)
	r := runnertest.Start(t, cfg)
	rdb := srv.Client()
	ctx := context.Background()
	admin(t, r, "PUT", `{"ratePerSec":0.001}`) // nobody is admitted during the run
	fill(t, redisstore.New(rdb, cfg))
	res := sim.CloseResults{Machine: fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), redistest.Version()),
		Waiting: visitors, Streams: streams, Pollers: pollers, AdmitIntervalMs: cfg.AdmitInterval.Milliseconds(), ReleasePerBatch: 5000}
	events := openStreams(t, r.URL)
	// After the streams' first reads, so that the connections they opened
	// to the store count in both figures.
	res.UsedMemoryBefore = usedMemory(t, rdb)
	closedAt := time.Now()
	admin(t, r, "PATCH", fmt.Sprintf(`{"closed":true,"message":%q}`, message))
	res.AdminMs = ms(time.Since(closedAt))

	done := make(chan struct{})
	go func() {
		defer close(done)
		res.StreamsClosed, res.StreamsLastMs, res.StreamsP50Ms = awaitStreams(events, closedAt)
	}()
	// The line's keys (redisstore/line.lua): the draws, the marks and the
	// budget. The accounts' records stay in their buckets until their TTL
	// (numbers the front has passed, which count for nothing).
	keys := []string{"wr:{drop}:line", "wr:{drop}:marks", "wr:{drop}:budget"}
	for rdb.Exists(ctx, keys...).Val() > 0 {
		if time.Since(closedAt) > time.Minute {
			t.Fatal("the closed room's line keys are still there after a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
	res.KeysGoneMs = ms(time.Since(closedAt))
	<-done
	res.UsedMemoryAfter = usedMemory(t, rdb)
	// Then every visitor's first poll after the close, all at once (after
	// the streams, so that neither measure loads the other's cores, and
	// after the memory, which the pollers' connections would add to).
	res.PollsClosed, res.PollsReady, res.PollsAllClosedMs = pollAll(t, r.URL, time.Now())
	res.ReleasedPerVisitor = float64(res.UsedMemoryBefore-res.UsedMemoryAfter) / visitors
	res.When = time.Now().UTC().Format(time.RFC3339)
	t.Logf("polls: %d of %d CLOSED, all in %.0f ms; streams: %d of %d CLOSED, last %.0f ms (p50 %.0f ms); line keys gone after %.0f ms; used_memory %d → %d (%.1f B a visitor)",
		res.PollsClosed, visitors, res.PollsAllClosedMs, res.StreamsClosed, streams, res.StreamsLastMs, res.StreamsP50Ms, res.KeysGoneMs,
		res.UsedMemoryBefore, res.UsedMemoryAfter, res.ReleasedPerVisitor)
	if res.PollsClosed+res.PollsReady != visitors || res.PollsReady > 1 || res.StreamsClosed != streams {
		t.Fatalf("not everyone was told CLOSED: %+v", res)
	}
	if out := os.Getenv("CLOSE_OUT"); out != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func admin(t *testing.T, r *localrun.Runner, method, body string) {
	t.Helper()
	req, _ := http.NewRequest(method, r.URL+"/admin/rooms/"+room, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+string(r.Config.AdminToken))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%s %s: %d", method, body, resp.StatusCode)
	}
}

// fill puts the visitors v0 … in line through the store's own enter.
func fill(t *testing.T, s *redisstore.Store) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range pollers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < visitors; i = next.Add(1) - 1 {
				if _, err := s.Enter(context.Background(), room, waitroom.Unlimited("h:"+user(int(i)))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func user(i int) string { return fmt.Sprintf("v%05d", i) }

func usedMemory(t *testing.T, rdb *redis.Client) int64 {
	info := rdb.Info(context.Background(), "memory").Val()
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatal("no used_memory in INFO memory")
	return 0
}

// openStreams opens the streams of the last visitors in line and returns
// when each saw its CLOSED event (zero time: never).
func openStreams(t *testing.T, base string) chan time.Time {
	got := make(chan time.Time, streams)
	var opened sync.WaitGroup
	for i := range streams { // the last in line: never admitted
		opened.Add(1)
		go func() {
			req, _ := http.NewRequest("GET", base+"/queue/events?room="+room, nil)
			req.Header.Set("X-User-Id", user(visitors-1-i))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				opened.Done()
				got <- time.Time{}
				return
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			first := true
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "data: ") && first {
					first = false
					opened.Done()
				}
				if strings.HasPrefix(sc.Text(), "data: ") && strings.Contains(sc.Text(), `"status":"CLOSED"`) {
					got <- time.Now()
					return
				}
			}
			if first {
				opened.Done()
			}
			got <- time.Time{}
		}()
	}
	opened.Wait()
	return got
}

func awaitStreams(got chan time.Time, since time.Time) (closed int, lastMs, p50Ms float64) {
	var all []float64
	for range streams {
		if at := <-got; !at.IsZero() {
			closed++
			all = append(all, ms(at.Sub(since)))
		}
	}
	if len(all) == 0 {
		return 0, 0, 0
	}
	p := sim.Percentiles(all, 100, 50)
	return closed, p[0], p[1]
}

// pollAll is every visitor's first poll after the close, all at once
// through pollers connections: how many were answered CLOSED, how many
// READY (the first in line, admitted by the first batch: a budget starts
// full), and how long after since the last answer came.
func pollAll(t *testing.T, base string, since time.Time) (closed, readyN int, allMs float64) {
	var n, ready atomic.Int64
	var next atomic.Int64
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: pollers}}
	for range pollers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < visitors; i = next.Add(1) - 1 {
				req, _ := http.NewRequest("GET", base+"/queue/position?room="+room, nil)
				req.Header.Set("X-User-Id", user(int(i)))
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				var body struct{ Status, Message string }
				_ = json.NewDecoder(resp.Body).Decode(&body)
				_ = resp.Body.Close()
				switch {
				case body.Status == "CLOSED" && body.Message == message:
					n.Add(1)
				case body.Status == "READY": // admitted before the close: its live entry token stays valid
					ready.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return int(n.Load()), int(ready.Load()), ms(time.Since(since))
}
