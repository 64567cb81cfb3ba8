package localrun_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/openapitest"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/localrun"
	"github.com/waitroom/waitroom/redisstore"
)

type event struct {
	Status     string `json:"status"`
	Position   int64  `json:"position"`
	EntryToken string `json:"entryToken"`
	Ticket     string `json:"ticket"`
	at         time.Time
}

// openStream opens GET /queue/events and delivers its standing events on
// the channel, which is closed when the stream ends.
func openStream(t *testing.T, client *http.Client, url string, header http.Header) (*http.Response, <-chan event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a stream that never ends fails the test, not the run
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header = header
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	ch := make(chan event, 64)
	if resp.StatusCode != 200 {
		close(ch)
		return resp, ch
	}
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		name := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && name == "standing":
				var e event
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &e); err != nil {
					t.Errorf("event data %q: %v", line, err)
					return
				}
				e.at = time.Now()
				ch <- e
			}
		}
	}()
	return resp, ch
}

func userHeader(user string) http.Header { return http.Header{"X-User-Id": {user}} }

func enter(t *testing.T, r *localrun.Runner, room, user string) {
	t.Helper()
	if code, body := do(t, "POST", r.URL+"/queue/enter?room="+room, user, nil); code != 200 {
		t.Fatalf("enter %s: %d %s", user, code, body)
	}
}

// READY reaches an open stream within one admission interval of the
// admission, whether this process admitted the user (the admitter tells the
// streams at once) or another process did (seen at the next read of the
// line's front). The admission time is the store's own: the token record's
// expiry minus ENTRY_TOKEN_TTL_SECONDS.
func TestStreamPushesReadyWithinOneInterval(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		const interval = 300 * time.Millisecond
		env := map[string]string{"ADMIT_INTERVAL_MS": strconv.Itoa(int(interval.Milliseconds()))}
		t.Run("admitted by this process", func(t *testing.T) {
			env["ADMIT_RATE_PER_SEC"] = "2"
			r, srv := startRunner(t, engine, env)
			readyLags(t, srv, r, interval)
		})
		t.Run("admitted by another process", func(t *testing.T) {
			// This runner admits one user a thousand seconds; another admitter
			// on the same store admits two a second.
			env["ADMIT_RATE_PER_SEC"] = "0.001"
			r, srv := startRunner(t, engine, env)
			other := r.Config
			other.AdmitRatePerSec = 2
			ctx, stop := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				a := &waitroom.Admitter{Queue: redisstore.New(srv.Client(), other), Interval: interval, Batches: 10}
				localrun.AdmitForever(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), a)
			}()
			defer func() { stop(); <-done }()
			readyLags(t, srv, r, interval)
		})
	})
}

func readyLags(t *testing.T, srv *redistest.Instance, r *localrun.Runner, interval time.Duration) {
	const users = 5
	for i := range users {
		enter(t, r, "tv", fmt.Sprintf("u%d", i))
	}
	var wg sync.WaitGroup
	for i := range users {
		wg.Add(1)
		go func(user string) {
			defer wg.Done()
			_, ch := openStream(t, http.DefaultClient, r.URL+"/queue/events?room=tv", userHeader(user))
			var last event
			for e := range ch {
				last = e
			}
			if last.Status != "READY" || last.EntryToken == "" {
				t.Errorf("%s: the stream ended on %+v, want READY with a token", user, last)
				return
			}
			rec := srv.Client().Get(context.Background(), "wr:{tv}:u:h:"+user).Val()
			ms, _, _ := strings.Cut(rec, ":")
			exp, _ := strconv.ParseInt(ms, 10, 64)
			at := time.UnixMilli(exp).Add(-r.Config.EntryTokenTTL)
			if lag := last.at.Sub(at); lag > interval+100*time.Millisecond {
				t.Errorf("%s: READY arrived %v after admission; want within one interval (%v)", user, lag, interval)
			} else {
				t.Logf("%s: READY %v after admission", user, lag.Round(time.Millisecond))
			}
		}(fmt.Sprintf("u%d", i))
	}
	wg.Wait()
}

// A stream says where the visitor stands at once, follows the position,
// ends after READY or NOT_IN_QUEUE, and applies the identity rules of
// position: ticket cookie accepted, invalid ticket refused, nobody created.
func TestStreamLifecycleAndIdentity(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		r, srv := startRunner(t, engine, map[string]string{"ADMIT_RATE_PER_SEC": "2"})
		resp, ch := openStream(t, http.DefaultClient, r.URL+"/queue/events?room=tv", userHeader("nobody"))
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("content type %q", ct)
		}
		if e, ok := <-ch; !ok || e.Status != "NOT_IN_QUEUE" {
			t.Fatalf("first event %+v", e)
		}
		if _, open := <-ch; open {
			t.Fatal("the stream goes on after NOT_IN_QUEUE")
		}

		// An anonymous visitor: the page's cookie identifies it on the stream.
		enterResp, err := openapitest.Client(t).Post(r.URL+"/queue/enter?room=tv", "application/json", nil) // checked against docs/openapi.yaml
		if err != nil {
			t.Fatal(err)
		}
		enterResp.Body.Close()
		cookies := enterResp.Cookies()
		if len(cookies) != 1 || cookies[0].Name != "wr_ticket" {
			t.Fatalf("enter cookies %v", cookies)
		}
		for i := range 3 { // behind the visitor: the position moves as they are admitted
			enter(t, r, "tv", fmt.Sprintf("later-%d", i))
		}
		resp, ch = openStream(t, http.DefaultClient, r.URL+"/queue/events?room=tv", http.Header{"Cookie": {"wr_ticket=" + cookies[0].Value}})
		var seen []string
		for e := range ch {
			if e.Ticket == "" {
				t.Errorf("event without a renewed ticket: %+v", e)
			}
			seen = append(seen, e.Status)
		}
		if len(seen) == 0 || seen[len(seen)-1] != "READY" || resp.Header.Get("Set-Cookie") == "" {
			t.Errorf("anonymous stream: %v, Set-Cookie %q", seen, resp.Header.Get("Set-Cookie"))
		}
		// A later visitor sees its position fall, at most once a second.
		_, ch = openStream(t, http.DefaultClient, r.URL+"/queue/events?room=tv", userHeader("later-2"))
		var prev event
		for e := range ch {
			if prev.Status == "WAITING" && e.Status == "WAITING" {
				if e.Position >= prev.Position || e.at.Sub(prev.at) < 900*time.Millisecond {
					t.Errorf("position event %d → %d after %v; want a change, at most once a second", prev.Position, e.Position, e.at.Sub(prev.at))
				}
			}
			prev = e
		}
		if prev.Status != "READY" {
			t.Errorf("later-2 ended on %+v", prev)
		}

		keysBefore := srv.Client().DBSize(context.Background()).Val()
		resp, _ = openStream(t, http.DefaultClient, r.URL+"/queue/events?room=tv", http.Header{"Cookie": {"wr_ticket=forged.v-x.1.AAAA"}})
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 401 || !strings.Contains(string(body), `"invalid_ticket"`) {
			t.Errorf("forged ticket: %d %s", resp.StatusCode, body)
		}
		resp, _ = openStream(t, http.DefaultClient, r.URL+"/queue/events?room=tv", nil)
		if resp.StatusCode != 401 {
			t.Errorf("no identity: %d", resp.StatusCode)
		}
		if after := srv.Client().DBSize(context.Background()).Val(); after > keysBefore {
			t.Errorf("refused streams created %d keys", after-keysBefore)
		}
	})
}

// The store's load does not grow with open streams: Redis commands per
// second with 500 streams open are within 2× of those with 20 (counted by
// redis-server itself, INFO commandstats), while every stream follows the
// line.
func TestStreamLoadIndependentOfStreamsOnRedisServer(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 520 streams")
	}
	rates := map[int]float64{}
	for _, streams := range []int{20, 500} {
		rates[streams] = commandsPerSecondOnRedisServer(t, streams)
	}
	ratio := rates[500] / rates[20]
	t.Logf("Redis commands/s: %.1f with 20 streams, %.1f with 500 (×%.2f)", rates[20], rates[500], ratio)
	if ratio >= 2 || ratio <= 0.5 {
		t.Errorf("commands/s with 500 streams are ×%.2f those with 20; want within 2×", ratio)
	}
}

func commandsPerSecondOnRedisServer(t *testing.T, streams int) float64 {
	r, srv := startRunner(t, redistest.RedisServer, map[string]string{"ADMIT_RATE_PER_SEC": "5", "QUEUE_CAPACITY": "10000", "STREAMS_PER_IP": "0"})
	rdb := srv.Client()
	// Fill the line with people ahead, then the streams' users behind them.
	const ahead = 100
	var wg sync.WaitGroup
	for i := range ahead + streams {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			enter(t, r, "tv", fmt.Sprintf("u%04d", i))
		}(i)
		if i%50 == 49 || i == ahead-1 {
			wg.Wait() // keep the ahead users in front
		}
	}
	wg.Wait()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams, MaxConnsPerHost: 0}}
	chans := make([]<-chan event, streams)
	for i := range streams {
		_, chans[i] = openStream(t, client, r.URL+"/queue/events?room=tv", userHeader(fmt.Sprintf("u%04d", ahead+i)))
	}
	for i, ch := range chans {
		if e := <-ch; e.Status != "WAITING" {
			t.Fatalf("stream %d: first event %+v", i, e)
		}
	}
	const window = 4 * time.Second
	if err := rdb.ConfigResetStat(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(window)
	calls := totalCalls(t, rdb)
	moved := 0
	for _, ch := range chans {
		select {
		case e := <-ch:
			if e.Status == "WAITING" {
				moved++
			}
		default:
		}
	}
	if moved < streams*9/10 {
		t.Errorf("%d streams: only %d were told of a new position", streams, moved)
	}
	return float64(calls) / window.Seconds()
}

// totalCalls sums the calls of every command since the last CONFIG RESETSTAT.
func totalCalls(t *testing.T, rdb *redis.Client) int64 {
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, line := range strings.Split(info, "\n") {
		_, stats, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.SplitN(stats, ",", 2)[0], 10, 64)
		total += n
	}
	return total
}

// A stream's positions, computed from the front of the line, are the
// store's: after each admission of one user the stream says what
// GET /queue/position says. Only this test admits, one user at a time
// (the runner's own admitter has a budget of one user per 1,000 s).
func TestStreamPositionIsTheStores(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		r, srv := startRunner(t, engine, map[string]string{"ADMIT_RATE_PER_SEC": "0.001", "ADMIT_INTERVAL_MS": "100"})
		position := func(user string) event {
			t.Helper()
			code, body := do(t, "GET", r.URL+"/queue/position?room=tv", user, nil)
			var e event
			if err := json.Unmarshal([]byte(body), &e); code != 200 || err != nil {
				t.Fatalf("position of %s: %d %s", user, code, body)
			}
			return e
		}
		for i := range 5 {
			enter(t, r, "tv", fmt.Sprintf("u%d", i))
		}
		// The runner's first batch spends its budget on u0.
		for deadline := time.Now().Add(5 * time.Second); position("u0").Status != "READY"; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the runner did not admit u0")
			}
		}
		other := r.Config
		other.AdmitRatePerSec, other.AdmitInterval = 10, 100*time.Millisecond // one user a batch
		admitter := redisstore.New(srv.Client(), other)
		admitOne := func() {
			t.Helper()
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				b, err := admitter.AdmitBatch(context.Background())
				if err != nil || time.Now().After(deadline) {
					t.Fatalf("admitting one user: %+v %v", b, err)
				}
				if len(b.Rooms) > 0 && len(b.Rooms[0].Admitted) == 1 {
					return
				}
			}
		}
		_, ch := openStream(t, http.DefaultClient, r.URL+"/queue/events?room=tv", userHeader("u4"))
		seen := 0
		for e := range ch {
			if e.Status != "WAITING" {
				break
			}
			if want := position("u4"); e.Position != want.Position {
				t.Fatalf("stream position %d, GET /queue/position %d", e.Position, want.Position)
			}
			seen++
			admitOne()
		}
		if seen < 3 {
			t.Fatalf("only %d WAITING events", seen)
		}
	})
}
