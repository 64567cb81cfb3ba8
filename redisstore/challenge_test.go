package redisstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/linetest"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// newVisitor is the caller of an enter that makes visitor user with the
// solved challenge of nonce (CHALLENGE=pow).
func newVisitor(user, nonce string, ttl time.Duration) waitroom.Caller {
	return waitroom.Caller{User: user, IP: "192.0.2.9", NewVisitor: true,
		Challenge: waitroom.ChallengeSpend{Nonce: nonce, TTL: ttl}}
}

// One solved challenge makes one visitor, across every process: 32
// concurrent enters of 32 new visitors with the same challenge, half
// through each of two stores on one Redis, put exactly one in line. The
// nonce's record lives as long as the challenge (rounded up to the ms);
// the refused enters leave nothing behind.
func TestSolvedChallengeMakesOneVisitorAcrossProcesses(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx, srv := context.Background(), engine.Start(t)
		cfg := testConfig()
		stores := []*redisstore.Store{redisstore.New(srv.Client(), cfg), redisstore.New(srv.Client(), cfg)}
		rdb := srv.Client()
		var made, spent atomic.Int64
		var wg sync.WaitGroup
		for i := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := stores[i%2].Enter(ctx, "r", newVisitor(fmt.Sprintf("v-%02d", i), "nonce-1", 90*time.Second+300*time.Microsecond))
				switch waitroom.ErrorCode(err) {
				case "":
					made.Add(1)
				case waitroom.EChallengeRequired:
					spent.Add(1)
				default:
					t.Errorf("enter: %v", err)
				}
			}()
		}
		wg.Wait()
		if made.Load() != 1 || spent.Load() != 31 {
			t.Fatalf("%d visitors made and %d refused with one challenge; want 1 and 31", made.Load(), spent.Load())
		}
		if n := linetest.Length(t, rdb, "r"); n != 1 {
			t.Fatalf("the line holds %d", n)
		}
		if ttl := rdb.PTTL(context.Background(), "wr:{r}:pow:nonce-1").Val(); ttl <= 89*time.Second || ttl > 90*time.Second+time.Millisecond {
			t.Fatalf("the nonce's record lives %v; want the challenge's remaining 90.0003 s, rounded up", ttl)
		}
		// Another challenge makes another visitor; an enter that spends
		// none (a ticket holder, an account) writes no record.
		if _, err := stores[0].Enter(ctx, "r", newVisitor("v-other", "nonce-2", time.Minute)); err != nil {
			t.Fatal(err)
		}
		if _, err := stores[1].Enter(ctx, "r", newVisitor("v-none", "", 0)); err != nil {
			t.Fatal(err)
		}
		if keys := rdb.Keys(context.Background(), "wr:{r}:pow:*").Val(); len(keys) != 2 {
			t.Fatalf("records %v; want nonce-1's and nonce-2's", keys)
		}
	})
}

// A full line spends nothing: the solution is still good once there is
// room. The broker's accept spends the challenge too, once.
func TestChallengeSpentOnlyWhenAVisitorIsMade(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx, cfg := context.Background(), testConfig()
		cfg.QueueCapacity = 1
		s, rdb := newStore(t, engine, cfg)
		if _, err := s.Enter(ctx, "r", waitroom.Unlimited("h:first")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Enter(ctx, "r", newVisitor("v-a", "n-full", time.Minute)); waitroom.ErrorCode(err) != waitroom.EQueueFull {
			t.Fatalf("enter into a full line: %v", err)
		}
		if rdb.Exists(context.Background(), "wr:{r}:pow:n-full").Val() != 0 {
			t.Fatal("a full line spent the challenge")
		}
		for i, want := range []waitroom.Code{"", waitroom.EChallengeRequired} {
			err := s.Admissible(ctx, "r", newVisitor(fmt.Sprintf("v-b%d", i), "n-accept", time.Minute))
			if waitroom.ErrorCode(err) != want {
				t.Fatalf("accept %d: %v; want %q", i, err, want)
			}
		}
	})
}
