package failover

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/bench/spike/sim"
	"github.com/waitroom/waitroom/internal/dynamotest"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// measureWaitCost times the gate's two store calls for one order
// (BeginOrder, then CommitOrder) on a primary with a replica, one
// connection, DURABLE_WRITES off and wait in alternating blocks of 100
// orders so that both meet the same machine.
func measureWaitCost(t testing.TB, orders int) sim.FailoverWaitCost {
	primary := redistest.Start(t, "--repl-diskless-sync-delay", "0")
	redistest.StartReplica(t, primary.Addr)
	rdb := redis.NewClient(&redis.Options{Addr: primary.Addr, PoolSize: 1})
	t.Cleanup(func() { _ = rdb.Close() })
	counter := &redistest.RoundTrips{}
	rdb.AddHook(counter)
	cfg := waitroom.Config{AdmitRatePerSec: 1e6, AdmitInterval: 100 * time.Millisecond, AdmitBatches: 1, EntryTokenTTL: 10 * time.Minute,
		QueueCapacity: 1e6, OrderTimeout: 5 * time.Second, OpenRooms: true}
	off := redisstore.New(rdb, cfg)
	cfg.DurableWrites = waitroom.DurableWait
	wait := redisstore.New(rdb, cfg)
	ctx := context.Background()
	leases := admitted(t, ctx, off, 2*orders)
	times := map[*redisstore.Store][]float64{}
	trips := map[*redisstore.Store]int64{}
	for i := 0; i < 2*orders; i++ {
		s := off
		if (i/100)%2 == 1 {
			s = wait
		}
		before, start := counter.Count(), time.Now()
		lease, err := s.BeginOrder(ctx, waitroom.Unlimited(leases[i].user), leases[i].OrderAttempt)
		if err == nil {
			err = s.CommitOrder(ctx, lease, waitroom.StoredAnswer{Status: 201})
		}
		if err != nil {
			t.Fatalf("order %d: %v", i, err)
		}
		times[s] = append(times[s], float64(time.Since(start).Microseconds())/1000)
		trips[s] += counter.Count() - before
	}
	c := sim.FailoverWaitCost{Calls: orders, RoundTripsOff: int(trips[off]) / len(times[off]), RoundTripsWait: int(trips[wait]) / len(times[wait])}
	c.OffP50, c.OffP95, c.OffP99 = quantiles(times[off])
	c.WaitP50, c.WaitP95, c.WaitP99 = quantiles(times[wait])
	return c
}

// admittedUser is a user admitted and its order attempt.
type admittedUser struct {
	user string
	waitroom.OrderAttempt
}

// admitted puts n accounts in a room's line, runs batches until the front
// has passed all their numbers (admission names no user: line.lua), and
// claims each one's entry token as its next poll does (Position:
// claim.lua); it returns their order attempts.
func admitted(t testing.TB, ctx context.Context, s *redisstore.Store, n int) []admittedUser {
	users := make([]string, n)
	for i := range users {
		users[i] = fmt.Sprintf("u%d", i)
		if _, err := s.Enter(ctx, "cost", waitroom.Unlimited(users[i])); err != nil {
			t.Fatal(err)
		}
	}
	for passed := 0; passed < n; {
		b, err := waitroom.RunBatch(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range b.Rooms {
			passed += len(r.Admitted)
		}
		time.Sleep(10 * time.Millisecond)
	}
	out := make([]admittedUser, n)
	for i, u := range users {
		st, err := s.Position(ctx, "cost", waitroom.Unlimited(u))
		if err != nil || st.Status != waitroom.Ready || st.Token == "" {
			t.Fatalf("%s's claim: %+v %v", u, st, err)
		}
		out[i] = admittedUser{u, waitroom.OrderAttempt{Room: "cost", Token: st.Token}}
	}
	return out
}

// quantiles are the median, the 95th and the 99th percentile of ms.
func quantiles(ms []float64) (p50, p95, p99 float64) {
	s := append([]float64(nil), ms...)
	sort.Float64s(s)
	at := func(q float64) float64 { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return at(0.50), at(0.95), at(0.99)
}

// measureRecordCost times the order record's claim, the one call it adds
// to an order's path (a conditional PutItem before the order goes
// downstream), on a fresh dynalite, one token per order.
func measureRecordCost(t testing.TB, orders int) sim.FailoverRecordCost {
	srv := dynamotest.Start(t)
	rec, _ := srv.Record(t)
	ctx := context.Background()
	expires := time.Now().Add(10 * time.Minute)
	ms := make([]float64, 0, orders)
	for i := range orders + 100 { // the first 100 warm the connection and the server
		c := waitroom.OrderClaim{Room: "cost", Token: fmt.Sprintf("cost.t%d", i), Attempt: "a", Expires: expires}
		start := time.Now()
		if prior, err := rec.Claim(ctx, c); err != nil || prior != nil {
			t.Fatalf("claim %d: %v %+v", i, err, prior)
		}
		if i >= 100 {
			ms = append(ms, float64(time.Since(start).Microseconds())/1000)
		}
	}
	c := sim.FailoverRecordCost{Server: "dynalite " + dynamotest.Version(), Calls: orders}
	c.P50, c.P95, c.P99 = quantiles(ms)
	return c
}
