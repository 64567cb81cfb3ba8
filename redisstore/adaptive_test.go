package redisstore_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// admitAll enters users and runs batches until all hold a token.
func admitAll(t *testing.T, s *redisstore.Store, room string, users ...string) map[string]string {
	t.Helper()
	enterAll(t, s, room, users...)
	tokens := map[string]string{}
	for deadline := time.Now().Add(10 * time.Second); len(tokens) < len(users); {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d admitted", len(tokens), len(users))
		}
		b, err := waitroom.RunBatch(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Rooms) > 0 {
			claimAll(t, s, room, users, tokens)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return tokens
}

// claimAll asks where each of users without a token in tokens stands, as
// its next poll would, and keeps the token of each admitted one: its turn
// claimed (claim.lua).
func claimAll(t *testing.T, s *redisstore.Store, room string, users []string, tokens map[string]string) {
	t.Helper()
	for _, u := range users {
		if tokens[u] != "" {
			continue
		}
		st, err := s.Position(context.Background(), room, waitroom.Unlimited(u))
		if err != nil {
			t.Fatal(err)
		}
		if st.Status == waitroom.Ready {
			tokens[u] = st.Token
		}
	}
}

// placeOrder takes a lease with an admitted user's token and ends it as
// the gate does after a call of the given outcome: commit after a 2xx,
// else release.
func placeOrder(t *testing.T, s *redisstore.Store, room, user, token string, call waitroom.DownstreamCall) {
	t.Helper()
	ctx := context.Background()
	lease, err := s.BeginOrder(ctx, waitroom.Unlimited(user), waitroom.OrderAttempt{Room: room, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	lease.Downstream = call
	if call.Outcome == waitroom.OutcomeOK {
		err = s.CommitOrder(ctx, lease, waitroom.StoredAnswer{Status: 201})
	} else {
		err = s.ReleaseOrder(ctx, lease)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// handOver waits out the control window and runs batches until one hands
// it over.
func handOver(t *testing.T, s *redisstore.Store, room string) *waitroom.Window {
	t.Helper()
	return handedRoom(t, s, room).Downstream
}

// handedRoom is handOver's batch of the room.
func handedRoom(t *testing.T, s *redisstore.Store, room string) waitroom.RoomBatch {
	t.Helper()
	deadline := time.Now().Add(10 * waitroom.AdaptWindow)
	for time.Now().Before(deadline) {
		b, err := waitroom.RunBatch(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range b.Rooms {
			if r.Room == room && r.Downstream != nil {
				return r
			}
		}
		time.Sleep(waitroom.AdaptWindow / 10)
	}
	t.Fatalf("no window handed over in %v", 10*waitroom.AdaptWindow)
	return waitroom.RoomBatch{}
}

// The gate's calls are counted by outcome and latency inside commit and
// release, once each however often a commit is retried, and handed to
// the admitter with the window; the room's status then shows the window's
// p95 and error rate, for a room with a fixed rate too.
func TestDownstreamCallsAreCountedAndHandedOver(t *testing.T) {
	t.Parallel() // waits out adaptive windows; sums what spans two, asserts counts (own store)
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, _ := newStore(t, engine, testConfig())
		set(t, s, "r", func(st *waitroom.Settings) { st.RatePerSec = 100 })
		tokens := admitAll(t, s, "r", append(names("ok", 18), "slow", "busy", "again")...)
		for _, u := range names("ok", 18) {
			placeOrder(t, s, "r", u, tokens[u], waitroom.DownstreamCall{Latency: 200 * time.Millisecond, Outcome: waitroom.OutcomeOK})
		}
		placeOrder(t, s, "r", "slow", tokens["slow"], waitroom.DownstreamCall{Latency: 10 * time.Second, Outcome: waitroom.OutcomeTimeout})
		placeOrder(t, s, "r", "busy", tokens["busy"], waitroom.DownstreamCall{Latency: 5 * time.Millisecond, Outcome: waitroom.OutcomeOverload})
		// A retried commit (the first reply lost) counts nothing twice.
		lease, err := s.BeginOrder(ctx, waitroom.Unlimited("again"), waitroom.OrderAttempt{Room: "r", Token: tokens["again"]})
		if err != nil {
			t.Fatal(err)
		}
		lease.Downstream = waitroom.DownstreamCall{Latency: 200 * time.Millisecond, Outcome: waitroom.OutcomeOK}
		for range 2 {
			if err := s.CommitOrder(ctx, lease, waitroom.StoredAnswer{Status: 201}); err != nil {
				t.Fatal(err)
			}
		}
		// Orders slower than a window (a loaded machine) span two: sum them.
		var calls, ok, timeouts, overloads int64
		var w *waitroom.Window
		for calls < 21 {
			w = handOver(t, s, "r")
			if w.Duration < waitroom.AdaptWindow {
				t.Errorf("window of %v", w.Duration)
			}
			calls, ok = calls+w.Calls.Calls(), ok+w.Calls.Count(waitroom.OutcomeOK)
			timeouts, overloads = timeouts+w.Calls.Count(waitroom.OutcomeTimeout), overloads+w.Calls.Count(waitroom.OutcomeOverload)
		}
		if calls != 21 || ok != 19 || timeouts != 1 || overloads != 1 {
			t.Fatalf("handed over %d calls: ok %d timeout %d overload %d", calls, ok, timeouts, overloads)
		}
		st, err := s.Status(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		if st.DownstreamP95Ms == nil || *st.DownstreamP95Ms != w.Calls.Quantile(0.95).Milliseconds() ||
			st.DownstreamErrorRate == nil || fmt.Sprintf("%.4f", *st.DownstreamErrorRate) != fmt.Sprintf("%.4f", w.Calls.ErrorRate()) {
			t.Fatalf("status p95 %v error rate %v, the last window's %v %v", st.DownstreamP95Ms, st.DownstreamErrorRate, w.Calls.Quantile(0.95), w.Calls.ErrorRate())
		}
		if calls == w.Calls.Calls() && (*st.DownstreamP95Ms < 190 || *st.DownstreamP95Ms > 210) { // one window: 2 of 21 not 2xx
			t.Fatalf("p95 %d ms of calls of 200 ms", *st.DownstreamP95Ms)
		}
		if st.EffectiveRatePerSec != 100 || st.Adaptive != nil {
			t.Fatalf("a fixed rate: %+v", st)
		}
		// Windows without a call: nothing is measured any more.
		time.Sleep(2*waitroom.AdaptWindow + 100*time.Millisecond)
		if st, err = s.Status(ctx, "r"); err != nil || st.DownstreamP95Ms != nil || st.DownstreamErrorRate != nil {
			t.Fatalf("stale figures: %v %v (%v)", st.DownstreamP95Ms, st.DownstreamErrorRate, err)
		}
	})
}

// One token holder's failed orders count once while the token lives, and
// a refused order (4xx) or a caller's abort in no measure (issue 32): a
// holder whose every order fails weighs as one failed call, not as a
// window's share of errors that pauses admission for everyone. Another
// holder's failure counts too.
func TestAHoldersFailuresCountOnce(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, rdb := newStore(t, engine, testConfig())
		set(t, s, "r", func(st *waitroom.Settings) { st.RatePerSec = 100 })
		tokens := admitAll(t, s, "r", "bad", "other", "good")
		for i := range 6 {
			call := waitroom.DownstreamCall{Latency: 5 * time.Millisecond, Outcome: waitroom.ClassifyOrder(503, nil)}
			switch i % 3 {
			case 1:
				call = waitroom.DownstreamCall{Latency: 10 * time.Second, Outcome: waitroom.ClassifyOrder(0, context.DeadlineExceeded)}
			case 2: // refused at once, or hung up on: in no measure
				call = waitroom.DownstreamCall{Latency: time.Millisecond, Outcome: waitroom.ClassifyOrder(409, nil)}
				if i == 5 {
					call = waitroom.DownstreamCall{Latency: 3 * time.Second, Outcome: waitroom.ClassifyOrder(0, context.Canceled)}
				}
			}
			placeOrder(t, s, "r", "bad", tokens["bad"], call)
		}
		// An older gate's refused order ('c…' counters) is read, and weighs in no measure.
		placeOrder(t, s, "r", "bad", tokens["bad"], waitroom.DownstreamCall{Latency: time.Millisecond, Outcome: waitroom.OutcomeClient})
		placeOrder(t, s, "r", "other", tokens["other"], waitroom.DownstreamCall{Latency: 5 * time.Millisecond, Outcome: waitroom.OutcomeOverload})
		placeOrder(t, s, "r", "good", tokens["good"], waitroom.DownstreamCall{Latency: 200 * time.Millisecond, Outcome: waitroom.OutcomeOK})
		var calls, ok, failed int64
		for calls < 3 {
			w := handOver(t, s, "r")
			calls, ok = calls+w.Calls.Calls(), ok+w.Calls.Count(waitroom.OutcomeOK)
			failed += w.Calls.Count(waitroom.OutcomeOverload) + w.Calls.Count(waitroom.OutcomeTimeout)
			if w.Calls.Quantile(0.01) < 4*time.Millisecond {
				t.Errorf("a refused order's 1 ms is in the window's latencies: p1 %v", w.Calls.Quantile(0.01))
			}
		}
		if calls != 3 || ok != 1 || failed != 2 {
			t.Fatalf("handed over %d calls (%d 2xx, %d failed), want 3: bad's failures once, other's, good's order", calls, ok, failed)
		}
		// The mark lives as long as the holder's token (its lock's life).
		ttl, err := rdb.PTTL(ctx, "wr:{r}:failed:bad").Result()
		if life := testConfig().EntryTokenTTL; err != nil || ttl < life-time.Minute || ttl > life+time.Minute {
			t.Fatalf("bad's mark: PTTL %v (%v)", ttl, err)
		}
	})
}

// An adaptive room admits at its effective rate: the budget refills at it
// and the answers' estimates use it; refusals cut it by a fifth, within the
// bounds, and pause admission for a window; turning adaptive off goes back
// to ratePerSec.
func TestAdaptiveRateDrivesAdmissionAndAnswers(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, _ := newStore(t, engine, testConfig())
		set(t, s, "r", func(st *waitroom.Settings) {
			st.RatePerSec, st.Adaptive = 500, &waitroom.Adaptive{TargetP95Ms: 250, MinRatePerSec: 5, MaxRatePerSec: 40}
		})
		st, err := s.Status(ctx, "r")
		if err != nil || st.EffectiveRatePerSec != 40 || st.RatePerSec != 500 || st.Adaptive == nil || st.Adaptive.MaxRatePerSec != 40 {
			t.Fatalf("the start is ratePerSec within the bounds: %+v %v", st, err)
		}
		tokens := admitAll(t, s, "r", names("o", 10)...)
		for _, u := range names("o", 10) {
			placeOrder(t, s, "r", u, tokens[u], waitroom.DownstreamCall{Latency: 5 * time.Millisecond, Outcome: waitroom.OutcomeOverload})
		}
		enterAll(t, s, "r", names("w", 300)...)
		handOver(t, s, "r")
		// Cut by a fifth once (a window after the pause, when a loaded
		// machine spread the orders over two, holds it).
		if st, err = s.Status(ctx, "r"); err != nil || st.EffectiveRatePerSec != 32 {
			t.Fatalf("errors cut the rate by a fifth: %v (%v)", st.EffectiveRatePerSec, err)
		}
		// The pause: the budget owes a window's admissions (40 users).
		if b, err := waitroom.RunBatch(ctx, s); err != nil || len(admittedUsers(b)) != 0 {
			t.Fatalf("admitted during the pause: %v (%v)", admittedUsers(b), err)
		}
		rate := st.EffectiveRatePerSec
		pos, err := s.Position(ctx, "r", waitroom.Unlimited("w0299"))
		if err != nil || pos.RatePerSec != rate || !pos.Adaptive {
			t.Fatalf("position's rate: %+v %v, want %v, adaptive", pos, err, rate)
		}
		// The budget refills at the rate: over a second, at most that + one batch.
		time.Sleep(200 * time.Millisecond) // a full budget
		start := time.Now()
		admitted := 0
		for time.Since(start) < time.Second {
			b, err := waitroom.RunBatch(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			admitted += len(admittedUsers(b))
			time.Sleep(50 * time.Millisecond)
		}
		if limit := rate*(time.Since(start).Seconds()+0.1) + 1; float64(admitted) > limit {
			t.Fatalf("admitted %d in %v at %g/s", admitted, time.Since(start), rate)
		}
		// Narrower bounds clamp the rate reached; off is ratePerSec again.
		set(t, s, "r", func(st *waitroom.Settings) {
			st.Adaptive = &waitroom.Adaptive{TargetP95Ms: 250, MinRatePerSec: 1, MaxRatePerSec: 10}
		})
		if st, err = s.Status(ctx, "r"); err != nil || st.EffectiveRatePerSec != 10 {
			t.Fatalf("clamped: %v (%v)", st.EffectiveRatePerSec, err)
		}
		set(t, s, "r", func(st *waitroom.Settings) { st.Adaptive = nil })
		if st, err = s.Status(ctx, "r"); err != nil || st.EffectiveRatePerSec != 500 || st.Adaptive != nil {
			t.Fatalf("off: %+v (%v)", st, err)
		}
		if pos, err := s.Position(ctx, "r", waitroom.Unlimited("w0299")); err != nil || pos.Adaptive {
			t.Fatalf("off, the answers say so: %+v %v", pos, err)
		}
		if pos, err = s.Position(ctx, "r", waitroom.Unlimited("w0299")); err != nil || pos.RatePerSec != 500 {
			t.Fatalf("position's rate once off: %+v %v", pos, err)
		}
	})
}

// A paused adaptive room still admits at minRatePerSec (issue 32,
// docs/API.md): refusals owe a pause, which withholds only what the rate
// admits beyond the floor. The budget refills at the rate, so a debt of at
// most (rate - min) × a window leaves min × a window admitted in it; read
// from the budget, not timed, which a loaded machine would make flaky.
func TestPausedAdaptiveRoomAdmitsAtMinRate(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, rdb := newStore(t, engine, testConfig())
		set(t, s, "r", func(st *waitroom.Settings) {
			st.RatePerSec, st.Adaptive = 500, &waitroom.Adaptive{TargetP95Ms: 250, MinRatePerSec: 20, MaxRatePerSec: 40}
		})
		holders := names("o", 10)
		tokens := admitAll(t, s, "r", holders...)
		for _, u := range holders {
			placeOrder(t, s, "r", u, tokens[u], waitroom.DownstreamCall{Latency: 5 * time.Millisecond, Outcome: waitroom.OutcomeOverload})
		}
		enterAll(t, s, "r", names("w", 300)...)
		if w := handOver(t, s, "r"); w.Calls.ErrorRate() != 1 {
			t.Fatalf("a window of refusals: %v", w.Calls.ErrorRate())
		}
		st, err := s.Status(ctx, "r")
		if err != nil || st.EffectiveRatePerSec != 32 {
			t.Fatalf("errors cut the rate by a fifth: %v (%v)", st.EffectiveRatePerSec, err)
		}
		avail, err := rdb.HGet(ctx, "wr:{r}:budget", "avail").Float64()
		if owed := (st.EffectiveRatePerSec - 20) * waitroom.AdaptWindow.Seconds(); err != nil || avail < -owed-1e-6 || avail >= 0 {
			t.Fatalf("the pause owes %v users (%v): want a debt of at most %v, the rate's window beyond minRatePerSec", -avail, err, owed)
		}
	})
}

// Overlapping admitters never both take one window nor lose one: every
// call the gates count while they run is handed over exactly once.
func TestOverlappingAdmittersHandOverEachWindowOnce(t *testing.T) {
	t.Parallel() // waits out adaptive windows; asserts counts, not timing (own store)
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, rdb := newStore(t, engine, testConfig())
		set(t, s, "r", func(st *waitroom.Settings) {
			st.RatePerSec, st.Adaptive = 1000, &waitroom.Adaptive{TargetP95Ms: 250, MinRatePerSec: 1, MaxRatePerSec: 1000}
		})
		// The gates' users hold tokens before the line forms behind them.
		gates := names("g", 40)
		tokens := admitAll(t, s, "r", gates...)
		enterAll(t, s, "r", names("u", 400)...)
		var recorded, handed atomic.Int64
		var windows sync.Map // end → seen
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 4 { // admitters
			wg.Add(1)
			go func() {
				defer wg.Done()
				admitters := redisstore.New(rdb, testConfig())
				for {
					select {
					case <-stop:
						return
					default:
					}
					b, err := waitroom.RunBatch(ctx, admitters)
					if err != nil {
						t.Error(err)
						return
					}
					for _, r := range b.Rooms {
						if r.Downstream == nil {
							continue
						}
						handed.Add(r.Downstream.Calls.Calls())
						if _, dup := windows.LoadOrStore(r.Downstream.End.UnixMilli(), true); dup {
							t.Errorf("window ending %v handed over twice", r.Downstream.End)
						}
					}
					time.Sleep(20 * time.Millisecond)
				}
			}()
		}
		for _, u := range gates {
			lease, err := s.BeginOrder(ctx, waitroom.Unlimited(u), waitroom.OrderAttempt{Room: "r", Token: tokens[u]})
			if err != nil {
				t.Fatal(err)
			}
			lease.Downstream = waitroom.DownstreamCall{Latency: 200 * time.Millisecond, Outcome: waitroom.OutcomeOK}
			if err := s.CommitOrder(ctx, lease, waitroom.StoredAnswer{Status: 201}); err != nil {
				t.Fatal(err)
			}
			recorded.Add(1)
			time.Sleep(60 * time.Millisecond)
		}
		time.Sleep(2*waitroom.AdaptWindow + 200*time.Millisecond) // the last window handed over
		close(stop)
		wg.Wait()
		n := 0
		windows.Range(func(any, any) bool { n++; return true })
		if handed.Load() != recorded.Load() || n < 2 {
			t.Fatalf("%d calls counted, %d handed over in %d windows", recorded.Load(), handed.Load(), n)
		}
	})
}

// The law's memory goes round the admission loop: the state decided on one
// window (adapt.lua) comes back with the next window the store hands over
// (RoomBatch.Control), with the room's adaptive setting.
func TestLawStateComesBackWithTheNextWindow(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, rdb := newStore(t, engine, testConfig())
		law := &waitroom.Adaptive{TargetP95Ms: 250, MinRatePerSec: 5, MaxRatePerSec: 100}
		set(t, s, "r", func(st *waitroom.Settings) { st.RatePerSec, st.Adaptive = 100, law })
		users := names("o", 15)
		tokens := admitAll(t, s, "r", users...)
		ok := waitroom.DownstreamCall{Latency: 200 * time.Millisecond, Outcome: waitroom.OutcomeOK}
		for _, u := range users[:12] {
			placeOrder(t, s, "r", u, tokens[u], ok)
		}
		// Orders slower than a window (a loaded machine) span two: hand over
		// until the law has remembered a base.
		var kept waitroom.ControlState
		for i := 0; len(kept.Bases) == 0; i++ {
			if i == 3 {
				t.Fatalf("no base remembered after %d windows: %+v", i, kept)
			}
			handOver(t, s, "r")
			kept = waitroom.DecodeControl(rdb.HGet(ctx, "wr:{r}:control", "state").Val())
		}
		placeOrder(t, s, "r", users[12], tokens[users[12]], ok) // a window without calls is not handed over
		next := handedRoom(t, s, "r")
		if !reflect.DeepEqual(next.Control, kept) || next.Adaptive == nil || *next.Adaptive != *law {
			t.Fatalf("handed over with %+v (adaptive %+v), want the state kept %+v (adaptive %+v)", next.Control, next.Adaptive, kept, law)
		}
	})
}

// A decision for an older window never overwrites a newer one's.
func TestAdaptDecisionIsACompareAndSetOnTheWindow(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		_, rdb := newStore(t, engine, testConfig())
		src, _ := redisstore.Source("adapt.lua")
		keys := []string{"wr:{r}:settings", "wr:{r}:control", "wr:{r}:budget"}
		rdb.HSet(ctx, keys[0], "rate", "100", "adaptive", "250:5:50", "hot", "H50:0:0:100:300000:")
		run := func(end int64, rate string) int64 {
			n, err := redis.NewScript(src).Run(ctx, rdb, keys, end, "{}", "200", "0.0000", rate, 120000, "").Int64()
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		if run(2000, "30") != 1 || run(1000, "10") != 0 || run(2000, "10") != 0 {
			t.Fatal("compare-and-set on the window end")
		}
		if run(3000, "500") != 1 {
			t.Fatal("a newer window")
		}
		if e := rdb.HGet(ctx, keys[0], "hot").Val(); e != "H50.000000000:0:0:100:300000:" {
			t.Fatalf("the rate within the bounds: %q", e)
		}
		rdb.HDel(ctx, keys[0], "adaptive")                    // turned off meanwhile
		rdb.HSet(ctx, keys[0], "hot", "@100:0:0:100:300000:") // at its fixed rate
		if run(4000, "20") != 1 || rdb.HGet(ctx, keys[0], "hot").Val() != "@100:0:0:100:300000:" {
			t.Fatal("a room no longer adaptive got an adaptive rate")
		}
	})
}

// A decision that owes a pause leaves the budget owing that many users
// (admission resumes at the rate once they are paid back); a budget not
// there (an idle room's) and a room no longer adaptive owe nothing.
func TestAdaptOwesAPause(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		_, rdb := newStore(t, engine, testConfig())
		src, _ := redisstore.Source("adapt.lua")
		keys := []string{"wr:{r}:settings", "wr:{r}:control", "wr:{r}:budget"}
		rdb.HSet(ctx, keys[0], "rate", "100", "adaptive", "250:5:50", "hot", "H50:0:0:100:300000:")
		run := func(end int64, debt string) {
			if err := redis.NewScript(src).Run(ctx, rdb, keys, end, "{}", "200", "0.0000", "40", 120000, debt).Err(); err != nil {
				t.Fatal(err)
			}
		}
		run(1000, "12.5")
		if rdb.Exists(ctx, keys[2]).Val() != 0 {
			t.Fatal("an idle room's budget created")
		}
		rdb.HSet(ctx, keys[2], "at", "1000000", "avail", "3.5")
		run(2000, "")
		if a := rdb.HGet(ctx, keys[2], "avail").Val(); a != "3.5" {
			t.Fatalf("no pause owed, yet the budget is %q", a)
		}
		run(3000, "12.5")
		if a := rdb.HGet(ctx, keys[2], "avail").Val(); a != "-12.500000000" || rdb.HGet(ctx, keys[2], "at").Val() != "1000000" {
			t.Fatalf("the budget owes %q", a)
		}
		rdb.HDel(ctx, keys[0], "adaptive")
		rdb.HSet(ctx, keys[0], "hot", "@100:0:0:100:300000:")
		rdb.HSet(ctx, keys[2], "avail", "3.5")
		if run(4000, "12.5"); rdb.HGet(ctx, keys[2], "avail").Val() != "3.5" {
			t.Fatal("a room no longer adaptive paused")
		}
	})
}
