package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/bench/spike/sim"
	"github.com/waitroom/waitroom/redisstore"
)

// BenchmarkPositionScale: position latency (one client, through the
// handler) with 10k and then 1M users waiting, and Redis memory per waiting
// user at 1M. The line is filled through Store.Enter itself, from 16
// goroutines, so that it holds exactly what enter leaves (the line's keys,
// the sequence and the marks) whatever the store's layout. BENCH_USERS
// overrides 1M.
func BenchmarkPositionScale(b *testing.B) {
	small, large := 10_000, 1_000_000
	if v, err := strconv.Atoi(os.Getenv("BENCH_USERS")); err == nil && v > small {
		large = v
	}
	c := client(b, 16)
	ctx := context.Background()
	if b.N < minOps {
		// Probe run: one call, nothing recorded.
		return
	}
	flush(b, c)
	before, err := sim.InfoField(ctx, c, "memory", "used_memory")
	if err != nil {
		b.Fatal(err)
	}
	store := redisstore.New(c, config())
	t0 := time.Now()
	enter := func(from, to int) {
		var next atomic.Int64
		next.Store(int64(from))
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(next.Add(1)) - 1; i < to; i = int(next.Add(1)) - 1 {
					if _, err := store.Enter(ctx, "bench", waitroom.Unlimited("h:"+uid("u", i))); err != nil { // as X-User-Id names it
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	a := api(c, config(), nil)
	q := map[string]string{"room": "bench"}
	bucket, field := redisstore.AccountKey("bench", "h:u0") // one account's record (line.lua)
	measure := func(n int) (handlerUs, lookupUs float64) {
		r := rand.New(rand.NewPCG(1, 2))
		start := time.Now()
		for i := 0; i < b.N; i++ {
			resp := a.Route(ctx, event(http.MethodGet, "/queue/position", uid("u", r.IntN(n)), nil, q))
			if resp.StatusCode != 200 {
				b.Fatalf("position: %d %s", resp.StatusCode, resp.Body)
			}
		}
		handlerUs = float64(time.Since(start).Microseconds()) / float64(b.N)
		ops := redisBenchmark(b, 1, b.N, n, "HMGET", bucket, field, "b")
		return handlerUs, 1e6 / ops
	}
	enter(0, small)
	sUs, sL := measure(small)
	enter(small, large)
	fill := time.Since(t0)
	after, err := sim.InfoField(ctx, c, "memory", "used_memory")
	if err != nil {
		b.Fatal(err)
	}
	lUs, lL := measure(large)
	if n, err := redisstore.LineLength(ctx, c, "bench"); err != nil || n != int64(large) {
		b.Fatalf("line holds %d users (%v), want %d", n, err, large)
	}
	var res sim.MicroResults
	res.Redis = srv.Addr
	res.PositionSmallN, res.PositionLargeN = small, large
	res.PositionSmallUs, res.PositionLargeUs, res.PositionRatio = sUs, lUs, lUs/sUs
	res.LookupSmallUs, res.LookupLargeUs = sL, lL
	res.MemUsers, res.MemBefore, res.MemAfter = large, before, after
	res.MemPerUser = float64(after-before) / float64(large)
	var lineBytes int64
	for _, key := range append(c.Keys(ctx, redisstore.AccountPattern("bench")).Val(), redisstore.LineKey("bench")) {
		lineBytes += c.MemoryUsage(ctx, key, 0).Val()
	}
	res.MemLinePerUser = float64(lineBytes) / float64(large)
	res.MemMarks = c.ZCard(ctx, "wr:{bench}:marks").Val()
	res.MemUserIDBytes = len("h:" + uid("u", 0))
	res.FillMethod = fmt.Sprintf("Store.Enter from 16 goroutines, ids %q…", "h:"+uid("u", 0))
	res.FillSeconds = fill.Seconds()
	resMu.Lock()
	scaleRuns = append(scaleRuns, res)
	resMu.Unlock()
	b.ReportMetric(lUs/sUs, "position-1M/10k")
	b.ReportMetric(float64(after-before)/float64(large), "B/user")
}
