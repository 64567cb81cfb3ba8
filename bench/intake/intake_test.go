// Package intake measures intake (issue 13): acceptance throughput and
// latency of POST /queue/enter with INTAKE=direct (straight to redis-server)
// against INTAKE=broker (signed receipt, sent to a local SQS-compatible
// server), through the local runner over HTTP; and how long the consumer
// takes to drain a spike of 10,000 accepted entries, both on the store side
// alone (batches of ten, as the event source mapping delivers them) and end
// to end through the local SQS-compatible server. Run it with
// `make bench-intake`; it is a measurement, not a check, and is skipped
// unless WAITROOM_INTAKE_BENCH is set.
package intake

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/runnertest"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/intake"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/sqstest"
	"github.com/waitroom/waitroom/localrun"
	"github.com/waitroom/waitroom/redisstore"
)

// The load: clients enter back to back, each as a new user.
const (
	clients  = 32
	requests = 10_000
	spike    = 10_000
)

type acceptance struct {
	Intake     string  `json:"intake"`
	Clients    int     `json:"clients"`
	Requests   int     `json:"requests"`
	Failed     int64   `json:"failed"`
	PerSecond  float64 `json:"perSecond"`
	P50Ms      float64 `json:"p50Ms"`
	P95Ms      float64 `json:"p95Ms"`
	P99Ms      float64 `json:"p99Ms"`
	StatusSeen int     `json:"status"`
}

type drain struct {
	Path    string  `json:"path"`
	Entries int     `json:"entries"`
	Seconds float64 `json:"seconds"`
	PerSec  float64 `json:"perSecond"`
}

type results struct {
	Machine    string       `json:"machine"`
	Acceptance []acceptance `json:"acceptance"`
	Drain      []drain      `json:"drain"`
}

func TestIntakeBench(t *testing.T) {
	if os.Getenv("WAITROOM_INTAKE_BENCH") == "" {
		t.Skip("a measurement: run `make bench-intake` (WAITROOM_INTAKE_BENCH=1)")
	}
	r := results{Machine: fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), redistest.Version())}
	for _, mode := range []waitroom.Intake{waitroom.IntakeDirect, waitroom.IntakeBroker} {
		a := accept(t, mode)
		t.Logf("%-6s %d requests, %d clients: %.0f/s, p50 %.2f ms, p95 %.2f ms, p99 %.2f ms, %d failed",
			a.Intake, a.Requests, a.Clients, a.PerSecond, a.P50Ms, a.P95Ms, a.P99Ms, a.Failed)
		r.Acceptance = append(r.Acceptance, a)
	}
	for _, d := range []drain{drainStore(t), drainThroughBroker(t)} {
		t.Logf("drain %-22s %d entries in %.2f s (%.0f/s)", d.Path, d.Entries, d.Seconds, d.PerSec)
		r.Drain = append(r.Drain, d)
	}
	if out := os.Getenv("INTAKE_OUT"); out != "" {
		b, _ := json.MarshalIndent(r, "", "  ")
		if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// runner starts the local runner on a fresh redis-server in mode.
func runner(t *testing.T, mode waitroom.Intake, queueURL string) (*localrun.Runner, *redistest.Server) {
	srv := redistest.Start(t)
	env := map[string]string{"REDIS_URL": srv.URL(), "ADDR": "127.0.0.1:0", "INTAKE": string(mode), "INTAKE_QUEUE_URL": queueURL,
		"ADMIT_RATE_PER_SEC": "0.001", "QUEUE_CAPACITY": "1000000"}
	return runnertest.Start(t, runnertest.Config(t, env)), srv
}

func accept(t *testing.T, mode waitroom.Intake) acceptance {
	queue, err := sqstest.NewQueue(fmt.Sprintf("accept-%s-%d", mode, time.Now().UnixNano()), 30, false)
	if err != nil {
		t.Fatal(err)
	}
	run, _ := runner(t, mode, queue)
	lat, failed, took := load(run.URL, requests, "u")
	slices.Sort(lat)
	status := http.StatusOK
	if mode == waitroom.IntakeBroker {
		status = http.StatusAccepted
	}
	return acceptance{Intake: string(mode), Clients: clients, Requests: requests, Failed: failed, StatusSeen: status,
		PerSecond: float64(requests) / took.Seconds(), P50Ms: pct(lat, 50), P95Ms: pct(lat, 95), P99Ms: pct(lat, 99)}
}

// load sends n enters from clients goroutines and returns each one's latency.
func load(base string, n int, prefix string) (lat []float64, failed int64, took time.Duration) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var next atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Go(func() {
			var mine []float64
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				req, _ := http.NewRequest(http.MethodPost, base+"/queue/enter", nil)
				req.Header.Set("X-User-Id", prefix+strconv.FormatInt(i, 10))
				t0 := time.Now()
				resp, err := client.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				mine = append(mine, float64(time.Since(t0).Microseconds())/1000)
				if err != nil || resp.StatusCode >= 300 {
					atomic.AddInt64(&failed, 1)
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return lat, failed, time.Since(start)
}

// drainStore applies a spike through the consumer in batches of ten, as
// the event source mapping hands them over: the store's side of the drain.
func drainStore(t *testing.T) drain {
	srv := redistest.Start(t)
	rdb := srv.Client()
	cfg := waitroom.Config{QueueCapacity: 1_000_000, AdmitRatePerSec: 1, AdmitInterval: time.Second, OpenRooms: true}
	c := &intake.Consumer{Store: redisstore.New(rdb, cfg)}
	var msgs []intake.Message
	now := time.Now()
	for i := range spike {
		body, _ := intake.Encode(waitroom.Entry{Room: "spike", User: "u" + strconv.Itoa(i), AcceptedAt: now})
		msgs = append(msgs, intake.Message{ID: strconv.Itoa(i), Body: body})
	}
	start := time.Now()
	for b := range slices.Chunk(msgs, 10) {
		if done, err := c.Apply(context.Background(), b); err != nil || done != len(b) {
			t.Fatalf("apply: %d %v", done, err)
		}
	}
	took := time.Since(start)
	if n, err := redisstore.LineLength(context.Background(), rdb, "spike"); err != nil || n != spike {
		t.Fatalf("%d in line, want %d", n, spike)
	}
	return drain{Path: "store (batches of 10)", Entries: spike, Seconds: took.Seconds(), PerSec: spike / took.Seconds()}
}

// drainThroughBroker accepts a spike through the local runner in broker
// mode and times until every entry is in line: the local SQS-compatible
// server, one message a receive (internal/sqstest says why), and the store.
func drainThroughBroker(t *testing.T) drain {
	queue, err := sqstest.NewQueue(fmt.Sprintf("drain-%d", time.Now().UnixNano()), 30, false)
	if err != nil {
		t.Fatal(err)
	}
	run, srv := runner(t, waitroom.IntakeBroker, queue)
	start := time.Now()
	if _, failed, _ := load(run.URL, spike, "d"); failed > 0 {
		t.Fatalf("%d enters failed", failed)
	}
	rdb := srv.Client()
	deadline := time.Now().Add(10 * time.Minute)
	// The runner's admission lets one visitor a batch through even at its
	// slowest rate, so count joins (the room's counter, the number it gives
	// next: line.lua), not the line.
	joined := func() int {
		n, _ := rdb.HGet(context.Background(), "wr:{default}:settings", "next").Int()
		return max(0, n-1)
	}
	for n := joined(); n < spike; n = joined() {
		if time.Now().After(deadline) {
			t.Fatal("not drained in 10 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	return drain{Path: "end to end (local SQS)", Entries: spike, Seconds: took.Seconds(), PerSec: spike / took.Seconds()}
}

func pct(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
