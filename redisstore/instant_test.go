package redisstore_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
)

func instantConfig() waitroom.Config {
	cfg := testConfig() // 100/s, batches of 10 every 100 ms
	cfg.InstantAdmit = true
	return cfg
}

// An idle room answers READY to the first enter, in the enter's own call;
// once the budget holds less than a user the enter queues, and once
// someone waits every later enter queues behind them, whatever the budget.
func TestInstantAdmissionWhileNobodyWaits(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		cfg := instantConfig()
		cfg.AdmitRatePerSec = 5 // a batch is one user; the next is in the budget 200 ms later
		s, rdb := newStore(t, engine, cfg)
		first, err := s.Enter(ctx, "quiet", waitroom.Unlimited("u0"))
		if err != nil || first.Status != waitroom.Ready || !first.AdmittedNow || first.Token == "" || first.Joined {
			t.Fatalf("the first enter of an idle room: %+v %v", first, err)
		}
		// Its token is the room's only one: admission must visit the room
		// (to prune the token and let the keys expire), so it is registered.
		if ok, err := rdb.SIsMember(ctx, "wr:rooms", "quiet").Result(); err != nil || !ok {
			t.Fatalf("an instant admission registers its room: %v %v", ok, err)
		}
		again, err := s.Enter(ctx, "quiet", waitroom.Unlimited("u0"))
		if err != nil || again.Status != waitroom.Ready || again.AdmittedNow || again.Token != first.Token {
			t.Fatalf("entering again answers the same token, not a new admission: %+v %v", again, err)
		}
		queued, err := s.Enter(ctx, "quiet", waitroom.Unlimited("u1"))
		if err != nil || queued.Status != waitroom.Waiting || queued.Position != 1 || !queued.Joined {
			t.Fatalf("the budget spent, the enter queues: %+v %v", queued, err)
		}
		time.Sleep(450 * time.Millisecond) // the budget refills two users' worth (capped at one batch)
		behind, err := s.Enter(ctx, "quiet", waitroom.Unlimited("u2"))
		if err != nil || behind.Status != waitroom.Waiting || behind.Position != 2 {
			t.Fatalf("someone waits: nobody is admitted ahead of them: %+v %v", behind, err)
		}
		b, err := s.AdmitBatch(ctx)
		if err != nil || len(admittedUsers(b)) != 1 || admittedUsers(b, "u0", "u1", "u2")[0] != "u1" {
			t.Fatalf("the batch takes the line in order: %+v %v", b, err)
		}
		if st, err := s.Position(ctx, "quiet", waitroom.Unlimited("u1")); err != nil || st.Status != waitroom.Ready {
			t.Fatalf("u1 claiming its turn: %+v %v", st, err)
		}
		live, _ := rdb.ZCard(ctx, "wr:{quiet}:tokens").Result()
		st, err := s.Status(ctx, "quiet")
		if err != nil || live != 2 || st.ActiveTokens != 2 || st.AdmittedLastMinute != 2 || !st.InstantAdmit {
			t.Fatalf("an instant admission is a live token and an admission like a batch's: live %d, %+v %v", live, st, err)
		}
	})
}

// Instant admission waits for the room: not paused, not before its opening,
// not closed, live tokens below maxActive, and instantAdmit on.
func TestInstantAdmissionOnlyInAnOpenRoom(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, _ := newStore(t, engine, instantConfig())
		opens := time.Now().Add(time.Hour)
		for _, c := range []struct {
			name string
			set  func(*waitroom.Settings)
			want waitroom.Status
		}{
			{"paused", func(st *waitroom.Settings) { st.Paused = true }, waitroom.Waiting},
			{"prequeue", func(st *waitroom.Settings) { st.OpensAt = &opens }, waitroom.PreQueue},
			{"off", func(st *waitroom.Settings) { st.InstantAdmit = false }, waitroom.Waiting},
			{"full", func(st *waitroom.Settings) { st.MaxActive = 1 }, waitroom.Waiting},
		} {
			set(t, s, c.name, c.set)
			if c.name == "full" {
				if st, err := s.Enter(ctx, c.name, waitroom.Unlimited("holder")); err != nil || !st.AdmittedNow {
					t.Fatalf("%s: the first takes the one active place: %+v %v", c.name, st, err)
				}
			}
			st, err := s.Enter(ctx, c.name, waitroom.Unlimited("u"))
			if err != nil || st.Status != c.want || st.AdmittedNow {
				t.Errorf("%s: %+v %v, want %s and no admission", c.name, st, err, c.want)
			}
		}
		// A room stored with instantAdmit false admits at once again when
		// it is turned back on.
		set(t, s, "off", func(st *waitroom.Settings) { st.InstantAdmit = true })
		if _, err := s.AdmitBatch(ctx); err != nil {
			t.Fatal(err)
		}
		if st, err := s.Enter(ctx, "off", waitroom.Unlimited("v")); err != nil || !st.AdmittedNow {
			t.Fatalf("instantAdmit back on, the line empty again: %+v %v", st, err)
		}
	})
}

// admission is one user's admission as the test saw it, with the calls'
// times: what the store did happened between a call's start and its end.
type admission struct {
	user    string
	number  int64 // a batch's: its holder claims its turn (claim.lua)
	instant bool
	// batch is the call that admitted a queued user; an instant one has none.
	batch span
}

// span is when a call started and ended.
type span struct{ from, to time.Time }

// Enters and admitters at once: the instant admissions and the batches
// together keep the rate (at most rate × elapsed + one batch), maxActive
// and FIFO, admit nobody twice, and never admit anyone instantly while
// someone waits. Arrivals swing above and below the rate (the line empties
// and fills again), or flood at four times the rate (were an instant
// admission to spend nothing, the line would never form and the rate fall).
func TestInstantAdmissionRacesBatches(t *testing.T) {
	t.Parallel() // fixed 4 s scenarios, mostly sleeping; its bounds are measured from the elapsed time (own store)
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		if testing.Short() {
			t.Skip("12 s of admission")
		}
		for _, c := range []struct {
			flood     bool
			maxActive int64
		}{{false, 0}, {false, 12}, {true, 0}} {
			t.Run(fmt.Sprintf("flood=%t/maxActive=%d", c.flood, c.maxActive), func(t *testing.T) {
				raceInstantAndBatches(t, engine, c.flood, c.maxActive)
			})
		}
	})
}

func raceInstantAndBatches(t *testing.T, engine redistest.Engine, flood bool, maxActive int64) {
	ctx := context.Background()
	cfg := instantConfig()
	cfg.AdmitRatePerSec = 20 // batches of 2: any burst of enters outruns it, however loaded the machine
	s, rdb := newStore(t, engine, cfg)
	const room = "swing"
	set(t, s, room, func(st *waitroom.Settings) { st.MaxActive = maxActive })

	var mu sync.Mutex
	var got []admission
	entered := map[string]span{}     // user → its enter call
	numbers := map[int64]string{}    // number → the user its enter was told
	holder := func(n int64) string { // a batch may pass a number before its enter has answered
		for range 200 {
			mu.Lock()
			user := numbers[n]
			mu.Unlock()
			if user != "" {
				return user
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Errorf("nobody was told number %d", n)
		return ""
	}
	tokens := make(chan admission, 10_000)
	add := func(a admission) {
		mu.Lock()
		got = append(got, a)
		mu.Unlock()
		tokens <- a
	}
	runCtx, cancel := context.WithTimeout(ctx, 4*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	// Two enterers: 8 enters back to back, then 10 enters 300 ms apart
	// (7/s together, below the rate: the line empties in about a second),
	// over and over; or flooding, 5 ms apart.
	for e := range 2 {
		wg.Go(func() {
			for i := 0; runCtx.Err() == nil; i++ {
				user := fmt.Sprintf("e%d-%04d", e, i)
				from := time.Now()
				st, err := s.Enter(ctx, room, waitroom.Unlimited(user))
				call := span{from, time.Now()}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				entered[user] = call
				numbers[st.Number] = user
				mu.Unlock()
				if st.AdmittedNow {
					add(admission{user: user, instant: true})
				}
				switch {
				case flood:
					time.Sleep(5 * time.Millisecond)
				case i%18 >= 8:
					time.Sleep(300 * time.Millisecond)
				}
			}
		})
	}
	for range 3 { // admitters, overlapping
		wg.Go(func() {
			for runCtx.Err() == nil {
				from := time.Now()
				b, err := s.AdmitBatch(runCtx)
				call := span{from, time.Now()}
				for _, r := range b.Rooms {
					for _, a := range r.Admitted {
						add(admission{number: a.Number, batch: call})
					}
				}
				if err == nil {
					time.Sleep(cfg.AdmitInterval)
				}
			}
		})
	}
	var exceeded atomic.Int64
	var orders sync.WaitGroup
	if maxActive > 0 {
		orders.Go(func() { // buyers claim their turns and use each token 30 ms after it is issued
			for a := range tokens {
				if a.user == "" {
					a.user = holder(a.number)
				}
				st, err := s.Position(ctx, room, waitroom.Unlimited(a.user))
				if err != nil || st.Status != waitroom.Ready {
					t.Errorf("%s claiming its turn: %+v %v", a.user, st, err)
					continue
				}
				time.Sleep(30 * time.Millisecond)
				l, err := s.BeginOrder(ctx, waitroom.Unlimited(a.user), waitroom.OrderAttempt{Room: room, Token: st.Token})
				if err == nil {
					err = s.CommitOrder(ctx, l, waitroom.StoredAnswer{Status: 201})
				}
				if err != nil {
					t.Errorf("order of %s: %v", a.user, err)
				}
			}
		})
		wg.Go(func() { // an outside observer of the live tokens
			for runCtx.Err() == nil {
				if n, err := rdb.ZCard(runCtx, "wr:{"+room+"}:tokens").Result(); err == nil && n > maxActive {
					exceeded.Store(n)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(tokens)
	orders.Wait()
	if n := exceeded.Load(); n > 0 {
		t.Errorf("%d live tokens seen, maxActive %d", n, maxActive)
	}
	for i, a := range got {
		if a.user == "" {
			got[i].user = holder(a.number)
		}
	}
	checkInstantRace(t, cfg, elapsed, got, entered)
}

// checkInstantRace checks the race's admissions: nobody twice, the rate
// held, nobody admitted at once while someone was surely in line, and the
// queued users admitted in the order the store surely saw them join.
func checkInstantRace(t *testing.T, cfg waitroom.Config, elapsed time.Duration, got []admission, entered map[string]span) {
	t.Helper()
	seen := map[string]bool{}
	var instant, queued []admission
	for _, a := range got {
		if seen[a.user] {
			t.Errorf("%s admitted twice", a.user)
		}
		seen[a.user] = true
		if a.instant {
			instant = append(instant, a)
		} else {
			queued = append(queued, a)
		}
	}
	limit := math.Ceil(cfg.AdmitRatePerSec*elapsed.Seconds() + cfg.BatchSize())
	t.Logf("%v: %d admitted (%d at once, %d from the line), limit %.0f", elapsed.Round(time.Millisecond), len(got), len(instant), len(queued), limit)
	if float64(len(got)) > limit {
		t.Errorf("over-admission: %d > rate × elapsed + one batch = %.0f", len(got), limit)
	}
	if len(instant) == 0 || len(queued) == 0 {
		t.Errorf("the race must mix instant admissions (%d) and batches (%d)", len(instant), len(queued))
	}
	for _, q := range queued {
		// q was in line from the end of its enter to the start of its batch.
		inLine := span{entered[q.user].to, q.batch.from}
		for _, a := range instant {
			if e := entered[a.user]; e.from.After(inLine.from) && e.to.Before(inLine.to) {
				t.Errorf("%s admitted at once while %s waited", a.user, q.user)
			}
		}
		// FIFO: an enter that ended before q's began joined behind q only if
		// the store reordered them; its batch then ended before q's began.
		for _, late := range queued {
			if entered[q.user].to.Before(entered[late.user].from) && late.batch.to.Before(q.batch.from) {
				t.Errorf("FIFO inversion: %s joined before %s but was admitted after", q.user, late.user)
			}
		}
	}
}
