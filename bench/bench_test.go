package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/bench/spike/sim"
	"github.com/waitroom/waitroom/redisstore"
)

// Concurrency of the side-by-side runs (goroutines in Go, -c in redis-benchmark).
const concurrency = 50

// Pinned mode (make bench-micro-pinned): redis-server spawned on CPU
// BENCH_REDIS_CPU and redis-benchmark run on BENCH_CLIENT_CPU (taskset -c);
// the make target runs this test binary itself on BENCH_CLIENT_CPU with
// GOMAXPROCS=1, so that both clients get the same single core and Redis
// its own.
var (
	redisCPU  = os.Getenv("BENCH_REDIS_CPU")
	clientCPU = os.Getenv("BENCH_CLIENT_CPU")
)

var (
	srv     *sim.Redis
	results = &sim.MicroResults{}
	resMu   sync.Mutex
	// Every run of each operation and of the scale benchmark (-count=N):
	// BENCH_OUT gets the run with the median ratio, and all the ratios.
	opRuns    = map[string][]sim.MicroOp{}
	scaleRuns []sim.MicroResults
)

func TestMain(m *testing.M) {
	if !isBench() {
		os.Exit(m.Run()) // plain `go test ./...`: nothing to do here
	}
	var err error
	switch url := os.Getenv("REDIS_URL"); {
	case url != "" && redisCPU == "":
		srv, err = sim.UseRedis(url)
	case url != "":
		err = fmt.Errorf("BENCH_REDIS_CPU pins a redis-server this run spawns: unset REDIS_URL")
	default:
		srv, err = sim.StartRedisOn(redisCPU)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	results.Mode, results.RedisCPUs, results.ClientCPUs, results.GOMAXPROCS = "unpinned", redisCPU, sim.AllowedCPUs(), runtime.GOMAXPROCS(0)
	if redisCPU != "" {
		results.Mode = "pinned"
		fmt.Fprintf(os.Stderr, "pinned: redis-server on CPU %s, this process (Go side) on CPUs %s with GOMAXPROCS %d, redis-benchmark on CPUs %s\n",
			redisCPU, results.ClientCPUs, results.GOMAXPROCS, clientCPU)
	}
	code := m.Run()
	if out := os.Getenv("BENCH_OUT"); out != "" && code == 0 {
		medians()
		b, _ := json.Marshal(results)
		if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	srv.Stop()
	os.Exit(code)
}

func isBench() bool {
	for _, a := range os.Args {
		if strings.HasPrefix(a, "-test.bench=") && a != "-test.bench=" {
			return true
		}
	}
	return false
}

func client(tb testing.TB, pool int) *redis.Client {
	opt, err := redis.ParseURL(srv.URL)
	if err != nil {
		tb.Fatal(err)
	}
	opt.PoolSize = pool
	c := redis.NewClient(opt)
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

func flush(tb testing.TB, c *redis.Client) {
	if err := c.FlushAll(context.Background()).Err(); err != nil {
		tb.Fatal(err)
	}
}

func config() waitroom.Config {
	return waitroom.Config{AdmitRatePerSec: 100, AdmitInterval: 100 * time.Millisecond, AdmitBatches: 1,
		EntryTokenTTL: 300 * time.Second, QueueCapacity: 100_000_000, OrderTimeout: 10 * time.Second, TrustUserHeader: true, OpenRooms: true, OrderRooms: []string{"bench"}}
}

func event(method, path, user string, hdr map[string]string, query map[string]string) events.APIGatewayV2HTTPRequest {
	h := map[string]string{"x-user-id": user, "content-type": "application/json"}
	for k, v := range hdr {
		h[k] = v
	}
	return events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: path, Headers: h, QueryStringParameters: query,
		RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path}}}
}

func uid(prefix string, i int) string { return fmt.Sprintf("%s%012d", prefix, i) }

// parallel runs op b.N times over concurrency goroutines and returns ops/s
// and the latency percentiles.
func parallel(b *testing.B, conc int, op func(r *rand.Rand, i int) error) (opsPerSec, p50, p99 float64) {
	var next atomic.Int64
	lat := make([][]float64, conc)
	var wg sync.WaitGroup
	var failed atomic.Value
	b.ResetTimer()
	start := time.Now()
	for g := 0; g < conc; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				t := time.Now()
				if err := op(r, i); err != nil {
					failed.Store(err)
					return
				}
				lat[g] = append(lat[g], float64(time.Since(t).Microseconds()))
			}
		}(g)
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	var all []float64
	for _, l := range lat {
		all = append(all, l...)
	}
	p := sim.Percentiles(all, 50, 99)
	return float64(b.N) / el.Seconds(), p[0], p[1]
}

var rpsRe = regexp.MustCompile(`([0-9.]+) requests per second`)

// redisBenchmark runs redis-benchmark with one command and returns ops/s.
func redisBenchmark(b *testing.B, conc, n, keyspace int, args ...string) float64 {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		b.Fatalf("redis-benchmark not found (redis-tools; run `make redis-server`): %v", err)
	}
	host, port, _ := strings.Cut(srv.Addr, ":")
	cmd := append([]string{"-h", host, "-p", port, "-c", strconv.Itoa(conc), "-n", strconv.Itoa(n), "-r", strconv.Itoa(keyspace), "-q"}, args...)
	if clientCPU != "" {
		ts, err := exec.LookPath("taskset")
		if err != nil {
			b.Fatalf("taskset not found (util-linux): %v", err)
		}
		cmd = append([]string{"-c", clientCPU, bin}, cmd...)
		bin = ts
	}
	out, err := exec.Command(bin, cmd...).CombinedOutput()
	if err != nil {
		b.Fatalf("redis-benchmark: %v\n%s", err, out)
	}
	m := rpsRe.FindAllSubmatch(out, -1)
	if len(m) == 0 {
		b.Fatalf("redis-benchmark output not understood:\n%s", out)
	}
	v, _ := strconv.ParseFloat(string(m[len(m)-1][1]), 64)
	return v
}

func record(op sim.MicroOp) {
	resMu.Lock()
	defer resMu.Unlock()
	opRuns[op.Name] = append(opRuns[op.Name], op)
}

// medians keeps, of each operation's runs, the one with the median ratio
// (its ops/s and latencies are of that same run), and lists every ratio.
func medians() {
	results.Ops = nil
	for _, runs := range opRuns {
		sort.Slice(runs, func(i, j int) bool { return runs[i].Ratio < runs[j].Ratio })
		op := runs[(len(runs)-1)/2]
		for _, r := range runs {
			op.RatioRuns = append(op.RatioRuns, r.Ratio)
		}
		results.Ops = append(results.Ops, op)
	}
	sort.SliceStable(results.Ops, func(i, j int) bool { return opOrder[results.Ops[i].Name] < opOrder[results.Ops[j].Name] })
	if len(scaleRuns) > 0 {
		sort.Slice(scaleRuns, func(i, j int) bool { return scaleRuns[i].PositionRatio < scaleRuns[j].PositionRatio })
		ops, mode, rcpu, ccpu, procs := results.Ops, results.Mode, results.RedisCPUs, results.ClientCPUs, results.GOMAXPROCS
		*results = scaleRuns[(len(scaleRuns)-1)/2]
		results.Ops, results.Mode, results.RedisCPUs, results.ClientCPUs, results.GOMAXPROCS = ops, mode, rcpu, ccpu, procs
		for _, r := range scaleRuns {
			results.PositionRatioRuns = append(results.PositionRatioRuns, r.PositionRatio)
		}
	}
	results.Redis = srv.Addr
}

var opOrder = map[string]int{"enter": 0, "position": 1, "gate check": 2, "admit batch": 3}

func finish(b *testing.B, op sim.MicroOp) {
	op.Ratio = op.GoOpsPerSec / op.RedisBenchPerSec
	b.ReportMetric(op.GoOpsPerSec, "ops/s")
	b.ReportMetric(op.RedisBenchPerSec, "redis-benchmark-ops/s")
	b.ReportMetric(op.Ratio, "ratio")
	record(op)
}

// fillLine puts n users u%012d (from `from`) at the back of room's line
// (redisstore.Append: no marks, no limiter: only the line matters to these
// benchmarks), as the store keeps the users X-User-Id names: "h:<id>".
func fillLine(tb testing.TB, c *redis.Client, room, prefix string, from, n int) {
	users := make([]string, n)
	for i := range users {
		users[i] = "h:" + uid(prefix, from+i)
	}
	if _, err := redisstore.Append(context.Background(), c, room, users); err != nil {
		tb.Fatal(err)
	}
}
