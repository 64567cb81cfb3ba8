// Package notify measures how long after admission a visitor's client
// knows it is their turn: with the live stream (GET /queue/events), when the
// process serving it admitted the visitor and when another process did, and
// with polling as pollAfterMs says. Run it with `make bench-notify`; it is a
// measurement, not a check, and is skipped unless WAITROOM_NOTIFY_BENCH is set.
package notify

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/bench/spike/sim"
	"github.com/waitroom/waitroom/envconfig"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/localrun"
	"github.com/waitroom/waitroom/redisstore"
)

// The scenario: a spike of visitors enters at once and is admitted at
// rate per second; the first warmup seconds of admissions are left out,
// since those visitors may be admitted before their client has even connected.
const (
	visitors = 400
	rate     = 20
	warmup   = 2 * time.Second
	tokenTTL = 300 * time.Second
)

func TestNotifyLatency(t *testing.T) {
	if os.Getenv("WAITROOM_NOTIFY_BENCH") == "" {
		t.Skip("a measurement: run `make bench-notify` (WAITROOM_NOTIFY_BENCH=1)")
	}
	out := sim.NotifyResults{Machine: sim.DescribeHost(), Started: time.Now().UTC().Format(time.RFC3339),
		Scenario: sim.NotifyScenario{Visitors: visitors, AdmitRatePerSec: rate, AdmitIntervalMs: waitroom.DefaultAdmitIntervalMs,
			WarmupSeconds: warmup.Seconds(), EntryTokenTTLSeconds: int64(tokenTTL.Seconds())}}
	for _, mode := range []string{sim.NotifySSE, sim.NotifySSEElsewhere, sim.NotifyPoll} {
		r, redis := measure(t, mode)
		t.Logf("%-22s admission → client knows: p50 %.0f ms, p95 %.0f ms, max %.0f ms over %d visitors; %d requests",
			r.Mode, r.P50Ms, r.P95Ms, r.MaxMs, r.Visitors, r.Requests)
		out.Results = append(out.Results, r)
		out.Machine.Redis = redis
	}
	out.Finished = time.Now().UTC().Format(time.RFC3339)
	if path := os.Getenv("NOTIFY_OUT"); path != "" {
		b, _ := json.MarshalIndent(out, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// measure plays the scenario with one way of listening; it returns the
// figures and the redis-server version it ran against.
func measure(t *testing.T, mode string) (sim.NotifyResult, string) {
	srv := redistest.Start(t)
	localRate := strconv.Itoa(rate)
	if mode == sim.NotifySSEElsewhere {
		localRate = "0.001" // this process admits one visitor in 1000 s; another admits the rest
	}
	cfg, err := envconfig.Load(func(k string) (string, bool) {
		v, ok := map[string]string{"REDIS_URL": srv.URL(), "ADDR": "127.0.0.1:0", "ADMIT_RATE_PER_SEC": localRate,
			"ADMIT_INTERVAL_MS":       strconv.Itoa(waitroom.DefaultAdmitIntervalMs),
			"ENTRY_TOKEN_TTL_SECONDS": strconv.Itoa(int(tokenTTL.Seconds())),
			// Every visitor streams from this machine's one address, as
			// behind a proxy: the per-address cap would refuse all but 10.
			"STREAMS_PER_IP": "0"}[k]
		return v, ok
	}, envconfig.Local)
	if err != nil {
		t.Fatal(err)
	}
	run, err := localrun.Start(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if mode == sim.NotifySSEElsewhere {
		other := cfg
		other.AdmitRatePerSec = rate
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			a := &waitroom.Admitter{Queue: redisstore.New(srv.Client(), other), Interval: cfg.AdmitInterval, Batches: 10}
			localrun.AdmitForever(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), a)
		}()
		defer func() { stop(); <-done }()
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: visitors}}
	rdb := srv.Client()

	var requests atomic.Int64
	knew := make([]time.Time, visitors)
	numbers := make([]int64, visitors)
	var wg sync.WaitGroup
	for i := range visitors {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			user := fmt.Sprintf("visitor-%04d", i)
			c := &visitor{client: client, base: run.URL, user: user, requests: &requests}
			var err error
			if strings.HasPrefix(mode, "sse") {
				knew[i], err = c.stream()
			} else {
				knew[i], err = c.poll()
			}
			numbers[i] = c.number
			if err != nil {
				t.Errorf("%s: %v", user, err)
			}
		}(i)
	}
	wg.Wait()

	// The store's own clock says when each visitor was admitted: a holder
	// of a number when a batch passed it (admit.lua's batches, "first:at
	// ms"; the holder claims its token at its next call, which is what its
	// client hears), one admitted at its enter without a number when its
	// token record was made (its expiry minus ENTRY_TOKEN_TTL_SECONDS).
	admitted := make([]time.Time, visitors)
	first := time.Time{}
	for i := range visitors {
		admitted[i] = admittedAt(t, rdb, fmt.Sprintf("visitor-%04d", i), numbers[i])
		if first.IsZero() || admitted[i].Before(first) {
			first = admitted[i]
		}
	}
	var lags []float64
	for i := range visitors {
		if admitted[i].Sub(first) < warmup {
			continue
		}
		lags = append(lags, float64(knew[i].Sub(admitted[i]).Microseconds())/1000)
	}
	slices.Sort(lags)
	return sim.NotifyResult{Mode: mode, Visitors: len(lags), P50Ms: pct(lags, 0.50), P95Ms: pct(lags, 0.95), MaxMs: lags[len(lags)-1],
		Requests: requests.Load()}, "redis-server " + sim.ServerVersion(context.Background(), rdb)
}

// admittedAt is when the store admitted user: the time of the batch that
// passed its number n, or, with no number (admitted at its enter), its
// token record's expiry minus the token's life.
func admittedAt(t *testing.T, rdb redis.UniversalClient, user string, n int64) time.Time {
	ctx := context.Background()
	if n > 0 {
		got, err := rdb.ZRangeByScore(ctx, "wr:{tv}:batches", &redis.ZRangeBy{Min: strconv.FormatInt(n, 10), Max: "+inf", Count: 1}).Result()
		if err != nil || len(got) == 0 {
			t.Fatalf("the batch of %s's number %d: %v %v", user, n, got, err)
		}
		firstN, at, _ := strings.Cut(got[0], ":")
		if f, _ := strconv.ParseInt(firstN, 10, 64); f > n {
			t.Fatalf("no batch holds %s's number %d (next: %s)", user, n, got[0])
		}
		ms, _ := strconv.ParseInt(at, 10, 64)
		return time.UnixMilli(ms)
	}
	rec, err := rdb.Get(ctx, "wr:{tv}:u:h:"+user /* X-User-Id */).Result()
	if err != nil {
		t.Fatalf("token record of %s: %v", user, err)
	}
	ms, _, _ := strings.Cut(rec, ":")
	exp, _ := strconv.ParseInt(ms, 10, 64)
	return time.UnixMilli(exp).Add(-tokenTTL)
}

func pct(sorted []float64, p float64) float64 {
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

type visitor struct {
	client   *http.Client
	base     string
	user     string
	place    string // the signed place its answers give, sent back as a client does (docs/API.md, "An account's place")
	number   int64  // its number in the line, as its answers give it (0: admitted at its enter)
	requests *atomic.Int64
}

type standing struct {
	Status      string `json:"status"`
	PollAfterMs *int64 `json:"pollAfterMs"`
	Place       string `json:"place"`
	Number      int64  `json:"number"`
}

func (v *visitor) do(method, path string) (*http.Response, error) {
	req, _ := http.NewRequest(method, v.base+path, nil)
	req.Header.Set("X-User-Id", v.user)
	if v.place != "" {
		req.Header.Set("X-Queue-Place", v.place)
	}
	v.requests.Add(1)
	return v.client.Do(req)
}

func (v *visitor) call(method, path string) (standing, error) {
	resp, err := v.do(method, path)
	if err != nil {
		return standing{}, err
	}
	defer resp.Body.Close()
	var s standing
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return s, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	err = json.NewDecoder(resp.Body).Decode(&s)
	if s.Place != "" {
		v.place = s.Place
	}
	if s.Number > 0 {
		v.number = s.Number
	}
	return s, err
}

// poll enters and asks again exactly when pollAfterMs says, as the page does.
func (v *visitor) poll() (time.Time, error) {
	s, err := v.call("POST", "/queue/enter?room=tv")
	for err == nil && s.Status == "WAITING" {
		time.Sleep(time.Duration(*s.PollAfterMs) * time.Millisecond)
		s, err = v.call("GET", "/queue/position?room=tv")
	}
	if err == nil && s.Status != "READY" {
		err = fmt.Errorf("ended %s", s.Status)
	}
	return time.Now(), err
}

// stream enters, then follows GET /queue/events until READY.
func (v *visitor) stream() (time.Time, error) {
	if _, err := v.call("POST", "/queue/enter?room=tv"); err != nil {
		return time.Time{}, err
	}
	resp, err := v.do("GET", "/queue/events?room=tv")
	if err != nil {
		return time.Time{}, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	last := ""
	for sc.Scan() {
		last = sc.Text()
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var s standing
		if err := json.Unmarshal([]byte(data), &s); err != nil {
			return time.Time{}, err
		}
		if s.Number > 0 {
			v.number = s.Number
		}
		if s.Status == "READY" {
			return time.Now(), nil
		}
	}
	return time.Time{}, fmt.Errorf("the stream (%d) ended before READY, its last line %q: %v", resp.StatusCode, last, sc.Err())
}
