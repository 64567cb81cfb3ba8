package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/bench/spike/sim"
)

// BenchmarkPositionScale: position latency (one client, through the
// handler) with 10k and then 1M users waiting, and Redis memory per waiting
// user at 1M. The line is filled with the enter script itself, in
// pipelines of 1,000 EVALSHA, so that it holds exactly what enter leaves:
// the line, the sequence and the marks. BENCH_USERS overrides 1M.
func BenchmarkPositionScale(b *testing.B) {
	small, large := 10_000, 1_000_000
	if v, err := strconv.Atoi(os.Getenv("BENCH_USERS")); err == nil && v > small {
		large = v
	}
	c := client(b, 4)
	ctx := context.Background()
	if b.N < minOps {
		// Probe run: one call, nothing recorded.
		return
	}
	flush(b, c)
	sha := script(b, c, "enter.lua")
	before, err := sim.InfoField(ctx, c, "memory", "used_memory")
	if err != nil {
		b.Fatal(err)
	}
	k := "wr:{bench}:"
	t0 := time.Now()
	enter := func(from, to int) {
		for i := from; i < to; i += 1000 {
			p := c.Pipeline()
			for j := i; j < min(i+1000, to); j++ {
				u := "h:" + uid("u", j) // as X-User-Id names it
				p.EvalSha(ctx, sha, []string{k + "settings", k + "line", k + "seq", k + "u:" + u, k + "marks", k + "budget", k + "tokens", k + "buckets"},
					"100:100000000:300000:1", u, 0.5, 60_000, 500_000, 0, "c", 0, 0, "a", 0, 0, "v", 0, 0) // Store.Enter's layout, the limiter off
			}
			if _, err := p.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	a := api(c, config(), nil)
	q := map[string]string{"room": "bench"}
	measure := func(n int) (handlerUs, zrankUs float64) {
		r := rand.New(rand.NewPCG(1, 2))
		start := time.Now()
		for i := 0; i < b.N; i++ {
			resp := a.Route(ctx, event(http.MethodGet, "/queue/position", uid("u", r.IntN(n)), nil, q))
			if resp.StatusCode != 200 {
				b.Fatalf("position: %d %s", resp.StatusCode, resp.Body)
			}
		}
		handlerUs = float64(time.Since(start).Microseconds()) / float64(b.N)
		ops := redisBenchmark(b, 1, b.N, n, "ZRANK", k+"line", "h:u__rand_int__")
		return handlerUs, 1e6 / ops
	}
	enter(0, small)
	sUs, sZ := measure(small)
	enter(small, large)
	fill := time.Since(t0)
	after, err := sim.InfoField(ctx, c, "memory", "used_memory")
	if err != nil {
		b.Fatal(err)
	}
	lUs, lZ := measure(large)
	lineBytes, _ := c.MemoryUsage(ctx, k+"line", 0).Result()
	marks, _ := c.ZCard(ctx, k+"marks").Result()
	if n, _ := c.ZCard(ctx, k+"line").Result(); n != int64(large) {
		b.Fatalf("line holds %d users, want %d", n, large)
	}
	var res sim.MicroResults
	res.Redis = srv.Addr
	res.PositionSmallN, res.PositionLargeN = small, large
	res.PositionSmallUs, res.PositionLargeUs, res.PositionRatio = sUs, lUs, lUs/sUs
	res.ZrankSmallUs, res.ZrankLargeUs = sZ, lZ
	res.MemUsers, res.MemBefore, res.MemAfter = large, before, after
	res.MemPerUser = float64(after-before) / float64(large)
	res.MemLinePerUser = float64(lineBytes) / float64(large)
	res.MemMarks = marks
	res.MemUserIDBytes = len(uid("u", 0))
	res.FillMethod = fmt.Sprintf("the enter script (EVALSHA enter.lua) in pipelines of 1,000, ids %q…", uid("u", 0))
	res.FillSeconds = fill.Seconds()
	resMu.Lock()
	scaleRuns = append(scaleRuns, res)
	resMu.Unlock()
	b.ReportMetric(lUs/sUs, "position-1M/10k")
	b.ReportMetric(float64(after-before)/float64(large), "B/user")
}

var _ = redis.Nil
