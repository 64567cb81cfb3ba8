package redisstore_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// With DURABLE_WRITES=wait the gate's check and commit still cost one
// round trip each: WAIT rides in the script's pipeline, on its
// connection. Without a replica to acknowledge, the check answers
// unavailable with the lock it took, which the gate gives up
// (ReleaseOrder: the user's retry is not met by 409 order_in_progress;
// httpapi's TestAFailedCheckLeavesNoLock), and the commit answers unavailable (the gate retries
// it). Only a real redis-server with a replica can take part.
func TestDurableWritesWaitForAReplicaRedisServer(t *testing.T) {
	primary := redistest.Start(t)
	replica := redistest.StartReplica(t, primary.Addr)
	ctx := context.Background()
	as := func(user string) waitroom.Caller { return waitroom.Caller{User: user, IP: "192.0.2.1"} }
	rdb := primary.Client()
	counter := &redistest.RoundTrips{}
	rdb.AddHook(counter)
	cfg := testConfig()
	cfg.DurableWrites = waitroom.DurableWait
	s := redisstore.New(rdb, cfg)
	tokens := admitAll(t, s, "g", "u1", "u2", "u3")

	count := func(name string, op func() error) {
		t.Helper()
		before := counter.Count()
		if err := op(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := counter.Count() - before; got != 1 {
			t.Errorf("%s: %d round trips, want 1 (the script and WAIT in one pipeline)", name, got)
		}
	}
	warm, err := s.BeginOrder(ctx, as("u3"), waitroom.OrderAttempt{Room: "g", Token: tokens["u3"]})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CommitOrder(ctx, warm, waitroom.StoredAnswer{Status: 201}); err != nil {
		t.Fatal(err)
	}
	var lease waitroom.Lease
	count("durable gate check", func() error {
		lease, err = s.BeginOrder(ctx, as("u1"), waitroom.OrderAttempt{Room: "g", Token: tokens["u1"]})
		return err
	})
	count("durable gate commit", func() error { return s.CommitOrder(ctx, lease, waitroom.StoredAnswer{Status: 201}) })
	if n := replicaKeys(t, replica.Client(), "wr:{g}:u:u1"); n != 0 {
		t.Errorf("the consumed token is still on the replica after a durable commit")
	}

	// The replica gone: WAIT acknowledges nothing.
	if err := replica.Client().Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	attempt := waitroom.OrderAttempt{Room: "g", Token: tokens["u2"]}
	unreplicated, err := s.BeginOrder(ctx, as("u2"), attempt)
	if waitroom.ErrorCode(err) != waitroom.EUnavailable || unreplicated.LockValue == "" {
		t.Fatalf("a check no replica acknowledged: %+v %v, want unavailable with the lock it took", unreplicated, err)
	}
	if err := s.ReleaseOrder(ctx, unreplicated); err != nil {
		t.Fatal(err)
	}
	if n := replicaKeys(t, rdb, "wr:{g}:lock:u2"); n != 0 {
		t.Fatalf("the unreplicated check's lock was not given up: the user's retry would be 409 order_in_progress")
	}
	// Without durability the same store serves on.
	cfg.DurableWrites = waitroom.DurableOff
	plain := redisstore.New(rdb, cfg)
	if lease, err = plain.BeginOrder(ctx, as("u2"), attempt); err != nil || lease.LockValue == "" {
		t.Fatalf("DURABLE_WRITES=off: %+v %v", lease, err)
	}
	if err := s.CommitOrder(ctx, lease, waitroom.StoredAnswer{Status: 201}); waitroom.ErrorCode(err) != waitroom.EUnavailable {
		t.Fatalf("a commit no replica acknowledged: %v, want unavailable (the gate retries it)", err)
	}
}

func replicaKeys(t *testing.T, c *redis.Client, key string) int64 {
	t.Helper()
	n, err := c.Exists(context.Background(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}
