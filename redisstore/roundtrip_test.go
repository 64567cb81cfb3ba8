package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// The hot paths cost one round trip each (scripts cached): enter, position,
// the gate's check and its commit; an admit batch costs two (read the rooms,
// then one pipeline of every room's script), and one more in the batch that
// hands a room's control window over (the decisions, one pipeline for all
// rooms), once a window. The abuse limiter runs inside those scripts: a
// limited caller costs the same. The gate's measurement of the order API
// rides in its commit and release.
func TestRoundTripsPerOperation(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		as := func(user string) waitroom.Caller { return waitroom.Caller{User: user, IP: "192.0.2.1"} }
		rdb := engine.Start(t).Client()
		counter := &redistest.RoundTrips{}
		rdb.AddHook(counter)
		cfg := testConfig()
		cfg.Trust.Limits = waitroom.Limits{ClientRatePerSec: 1000, ClientBurst: 1000, IPRatePerSec: 1000, IPBurst: 1000}
		s := redisstore.New(rdb, cfg)

		measure := func(name string, want int64, op func() error) {
			t.Helper()
			if err := op(); err != nil { // warm: load scripts, open connections
				t.Fatalf("%s: %v", name, err)
			}
			before := counter.Count()
			if err := op(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got := counter.Count() - before; got != want {
				t.Errorf("%s: %d round trips, want %d", name, got, want)
			}
		}
		measure("enter", 1, func() error { _, err := s.Enter(ctx, "r", as("u1")); return err })
		measure("position", 1, func() error { _, err := s.Position(ctx, "r", as("u1")); return err })
		measure("view", 1, func() error { _, err := s.View(ctx, "r"); return err })
		measure("admit batch", 2, func() error { _, err := waitroom.RunBatch(ctx, s); return err })

		// Room settings are read inside the same scripts: a created room of a
		// closed store (OPEN_ROOMS=false), paused or in its pre-queue, costs the
		// same, and so does refusing a room nobody created.
		closedCfg := cfg
		closedCfg.OpenRooms = false
		closed := redisstore.New(rdb, closedCfg)
		opens := time.Now().Add(time.Hour)
		for room, change := range map[string]func(*waitroom.Settings){
			"paused": func(st *waitroom.Settings) { st.Paused, st.MaxActive, st.RatePerSec = true, 5, 0.5 },
			"early":  func(st *waitroom.Settings) { st.OpensAt = &opens },
			"closed": func(st *waitroom.Settings) { st.Closed, st.Message, st.Title = true, "Sold out", "Shop" },
		} {
			if _, err := closed.Update(ctx, room, true, func(st waitroom.Settings) (waitroom.Settings, error) { change(&st); return st, nil }); err != nil {
				t.Fatal(err)
			}
			measure(room+" enter", 1, func() error { _, err := closed.Enter(ctx, room, as("u1")); return err })
			measure(room+" position", 1, func() error { _, err := closed.Position(ctx, room, as("u1")); return err })
		}
		measure("unknown room enter", 1, func() error {
			if _, err := closed.Enter(ctx, "unknown", as("u1")); waitroom.ErrorCode(err) != waitroom.ERoomNotFound {
				return fmt.Errorf("enter of an unknown room: %v", err)
			}
			return nil
		})
		measure("closed admit batch", 2, func() error { _, err := closed.AdmitBatch(ctx); return err })

		// Warm the gate's scripts on one user, then count on another.
		tokens := map[string]string{}
		for _, u := range []string{"u1", "u2"} {
			if _, err := s.Enter(ctx, "g", as(u)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.AdmitBatch(ctx); err != nil {
			t.Fatal(err)
		}
		claimAll(t, s, "g", []string{"u1", "u2"}, tokens)
		warm, err := s.BeginOrder(ctx, as("u2"), waitroom.OrderAttempt{Room: "g", Token: tokens["u2"]})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ReleaseOrder(ctx, warm); err != nil {
			t.Fatal(err)
		}
		if warm, err = s.BeginOrder(ctx, as(warm.User), warm.OrderAttempt); err != nil {
			t.Fatal(err)
		}
		if err := s.CommitOrder(ctx, warm, waitroom.StoredAnswer{Status: 201}); err != nil {
			t.Fatal(err)
		}

		count := func(name string, op func() error) {
			t.Helper()
			before := counter.Count()
			if err := op(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got := counter.Count() - before; got != 1 {
				t.Errorf("%s: %d round trips, want 1", name, got)
			}
		}
		var lease waitroom.Lease
		count("gate check", func() error {
			lease, err = s.BeginOrder(ctx, as("u1"), waitroom.OrderAttempt{Room: "g", Token: tokens["u1"]})
			return err
		})
		count("gate release", func() error { return s.ReleaseOrder(ctx, lease) })
		count("gate check again", func() error {
			lease, err = s.BeginOrder(ctx, as(lease.User), lease.OrderAttempt)
			return err
		})
		lease.Downstream = waitroom.DownstreamCall{Latency: 200 * time.Millisecond, Outcome: waitroom.OutcomeOK}
		count("gate commit", func() error { return s.CommitOrder(ctx, lease, waitroom.StoredAnswer{Status: 201}) })

		// The commit counted a call: the next batch starts the window, the
		// first after it hands it over and decides (the first time loads the
		// decision's script), the next one does not. Someone waits, so that
		// admission keeps visiting the room.
		if _, err := s.Enter(ctx, "g", as("u3")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Enter(ctx, "g", as("u4")); err != nil {
			t.Fatal(err)
		}
		handOver := func(want int64) {
			t.Helper()
			if _, err := waitroom.RunBatch(ctx, s); err != nil { // starts the window when none runs
				t.Fatal(err)
			}
			time.Sleep(waitroom.AdaptWindow)
			before := counter.Count()
			b, err := waitroom.RunBatch(ctx, s) // the admission loop's batch: the store's, then the law's decisions
			if err != nil {
				t.Fatal(err)
			}
			if handed := slices.ContainsFunc(b.Rooms, func(r waitroom.RoomBatch) bool { return r.Downstream != nil }); !handed {
				t.Fatalf("no window handed over: %+v", b)
			}
			if got := counter.Count() - before; want > 0 && got != want {
				t.Errorf("admit batch handing a window over: %d round trips, want %d", got, want)
			}
		}
		handOver(0)
		third, err := s.Position(ctx, "g", as("u3"))
		if err != nil || third.Status != waitroom.Ready {
			t.Fatalf("u3 not admitted: %+v %v", third, err)
		}
		if lease, err = s.BeginOrder(ctx, as("u3"), waitroom.OrderAttempt{Room: "g", Token: third.Token}); err != nil {
			t.Fatal(err)
		}
		lease.Downstream = waitroom.DownstreamCall{Latency: 200 * time.Millisecond, Outcome: waitroom.OutcomeOK}
		count("gate commit counting a call", func() error { return s.CommitOrder(ctx, lease, waitroom.StoredAnswer{Status: 201}) })
		handOver(3)
		measure("admit batch within a window", 2, func() error { _, err := waitroom.RunBatch(ctx, s); return err })
	})
}
