package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// Every script runs on a 3-master Redis Cluster: all keys of a room share
// its {room} hash slot, and rooms spread over the shards.
func TestScriptsOnCluster(t *testing.T) {
	t.Parallel() // waits for its cluster to form; asserts positions and shards, not timing (own store)
	ctx := context.Background()
	cluster := redistest.StartCluster(t, 3)
	rdb := cluster.Client(t)
	s := redisstore.New(rdb, testConfig())

	rooms := []string{"shoes", "tv", "books", "games", "phones", "default"}
	nodes := map[string]bool{}
	for _, room := range rooms {
		node, err := rdb.MasterForKey(ctx, "wr:{"+room+"}:line")
		if err != nil {
			t.Fatal(err)
		}
		nodes[node.Options().Addr] = true
		for i := 1; i <= 12; i++ {
			st, err := s.Enter(ctx, room, waitroom.Unlimited(fmt.Sprintf("u%02d", i)))
			if err != nil || st.Position != int64(i) {
				t.Fatalf("enter %s u%02d: %+v %v", room, i, st, err)
			}
		}
	}
	if len(nodes) < 2 {
		t.Fatalf("rooms did not spread over shards: %v", nodes)
	}

	b, err := s.AdmitBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Rooms) != len(rooms) {
		t.Fatalf("batch covered %d rooms, want %d", len(b.Rooms), len(rooms))
	}
	for _, r := range b.Rooms {
		if len(r.Admitted) != 10 || r.Admitted[0].Number != 1 || r.Waiting != 2 {
			t.Fatalf("room %s: %+v", r.Room, r)
		}
	}

	// The claim of u01's turn and the order gate's scripts on a cluster.
	room := b.Rooms[0].Room
	claimed, err := s.Position(ctx, room, waitroom.Unlimited("u01"))
	if err != nil || claimed.Status != waitroom.Ready {
		t.Fatalf("u01 claiming its turn: %+v %v", claimed, err)
	}
	a := waitroom.Admission{User: "u01", Token: claimed.Token}
	attempt := waitroom.OrderAttempt{Room: room, Token: a.Token, IdempotencyKey: "k"}
	lease, err := s.BeginOrder(ctx, waitroom.Unlimited(a.User), attempt)
	if err != nil || lease.Replay != nil {
		t.Fatalf("begin: %+v %v", lease, err)
	}
	if err := s.CommitOrder(ctx, lease, waitroom.StoredAnswer{Status: 201, Body: `{"ok":true}`}); err != nil {
		t.Fatal(err)
	}
	lease, err = s.BeginOrder(ctx, waitroom.Unlimited(a.User), attempt)
	if err != nil || lease.Replay == nil || lease.Replay.Status != 201 {
		t.Fatalf("replay on cluster: %+v %v", lease, err)
	}

	// Script caches emptied (a failover, a restart): scripts load again by themselves.
	if err := rdb.ForEachShard(ctx, func(ctx context.Context, shard *redis.Client) error {
		return shard.ScriptFlush(ctx).Err()
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	if _, err := s.Enter(ctx, "shoes", waitroom.Unlimited("late")); err != nil {
		t.Fatalf("enter after SCRIPT FLUSH: %v", err)
	}
	if st, err := s.Position(ctx, "shoes", waitroom.Unlimited("late")); err != nil || st.Status != waitroom.Waiting || st.Position != 3 {
		t.Fatalf("position after SCRIPT FLUSH: %+v %v", st, err)
	}
	b, err = s.AdmitBatch(ctx)
	if err != nil || admittedCount(b) == 0 {
		t.Fatalf("admit after SCRIPT FLUSH: %+v %v", b, err)
	}
}
