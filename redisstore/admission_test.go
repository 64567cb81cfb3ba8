package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// Four admitters running at once for 5 s admit no more than the rate allows
// (plus one batch), nearly all of it, nobody twice, and strictly in the
// order users entered, while new users keep arriving.
func TestConcurrentAdmittersKeepRateAndOrder(t *testing.T) {
	t.Parallel() // a fixed 5 s window; the floor counts late batches, as under load (own store)
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		if testing.Short() {
			t.Skip("5 s of admission")
		}
		ctx := context.Background()
		cfg := testConfig() // 100/s, batches of 10 every 100 ms
		s, _ := newStore(t, engine, cfg)

		const prefill = 1000
		for i := 0; i < prefill; i++ {
			if _, err := s.Enter(ctx, "sale", waitroom.Unlimited(fmt.Sprintf("early-%04d", i))); err != nil {
				t.Fatal(err)
			}
		}

		var mu sync.Mutex
		admittedBy := map[int64]int{} // number → admissions (early-i holds number i+1)
		var batchTimes []time.Time
		record := func(b waitroom.Batch) {
			mu.Lock()
			defer mu.Unlock()
			batchTimes = append(batchTimes, time.Now())
			for _, r := range b.Rooms {
				for _, a := range r.Admitted {
					admittedBy[a.Number]++
				}
			}
		}

		const admitters = 4
		const window = 5 * time.Second
		runCtx, cancel := context.WithTimeout(ctx, window)
		defer cancel()
		var wg sync.WaitGroup
		start := time.Now()
		for i := 0; i < admitters; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a := &waitroom.Admitter{Queue: s, Interval: cfg.AdmitInterval, Batches: 1 << 20, OnBatch: record}
				_, _ = a.Run(runCtx)
			}()
		}
		// Late arrivals join while admission runs.
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; runCtx.Err() == nil && i < 200; i++ {
				if _, err := s.Enter(ctx, "sale", waitroom.Unlimited(fmt.Sprintf("late-%04d", i))); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
		wg.Wait()
		elapsed := time.Since(start)

		total := 0
		for number, n := range admittedBy {
			if n != 1 {
				t.Errorf("number %d admitted %d times", number, n)
			}
			total += n
		}
		limit := cfg.AdmitRatePerSec*elapsed.Seconds() + cfg.BatchSize()
		// The budget holds one batch, so a gap in which no admitter ran (a
		// loaded machine) can only be made up by one batch: the floor counts
		// each gap between batches up to one batch, as TestOneAdmitterKeepsSmallBatchRates.
		slices.SortFunc(batchTimes, func(a, b time.Time) int { return a.Compare(b) })
		onTime := cfg.BatchSize()
		for i := 1; i < len(batchTimes); i++ {
			onTime += min(cfg.AdmitRatePerSec*batchTimes[i].Sub(batchTimes[i-1]).Seconds(), cfg.BatchSize())
		}
		floor := 0.95 * onTime
		t.Logf("%d admitters, %v: admitted %d (limit %.0f, floor %.0f, rate×elapsed %.0f)", admitters, elapsed.Round(time.Millisecond), total, limit, floor, cfg.AdmitRatePerSec*elapsed.Seconds())
		if float64(total) > limit {
			t.Errorf("over-admission: %d > rate×elapsed + one batch = %.1f", total, limit)
		}
		if float64(total) < floor {
			t.Errorf("under-admission: %d < 95%% of the on-time floor %.1f", total, floor)
		}
		// FIFO: the admitted numbers are exactly the first ones given out.
		for i := 1; i <= total; i++ {
			if admittedBy[int64(i)] != 1 {
				t.Fatalf("FIFO inversion: number %d not admitted though %d users were", i, total)
			}
		}
	})
}

// A late or overlapping invocation catches up by at most one batch.
func TestBudgetHoldsAtMostOneBatch(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		cfg := testConfig()
		s, _ := newStore(t, engine, cfg)
		for i := 0; i < 100; i++ {
			if _, err := s.Enter(ctx, "r", waitroom.Unlimited(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.AdmitBatch(ctx); err != nil { // spend the initial budget
			t.Fatal(err)
		}
		time.Sleep(600 * time.Millisecond) // six batches' worth of time passes unused
		b, err := s.AdmitBatch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n := admittedCount(b); n != int(cfg.BatchSize()) {
			t.Fatalf("after a gap, one batch (%v) is admitted, not %d", cfg.BatchSize(), n)
		}
	})
}

// Rates below one user per batch still admit, at the configured pace.
func TestSlowRateStillAdmits(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		cfg := testConfig()
		cfg.AdmitRatePerSec = 2 // 0.2 users per 100 ms batch
		s, _ := newStore(t, engine, cfg)
		for i := 0; i < 10; i++ {
			if _, err := s.Enter(ctx, "r", waitroom.Unlimited(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
		total := 0
		deadline := time.Now().Add(1500 * time.Millisecond)
		for time.Now().Before(deadline) {
			b, err := s.AdmitBatch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			total += admittedCount(b)
			time.Sleep(100 * time.Millisecond)
		}
		// 1 (initial budget) + 2/s × 1.5 s = 4 at most; at least 3.
		if total < 3 || total > 4 {
			t.Fatalf("admitted %d in 1.5 s at 2/s", total)
		}
	})
}

// A batch may admit far more users than one Lua call can take arguments
// (a rate of 1,000,000 a second admits 100,000 a batch): the live tokens
// go in by parts.
func TestHugeBatchAdmits(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		cfg := testConfig()
		cfg.AdmitRatePerSec = 100_000 // 10,000 a batch
		// No client retry: a batch of 10,000 can outlast go-redis's read
		// timeout on a loaded machine (the embedded store under -race), and a
		// retry runs the script again on the emptied line, admitting nobody.
		rdb := redis.NewClient(&redis.Options{Addr: engine.Start(t).Addr, ReadTimeout: time.Minute, MaxRetries: -1})
		t.Cleanup(func() { _ = rdb.Close() })
		s := redisstore.New(rdb, cfg)
		users := names("u", 10_000)
		for i := 0; i < len(users); i += 1000 {
			p := rdb.Pipeline()
			for _, u := range users[i : i+1000] {
				p.ZAdd(ctx, "wr:{r}:line", redis.Z{Score: float64(len(u)), Member: u})
			}
			if _, err := p.Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
		rdb.SAdd(ctx, "wr:rooms", "r")
		b, err := s.AdmitBatch(ctx)
		if err != nil || admittedCount(b) != 10_000 {
			t.Fatalf("%d admitted: %v", admittedCount(b), err)
		}
		if n := rdb.ZCard(ctx, "wr:{r}:tokens").Val(); n != 10_000 {
			t.Fatalf("%d live tokens", n)
		}
	})
}

// The admissions-per-second hash keeps a minute (status'
// admittedLastMinute): a second's first count drops the seconds 61 and 62
// back (admission.lua's countAdmitted, which spares the second's later
// batches that HDEL).
func TestAdmissionsPerSecondKeepAMinute(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, rdb := newStore(t, engine, testConfig())
		for i := 0; i < 3; i++ {
			if _, err := s.Enter(ctx, "r", waitroom.Unlimited(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
		now, err := rdb.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		// 61 seconds back now, 62 if the batch runs in the next second.
		old := fmt.Sprint(now.Unix() - 61)
		if err := rdb.HSet(ctx, "wr:{r}:admits", old, 5).Err(); err != nil {
			t.Fatal(err)
		}
		b, err := s.AdmitBatch(ctx)
		if err != nil || admittedCount(b) != 3 {
			t.Fatalf("batch: %d admitted, %v; want 3", admittedCount(b), err)
		}
		counts, err := rdb.HGetAll(ctx, "wr:{r}:admits").Result()
		if err != nil {
			t.Fatal(err)
		}
		if _, kept := counts[old]; kept || len(counts) != 1 {
			t.Fatalf("the admissions per second after a batch: %v; want the batch's second alone (3), %s gone", counts, old)
		}
	})
}
