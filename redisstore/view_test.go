package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
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
		if v, _ := s.View(ctx, "r"); v.LastBatch.IsZero() || time.Since(v.LastBatch) > time.Minute || v.Full {
			t.Errorf("the view's last batch: %v, full %v", v.LastBatch, v.Full)
		}
		// Five live tokens fill a maxActive of 5: the view says so after the
		// next batch (admission stalls until one is used or expires).
		if _, err := s.Update(ctx, "r", true, func(st waitroom.Settings) (waitroom.Settings, error) {
			st.MaxActive = 5
			return st, nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := waitroom.RunBatch(ctx, s); err != nil {
			t.Fatal(err)
		}
		if v, _ := s.View(ctx, "r"); !v.Full {
			t.Errorf("five live tokens, maxActive 5: the view is not full: %+v", v)
		}
		check(5)

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

// An acknowledged place survives a failover that lost the write which
// made it: the caller's credential carries the number, and its next enter
// or poll finds it there (the replica's counter is behind, so a newcomer
// may share it) and records it again. Everyone is admitted, in number
// order, and claims its turn; a number claimed once is never claimed again.
func TestALostPlaceComesBackAtItsNumber(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		cfg := testConfig()
		cfg.AdmitRatePerSec = 20 // batches of 2
		s, rdb := newStore(t, engine, cfg)
		as := func(user string, place int64) waitroom.Caller {
			c := waitroom.Unlimited(user)
			c.Place, c.PlaceAt = place, time.Now()
			return c
		}
		numbers := map[string]int64{}
		for _, u := range []string{"a", "b", "c", "d", "e"} {
			st, err := s.Enter(ctx, "r", as(u, 0))
			if err != nil {
				t.Fatal(err)
			}
			numbers[u] = st.Number
		}
		// The failover: the replica never had d's and e's enters.
		for _, u := range []string{"d", "e"} {
			bucket, field := redisstore.AccountKey("r", u)
			rdb.HDel(ctx, bucket, field)
		}
		rdb.HSet(ctx, "wr:{r}:settings", "next", numbers["d"])
		if st, _ := s.Position(ctx, "r", as("d", 0)); st.Status != waitroom.NotInQueue {
			t.Fatalf("d after the failover, without its place: %+v", st)
		}
		late, err := s.Enter(ctx, "r", as("f", 0)) // numbered as d was: the counter is behind
		if err != nil || late.Number != numbers["d"] {
			t.Fatalf("f: %+v %v", late, err)
		}
		if st, err := s.Position(ctx, "r", as("d", numbers["d"])); err != nil || st.Status != waitroom.Waiting || st.Position != 4 {
			t.Errorf("d polls with its place: %+v %v", st, err)
		}
		if st, err := s.Enter(ctx, "r", as("e", numbers["e"])); err != nil || st.Status != waitroom.Waiting || st.Position != 5 || st.Joined {
			t.Errorf("e enters with its place: %+v %v", st, err)
		}
		for u, at := range map[string]int64{"d": 4, "e": 5} {
			if st, err := s.Position(ctx, "r", as(u, 0)); err != nil || st.Position != at {
				t.Errorf("%s without its place, its record put back: %+v %v", u, st, err)
			}
		}
		var order []int64
		for len(order) < 5 {
			b, err := s.AdmitBatch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range b.Rooms {
				for _, a := range r.Admitted {
					order = append(order, a.Number)
				}
			}
			time.Sleep(110 * time.Millisecond)
		}
		if fmt.Sprint(order) != "[1 2 3 4 5]" {
			t.Errorf("admitted %v, want numbers 1 to 5 (d and f share 4)", order)
		}
		tokens := map[string]bool{}
		for _, u := range []string{"a", "b", "c", "d", "e", "f"} {
			st, err := s.Position(ctx, "r", as(u, numbers[u]))
			if err != nil || st.Status != waitroom.Ready || tokens[st.Token] {
				t.Fatalf("%s claiming its turn: %+v %v", u, st, err)
			}
			tokens[st.Token] = true
		}
		if _, err := rdb.Del(ctx, "wr:{r}:u:a").Result(); err != nil {
			t.Fatal(err)
		}
		if st, _ := s.Position(ctx, "r", as("a", numbers["a"])); st.Status != waitroom.NotInQueue {
			t.Errorf("a, whose turn was claimed, came back: %+v", st)
		}
	})
}
