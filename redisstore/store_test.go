package redisstore_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

func testConfig() waitroom.Config {
	return waitroom.Config{
		AdmitRatePerSec: 100,
		AdmitInterval:   100 * time.Millisecond,
		AdmitBatches:    10,
		EntryTokenTTL:   300 * time.Second,
		QueueCapacity:   100_000,
		OrderTimeout:    2 * time.Second,
		OpenRooms:       true,
	}
}

func newStore(t *testing.T, engine redistest.Engine, cfg waitroom.Config) (*redisstore.Store, *redis.Client) {
	t.Helper()
	rdb := engine.Start(t).Client()
	return redisstore.New(rdb, cfg), rdb
}

func TestEnterIsIdempotentAndExact(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, _ := newStore(t, engine, testConfig())
		for i := 1; i <= 5; i++ {
			st, err := s.Enter(ctx, "shoes", waitroom.Unlimited(fmt.Sprintf("u%d", i)))
			if err != nil || st.Status != waitroom.Waiting || st.Position != int64(i) || !st.Joined {
				t.Fatalf("enter u%d: %+v %v", i, st, err)
			}
		}
		st, err := s.Enter(ctx, "shoes", waitroom.Unlimited("u3"))
		if err != nil || st.Position != 3 || st.Joined {
			t.Fatalf("re-enter must keep the place: %+v %v", st, err)
		}
		st, err = s.Position(ctx, "shoes", waitroom.Unlimited("u5"))
		if err != nil || st.Status != waitroom.Waiting || st.Position != 5 {
			t.Fatalf("position: %+v %v", st, err)
		}
		st, err = s.Position(ctx, "other", waitroom.Unlimited("u5"))
		if err != nil || st.Status != waitroom.NotInQueue {
			t.Fatalf("rooms are independent: %+v %v", st, err)
		}
	})
}

func TestQueueFull(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		cfg := testConfig()
		cfg.QueueCapacity = 3
		s, _ := newStore(t, engine, cfg)
		for i := 0; i < 3; i++ {
			if _, err := s.Enter(ctx, "r", waitroom.Unlimited(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
		_, err := s.Enter(ctx, "r", waitroom.Unlimited("late"))
		if waitroom.ErrorCode(err) != waitroom.EQueueFull {
			t.Fatalf("want queue_full, got %v", err)
		}
		if st, err := s.Enter(ctx, "r", waitroom.Unlimited("1")); err != nil || st.Position != 2 {
			t.Fatalf("those in line are unaffected by a full line: %+v %v", st, err)
		}
	})
}

func TestAdmitIssuesTokensInOrder(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, _ := newStore(t, engine, testConfig())
		for i := 0; i < 25; i++ {
			if _, err := s.Enter(ctx, "r", waitroom.Unlimited(fmt.Sprintf("u%02d", i))); err != nil {
				t.Fatal(err)
			}
		}
		// The budget's clock is the script's, some time after this and
		// before AdmitBatch returns: what refills is counted from here.
		spent := time.Now()
		b, err := s.AdmitBatch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Rooms) != 1 || len(b.Rooms[0].Admitted) != 10 || b.Rooms[0].Waiting != 15 {
			t.Fatalf("first batch admits one full batch: %+v", b)
		}
		for i, a := range b.Rooms[0].Admitted {
			if a.User != "" || a.Number != int64(i+1) {
				t.Fatalf("admission %d: %+v, want number %d", i, a, i+1)
			}
			user := fmt.Sprintf("u%02d", i)
			st, err := s.Position(ctx, "r", waitroom.Unlimited(user)) // claims its turn (claim.lua)
			life := time.Until(st.ExpiresAt)
			if err != nil || st.Status != waitroom.Ready || !strings.HasPrefix(st.Token, "r.") || life < 295*time.Second || life > 300*time.Second {
				t.Fatalf("position of admitted %s: %+v %v", user, st, err)
			}
			if again, err := s.Position(ctx, "r", waitroom.Unlimited(user)); err != nil || again.Token != st.Token || !again.ExpiresAt.Equal(st.ExpiresAt) {
				t.Fatalf("%s again: %+v %v, want the same token", user, again, err)
			}
			if room, ok := waitroom.TokenRoom(st.Token); !ok || room != "r" {
				t.Fatalf("token %q does not name its room", st.Token)
			}
		}
		st, err := s.Position(ctx, "r", waitroom.Unlimited("u10"))
		if err != nil || st.Status != waitroom.Waiting || st.Position != 1 {
			t.Fatalf("u10 is now first: %+v %v", st, err)
		}
		// Soon after, the budget is spent: at most what the time since
		// refilled (a slow engine under -race takes tens of milliseconds).
		refilled := int(100*time.Since(spent).Seconds()) + 1
		b, err = s.AdmitBatch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n := admittedCount(b); n > refilled {
			t.Fatalf("budget spent, yet %d admitted (at most %d refilled)", n, refilled)
		}
		// A READY user entering again gets the same token, not a new place.
		st, err = s.Enter(ctx, "r", waitroom.Unlimited("u00"))
		if err != nil || st.Status != waitroom.Ready {
			t.Fatalf("ready user re-entering: %+v %v", st, err)
		}
	})
}

func admittedCount(b waitroom.Batch) int {
	n := 0
	for _, r := range b.Rooms {
		n += len(r.Admitted)
	}
	return n
}

// 2,000 enters, 64 at a time, get a distinct, gap-free sequence of
// positions. 64 callers interleave in the store as a crowd's do; 2,000 at
// once would only measure the client's pool (its 1 s wait for a
// connection runs out on a busy machine, issue 38), not the line.
func TestConcurrentEntersGapFree(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, rdb := newStore(t, engine, testConfig())
		const users, callers = 2000, 64
		positions := make([]int64, users)
		var wg sync.WaitGroup
		errs := make(chan error, users)
		next := make(chan int)
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					st, err := s.Enter(ctx, "crowd", waitroom.Unlimited(fmt.Sprintf("user-%d", i)))
					if err != nil {
						errs <- err
						continue
					}
					positions[i] = st.Position
					if st.Number != st.Position { // the front is 1: nobody was admitted
						errs <- fmt.Errorf("user-%d told position %d, number %d", i, st.Position, st.Number)
					}
				}
			}()
		}
		for i := range users {
			next <- i
		}
		close(next)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		sort.Slice(positions, func(a, b int) bool { return positions[a] < positions[b] })
		for i, p := range positions {
			if p != int64(i+1) {
				t.Fatalf("positions are not 1..%d without gaps: index %d has %d", users, i, p)
			}
		}
		// The position each user was told is the rank its number gives, and
		// the number is the one its record keeps.
		all := make([]string, users)
		for i := range all {
			all[i] = fmt.Sprintf("user-%d", i)
		}
		line, err := redisstore.Waiting(ctx, rdb, "crowd", all)
		if err != nil || len(line) != users {
			t.Fatalf("line: %d entries, %v", len(line), err)
		}
		for i, u := range line {
			if st, err := s.Position(ctx, "crowd", waitroom.Unlimited(u)); err != nil || st.Position != int64(i+1) || st.Number != int64(i+1) {
				t.Fatalf("numbers not gap-free at %d: %s has %+v %v", i, u, st, err)
			}
		}
	})
}

func TestNewClientModes(t *testing.T) {
	single, err := redisstore.NewClient(waitroom.Config{RedisURL: "redis://u:p@127.0.0.1:6379/2"}, redisstore.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	if c, ok := single.(*redis.Client); !ok || c.Options().DB != 2 || c.Options().Password != "p" {
		t.Fatalf("single node: %T", single)
	}
	cluster, err := redisstore.NewClient(waitroom.Config{RedisURL: "rediss://a:6379?addr=b:6379", RedisCluster: true}, redisstore.Credentials{Username: "svc", Password: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	c, ok := cluster.(*redis.ClusterClient)
	if !ok || len(c.Options().Addrs) != 2 || c.Options().TLSConfig == nil || c.Options().Password != "secret" {
		t.Fatalf("cluster: %T %+v", cluster, c.Options())
	}
	if _, err := redisstore.NewClient(waitroom.Config{RedisURL: "redis://%%"}, redisstore.Credentials{}); err == nil {
		t.Fatal("bad URL accepted")
	}
}

// A room nobody waits in and nobody holds a token of is no longer visited by
// admission; the next user to enter brings it back.
func TestEmptyRoomsAreForgottenAndComeBack(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		cfg := testConfig()
		cfg.EntryTokenTTL = time.Second
		s, rdb := newStore(t, engine, cfg)
		if _, err := s.Enter(ctx, "pop-up", waitroom.Unlimited("a")); err != nil {
			t.Fatal(err)
		}
		if b, err := s.AdmitBatch(ctx); err != nil || admittedCount(b) != 1 {
			t.Fatalf("%+v %v", b, err)
		}
		if st, err := s.Position(ctx, "pop-up", waitroom.Unlimited("a")); err != nil || st.Status != waitroom.Ready {
			t.Fatalf("a claiming its turn: %+v %v", st, err)
		}
		time.Sleep(1100 * time.Millisecond) // the token expires unused
		b, err := s.AdmitBatch(ctx)
		if err != nil || len(b.Rooms) != 1 || b.Rooms[0].TokensExpired != 1 {
			t.Fatalf("the expiry is counted before the room is forgotten: %+v %v", b, err)
		}
		if ok, err := rdb.SIsMember(ctx, "wr:rooms", "pop-up").Result(); err != nil || ok {
			t.Fatalf("an empty room is still visited (%v)", err)
		}
		if b, err := s.AdmitBatch(ctx); err != nil || len(b.Rooms) != 0 {
			t.Fatalf("forgotten room visited: %+v %v", b, err)
		}
		if _, err := s.Enter(ctx, "pop-up", waitroom.Unlimited("b")); err != nil {
			t.Fatal(err)
		}
		if b, err := s.AdmitBatch(ctx); err != nil || admittedCount(b) != 1 || b.Rooms[0].Admitted[0].Number != 2 { // b's, after a's 1
			t.Fatalf("room not back: %+v %v", b, err)
		}
	})
}
