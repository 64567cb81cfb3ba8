package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
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
	res.MemLinePerUser = lineMemory(b, c, &res) / float64(large)
	res.MemMarks = c.ZCard(ctx, "wr:{bench}:marks").Val()
	res.MemUserIDBytes = len("h:" + uid("u", 0))
	res.MemFieldBytes, res.MemKeyBytes = len(field), len(bucket)
	res.MemBorn, _ = c.HGet(ctx, bucket, "b").Int64()
	res.FillMethod = fmt.Sprintf("Store.Enter from 16 goroutines, ids %q…", "h:"+uid("u", 0))
	res.FillSeconds = fill.Seconds()
	resMu.Lock()
	scaleRuns = append(scaleRuns, res)
	resMu.Unlock()
	b.ReportMetric(lUs/sUs, "position-1M/10k")
	b.ReportMetric(float64(after-before)/float64(large), "B/user")
}

// lineMemory is MEMORY USAGE of the line's keys, the accounts' buckets and
// the draws, and records what the report's model of the buckets reads: how
// many buckets, how many records each, and the keyspace's keys and expires
// (its two hash tables are sized by them).
func lineMemory(b *testing.B, c *redis.Client, res *sim.MicroResults) float64 {
	ctx := context.Background()
	buckets := c.Keys(ctx, redisstore.AccountPattern("bench")).Val()
	res.MemBuckets, res.MemBucketSizes = len(buckets), map[int]int{}
	var bucketBytes int64
	for part := range slices.Chunk(buckets, 1000) {
		usage, records := make([]*redis.IntCmd, len(part)), make([]*redis.IntCmd, len(part))
		if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, key := range part {
				usage[i], records[i] = p.MemoryUsage(ctx, key, 0), p.HLen(ctx, key)
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		for i := range part {
			bucketBytes += usage[i].Val()
			res.MemBucketSizes[int(records[i].Val())-1]++ // less its 'b'
		}
	}
	draws := c.MemoryUsage(ctx, redisstore.LineKey("bench"), 0).Val() // 0: no draws, no key
	res.MemBucketsPerUser = float64(bucketBytes) / float64(res.MemUsers)
	res.MemDrawsPerUser = float64(draws) / float64(res.MemUsers)
	res.MemKeys = c.DBSize(ctx).Val()
	keyspace := c.Info(ctx, "keyspace").Val()
	if _, v, ok := strings.Cut(keyspace, "expires="); ok {
		res.MemExpires, _ = strconv.ParseInt(strings.SplitN(v, ",", 2)[0], 10, 64)
	}
	return float64(bucketBytes + draws)
}
