package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
)

// A waiting user's number and the room's view tell its position: number -
// front + 1 is exactly the store's position for everyone in line, before
// and after admission moves the front; the view knows the room's state,
// and while a pre-queue's draws are in line it says positions are not
// exact (numbers skip the draws).
func TestNumbersAndTheViewTellPositions(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		cfg := testConfig()
		cfg.AdmitRatePerSec = 50 // batches of 5
		s, _ := newStore(t, engine, cfg)
		as := func(i int) waitroom.Caller { return waitroom.Unlimited(fmt.Sprintf("u%02d", i)) }
		numbers := map[int]int64{}
		for i := range 20 {
			st, err := s.Enter(ctx, "r", as(i))
			if err != nil || st.Status != waitroom.Waiting || st.Number == 0 {
				t.Fatalf("enter %d: %+v %v", i, st, err)
			}
			numbers[i] = st.Number
		}
		check := func(first int) {
			t.Helper()
			v, err := s.View(ctx, "r")
			if err != nil || !v.Exact || v.Closed || v.RatePerSec != 50 || v.Since.IsZero() {
				t.Fatalf("view: %+v %v", v, err)
			}
			for i := first; i < 20; i++ {
				st, err := s.Position(ctx, "r", as(i))
				if err != nil || st.Status != waitroom.Waiting || st.Number != numbers[i] || st.Position != numbers[i]-v.Front+1 {
					t.Errorf("u%02d numbered %d, front %d: %+v %v", i, numbers[i], v.Front, st, err)
				}
			}
		}
		check(0)
		if _, err := waitroom.RunBatch(ctx, s); err != nil {
			t.Fatal(err)
		}
		check(5)
		if v, _ := s.View(ctx, "r"); v.LastBatch.IsZero() || time.Since(v.LastBatch) > time.Minute {
			t.Errorf("the view's last batch: %v", v.LastBatch)
		}

		// A pre-queue in a room with a line: the draws go ahead of nobody
		// yet, but numbers no longer count them.
		opens := time.Now().Add(time.Hour)
		if _, err := s.Update(ctx, "r", true, func(st waitroom.Settings) (waitroom.Settings, error) {
			st.OpensAt = &opens
			return st, nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Enter(ctx, "r", as(99)); err != nil {
			t.Fatal(err)
		}
		if v, err := s.View(ctx, "r"); err != nil || v.Exact || !v.OpensAt.Equal(opens.Truncate(time.Millisecond)) {
			t.Errorf("view with a pre-queue: %+v %v", v, err)
		}
	})
}
