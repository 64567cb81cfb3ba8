package redisstore_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
)

// One admitter, as in production (one scheduled invocation at a time),
// keeps the configured rate when a batch holds only a few users, also a
// fractional number (25/s in 100 ms batches is 2.5 users a batch). Capping
// the budget at exactly one batch dropped the fraction of a user carried
// between batches, and whole tokens for int(batch) users only cut 2.5 to 2:
// 10/s admitted 56% of the rate, 20/s 83%, 25/s 88%.
func TestOneAdmitterKeepsSmallBatchRates(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		for _, rate := range []float64{10, 20, 25} {
			t.Run(fmt.Sprintf("%g per second", rate), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				cfg := testConfig()
				cfg.AdmitRatePerSec = rate
				s, _ := newStore(t, engine, cfg)
				for i := 0; i < 200; i++ {
					if _, err := s.Enter(ctx, "r", waitroom.Unlimited(fmt.Sprint(i))); err != nil {
						t.Fatal(err)
					}
				}
				// The budget holds one batch: a batch that a loaded machine runs
				// late can only take one batch's worth, so the floor counts each
				// gap up to one batch, and the ceiling the whole elapsed time.
				var batchTimes []time.Time
				a := &waitroom.Admitter{Queue: s, Interval: cfg.AdmitInterval, Batches: 30,
					OnBatch: func(waitroom.Batch) { batchTimes = append(batchTimes, time.Now()) }}
				start := time.Now()
				sum, err := a.Run(ctx)
				elapsed := time.Since(start)
				if err != nil {
					t.Fatal(err)
				}
				// The first batch spends the initial budget (one batch); the
				// rest of the run refills at the rate.
				want := cfg.BatchSize() + rate*elapsed.Seconds()
				floor := cfg.BatchSize()
				for i := 1; i < len(batchTimes); i++ {
					floor += min(rate*batchTimes[i].Sub(batchTimes[i-1]).Seconds(), cfg.BatchSize())
				}
				t.Logf("%d admitted in %v over %d batches: %.3f of rate × elapsed + one batch, %.3f of the on-time floor",
					sum.Admitted, elapsed.Round(time.Millisecond), sum.Batches, float64(sum.Admitted)/want, float64(sum.Admitted)/floor)
				if float64(sum.Admitted) < 0.95*floor {
					t.Errorf("under-admission: %d < 95%% of %.1f", sum.Admitted, floor)
				}
				if float64(sum.Admitted) > math.Ceil(want) {
					t.Errorf("over-admission: %d > %.1f", sum.Admitted, want)
				}
			})
		}
	})
}
