package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// anonymous is user as an anonymous visitor (a ticket's), carrying the
// place numbered place (0: none), signed now.
// anonymous is a visitor's call as the API makes it: without a place, the
// enter of a new visitor; with one, its ticket's.
func anonymous(user string, place int64) waitroom.Caller {
	c := waitroom.Unlimited(user)
	c.Anonymous, c.Place, c.PlaceAt, c.NewVisitor = true, place, time.Now(), place == 0
	return c
}

// An anonymous visitor's place is its number alone (line.lua): its enter
// keeps no key of its own (an account's keeps one record in a bucket),
// its polls read its position from the number, admission passes the
// numbers in order whoever holds them, and the visitor's
// next call claims the token: the same one on every repeat, and never a
// second one after the first has bought.
func TestAnonymousPlacesAreNumbersAlone(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		cfg := testConfig()
		cfg.AdmitRatePerSec = 20 // batches of 2
		s, rdb := newStore(t, engine, cfg)
		who := []waitroom.Caller{anonymous("v-1", 0), waitroom.Unlimited("acct"), anonymous("v-2", 0), anonymous("v-3", 0)}
		for i := range who {
			st, err := s.Enter(ctx, "r", who[i])
			if err != nil || st.Status != waitroom.Waiting || st.Position != int64(i+1) || st.Number != int64(i+1) {
				t.Fatalf("enter of %s: %+v %v", who[i].User, st, err)
			}
			who[i].Place = st.Number
		}
		for _, key := range rdb.Keys(ctx, "*").Val() {
			if strings.Contains(key, "v-") {
				t.Errorf("an anonymous visitor's enter wrote %s", key)
			}
		}
		bucket, field := redisstore.AccountKey("r", "acct")
		if buckets := rdb.Keys(ctx, "wr:{r}:a:*").Val(); !slices.Equal(buckets, []string{bucket}) || rdb.HGet(ctx, bucket, field).Val() != "2" {
			t.Errorf("buckets %v, want acct's record of number 2 alone", buckets)
		}
		if st, err := s.Position(ctx, "r", anonymous("v-2", 0)); err != nil || st.Status != waitroom.NotInQueue {
			t.Fatalf("an anonymous visitor without its place: %+v %v", st, err)
		}
		b, err := s.AdmitBatch(ctx)
		if err != nil || len(b.Rooms) != 1 {
			t.Fatal(b, err)
		}
		got := b.Rooms[0].Admitted
		if len(got) != 2 || got[0].Number != 1 || got[0].User != "" || got[1].Number != 2 || got[1].User != "" {
			t.Fatalf("the first batch admitted %+v, want numbers 1 and 2 (v-1's and acct's)", got)
		}
		first, err := s.Position(ctx, "r", who[0])
		if err != nil || first.Status != waitroom.Ready || first.Token == "" {
			t.Fatalf("v-1 claiming its turn: %+v %v", first, err)
		}
		if again, err := s.Enter(ctx, "r", who[0]); err != nil || again.Token != first.Token {
			t.Fatalf("v-1 again: %+v %v, want the same token", again, err)
		}
		if st, err := s.Position(ctx, "r", who[2]); err != nil || st.Status != waitroom.Waiting || st.Position != 1 {
			t.Fatalf("v-2 after the batch: %+v %v", st, err)
		}
		l, err := s.BeginOrder(ctx, waitroom.Unlimited("v-1"), waitroom.OrderAttempt{Room: "r", Token: first.Token})
		if err == nil {
			err = s.CommitOrder(ctx, l, waitroom.StoredAnswer{Status: 201})
		}
		if err != nil {
			t.Fatal(err)
		}
		if st, err := s.Position(ctx, "r", who[0]); err != nil || st.Status != waitroom.NotInQueue {
			t.Fatalf("v-1 after its order: %+v %v, want no second token", st, err)
		}
	})
}

// maxActive counts the numbers admitted and not yet claimed: they hold
// their place as tokens do, until claimed (then the token does) or until
// their claim window, the token's life, ends unclaimed.
func TestUnclaimedNumbersHoldMaxActiveUntilTheirWindowEnds(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		cfg := testConfig()
		cfg.EntryTokenTTL = time.Second
		s, _ := newStore(t, engine, cfg)
		change(t, s, "r", func(st *waitroom.Settings) { st.MaxActive, st.RatePerSec = 2, 100 })
		var who []waitroom.Caller
		for i := range 4 {
			c := anonymous(fmt.Sprint("v-", i), 0)
			st, err := s.Enter(ctx, "r", c)
			if err != nil {
				t.Fatal(err)
			}
			c.Place = st.Number
			who = append(who, c)
		}
		admit := func() []waitroom.Admission {
			t.Helper()
			b, err := s.AdmitBatch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range b.Rooms {
				return r.Admitted
			}
			return nil
		}
		if got := admit(); len(got) != 2 {
			t.Fatalf("first batch admitted %d, want maxActive's 2", len(got))
		}
		time.Sleep(cfg.AdmitInterval)
		if got := admit(); len(got) != 0 {
			t.Fatalf("%d admitted while two unclaimed numbers fill maxActive", len(got))
		}
		if st, err := s.Position(ctx, "r", who[0]); err != nil || st.Status != waitroom.Ready {
			t.Fatalf("v-0's claim: %+v %v", st, err)
		}
		time.Sleep(cfg.EntryTokenTTL + cfg.AdmitInterval) // v-0's token and v-1's window end
		if st, err := s.Position(ctx, "r", who[1]); err != nil || st.Status != waitroom.NotInQueue {
			t.Fatalf("v-1 claiming after its window: %+v %v", st, err)
		}
		if got := admit(); len(got) != 2 || got[0].Number != 3 {
			t.Fatalf("after the window: %+v, want numbers 3 and 4", got)
		}
		if st, err := s.Status(ctx, "r"); err != nil || st.ActiveTokens != 2 {
			t.Fatalf("status: %d active, want the two numbers just admitted (%v)", st.ActiveTokens, err)
		}
	})
}

// A place signed before the room's counter started is another line's: an
// idle room's counter goes with its hash, and its numbers start again.
func TestAPlaceOfAnEarlierLineCountsForNothing(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, _ := newStore(t, engine, testConfig())
		for i := range 3 {
			if _, err := s.Enter(ctx, "r", anonymous(fmt.Sprint("v-", i), 0)); err != nil {
				t.Fatal(err)
			}
		}
		old := anonymous("v-old", 2)
		old.PlaceAt = time.Now().Add(-time.Hour)
		if st, err := s.Position(ctx, "r", old); err != nil || st.Status != waitroom.NotInQueue {
			t.Fatalf("a place signed before the counter: %+v %v", st, err)
		}
		if st, err := s.Enter(ctx, "r", old); err != nil || st.Position != 4 || st.Number != 4 {
			t.Fatalf("its enter: %+v %v, want a new place at the back", st, err)
		}
	})
}

// Under concurrent enters of anonymous visitors and accounts, and batches
// admitting meanwhile, every number is given once, admission passes them
// in order (no FIFO inversion) and each exactly once, and concurrent
// claims of one number give one token.
func TestNumbersUnderConcurrency(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		cfg := testConfig()
		cfg.AdmitRatePerSec = 500 // batches of 50
		s, rdb := newStore(t, engine, cfg)
		const n = 400
		numbers := make([]int64, n)
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := w; i < n; i += 8 {
					c := anonymous(fmt.Sprint("v-", i), 0)
					if i%5 == 0 {
						c = waitroom.Unlimited(fmt.Sprint("a-", i))
					}
					st, err := s.Enter(ctx, "r", c)
					if err != nil {
						t.Error(err)
						return
					}
					numbers[i] = st.Number
				}
			})
		}
		var passed []waitroom.Admission
		for len(passed) < n {
			b, err := s.AdmitBatch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range b.Rooms {
				passed = append(passed, r.Admitted...)
			}
			time.Sleep(cfg.AdmitInterval / 4)
		}
		wg.Wait()
		var admitted []int64
		for _, a := range passed {
			if a.User != "" { // an account's place: its number is its enter's
				a.Number = numbers[atoi(strings.TrimPrefix(a.User, "a-"))]
			}
			admitted = append(admitted, a.Number)
		}
		if !slices.IsSorted(admitted) || len(slices.Compact(slices.Clone(admitted))) != n {
			t.Fatalf("admitted %d numbers, in order %v, distinct %d", len(admitted), slices.IsSorted(admitted), len(slices.Compact(slices.Clone(admitted))))
		}
		tokens := make([]string, 8)
		for w := range tokens {
			wg.Go(func() {
				st, err := s.Position(ctx, "r", anonymous("v-1", numbers[1]))
				if err != nil || st.Status != waitroom.Ready {
					t.Errorf("claim %d: %+v %v", w, st, err)
				}
				tokens[w] = st.Token
			})
		}
		wg.Wait()
		if tokens[0] == "" || slices.ContainsFunc(tokens, func(x string) bool { return x != tokens[0] }) {
			t.Fatalf("concurrent claims gave %v", tokens)
		}
		if live := rdb.ZScore(ctx, "wr:{r}:tokens", "v-1"); live.Err() == redis.Nil {
			t.Fatal("the claimed token is not live")
		}
		if _, err := redisstore.LineLength(ctx, rdb, "r"); err != nil {
			t.Fatal(err)
		}
	})
}

func atoi(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}

// A failover to a replica that never saw the last enters loses no
// anonymous place: their numbers are their tickets'. The replica's counter
// is behind, so a newcomer (an account) takes a number again; both holders
// wait at it, the batch that passes it records it, and the visitor claims
// its turn beside the account's token. A number beyond the counter moves
// it past, so admission reaches it.
func TestAnAnonymousPlaceSurvivesAFailover(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		cfg := testConfig()
		cfg.AdmitRatePerSec = 10 // batches of 1
		s, rdb := newStore(t, engine, cfg)
		who := map[string]waitroom.Caller{}
		for _, u := range []string{"v-a", "v-b", "v-c"} {
			st, err := s.Enter(ctx, "r", anonymous(u, 0))
			if err != nil {
				t.Fatal(err)
			}
			who[u] = anonymous(u, st.Number)
		}
		// The replica never had v-b's and v-c's enters: its counter gives 2
		// next, to an account.
		rdb.HSet(ctx, "wr:{r}:settings", "next", 2)
		late, err := s.Enter(ctx, "r", waitroom.Unlimited("acct-d"))
		if err != nil || late.Number != who["v-b"].Place {
			t.Fatalf("acct-d: %+v %v, want v-b's number again", late, err)
		}
		who["acct-d"] = waitroom.Unlimited("acct-d")
		if st, err := s.Position(ctx, "r", who["v-c"]); err != nil || st.Status != waitroom.Waiting || st.Position != 3 {
			t.Fatalf("v-c after the failover: %+v %v", st, err)
		}
		tokens := map[string]string{}
		for batch := 0; len(tokens) < 4 && batch < 10; batch++ {
			if _, err := s.AdmitBatch(ctx); err != nil {
				t.Fatal(err)
			}
			for u, c := range who {
				if st, err := s.Position(ctx, "r", c); err == nil && st.Status == waitroom.Ready {
					tokens[u] = st.Token
				}
			}
			time.Sleep(cfg.AdmitInterval)
		}
		if len(tokens) != 4 || tokens["v-b"] == tokens["acct-d"] {
			t.Fatalf("tokens after the failover: %v, want four, v-b's and acct-d's distinct", tokens)
		}
	})
}

// The room's view tells no front while nobody waits: the front at the
// counter's next number once admission passed everyone (GET /queue/line
// then carries none, and a place goes to the store, which claims).
func TestTheViewHasNoFrontOnceEveryoneIsPassed(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, _ := newStore(t, engine, testConfig())
		st, err := s.Enter(ctx, "r", anonymous("v-1", 0))
		if err != nil {
			t.Fatal(err)
		}
		if v, err := s.View(ctx, "r"); err != nil || v.Front != st.Number || !v.Exact {
			t.Fatalf("view while v-1 waits: %+v %v", v, err)
		}
		if _, err := s.AdmitBatch(ctx); err != nil {
			t.Fatal(err)
		}
		if v, err := s.View(ctx, "r"); err != nil || v.Front != 0 {
			t.Fatalf("view once v-1 is passed: %+v %v, want no front", v, err)
		}
	})
}

// An admission at enter (instant admission) takes a number too, which the
// visitor's credential keeps: a failover that loses the admission (its
// token, its batch, the counter) puts the visitor back in line at that
// number, not at the back, and its turn comes again.
func TestAnAdmissionAtEnterSurvivesAFailover(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		cfg := testConfig()
		cfg.InstantAdmit = true
		s, rdb := newStore(t, engine, cfg)
		st, err := s.Enter(ctx, "r", anonymous("v-1", 0))
		if err != nil || st.Status != waitroom.Ready || st.Number != 1 {
			t.Fatalf("instant admission: %+v %v, want READY with number 1", st, err)
		}
		if again, err := s.Position(ctx, "r", anonymous("v-1", 1)); err != nil || again.Token != st.Token {
			t.Fatalf("v-1 again: %+v %v", again, err)
		}
		// The replica never had the enter.
		rdb.Del(ctx, "wr:{r}:u:v-1", "wr:{r}:c:v-1", "wr:{r}:batches", "wr:{r}:tokens")
		rdb.HSet(ctx, "wr:{r}:settings", "next", 1, "front", 1)
		if st, err := s.Position(ctx, "r", anonymous("v-1", 1)); err != nil || st.Status != waitroom.Waiting || st.Position != 1 {
			t.Fatalf("v-1 after the failover: %+v %v, want its place back", st, err)
		}
		if _, err := s.AdmitBatch(ctx); err != nil {
			t.Fatal(err)
		}
		if st, err := s.Position(ctx, "r", anonymous("v-1", 1)); err != nil || st.Status != waitroom.Ready || st.Token == "" {
			t.Fatalf("v-1's turn again: %+v %v", st, err)
		}
	})
}

// An account keeps one record, its number, in a bucket of its line
// (line.lua): entering again finds the same number; the bucket lives as
// long as its places may wait (twice the wait at the room's rate, the
// claim window and an hour); a bucket of an earlier line counts for
// nothing and is dropped when written; the claim of its turn removes the
// record.
func TestAnAccountKeepsOneRecordWhileItMayWait(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		cfg := testConfig()
		cfg.AdmitRatePerSec = 10 // batches of 1
		s, rdb := newStore(t, engine, cfg)
		for i, u := range []string{"a", "b", "c"} {
			st, err := s.Enter(ctx, "r", waitroom.Unlimited(u))
			if err != nil || st.Number != int64(i+1) {
				t.Fatalf("%s: %+v %v", u, st, err)
			}
			bucket, field := redisstore.AccountKey("r", u)
			least := time.Duration(2*(i+1)*100)*time.Millisecond + cfg.EntryTokenTTL + time.Hour
			if ttl := rdb.PTTL(ctx, bucket).Val(); ttl < least-2*time.Second || ttl > least+time.Second {
				t.Errorf("%s's bucket lives %v, want %v", u, ttl, least)
			}
			if n := rdb.HGet(ctx, bucket, field).Val(); n != fmt.Sprint(i+1) {
				t.Errorf("%s's record %q", u, n)
			}
		}
		if st, err := s.Enter(ctx, "r", waitroom.Unlimited("a")); err != nil || st.Number != 1 || st.Joined {
			t.Fatalf("a again: %+v %v, want its number 1", st, err)
		}
		// b's bucket is of an earlier line: b's record there counts for nothing.
		bucket, field := redisstore.AccountKey("r", "b")
		rdb.HSet(ctx, bucket, "b", "1", "stale-field", "7")
		st, err := s.Enter(ctx, "r", waitroom.Unlimited("b"))
		if err != nil || st.Number != 4 || !st.Joined {
			t.Fatalf("b with a stale bucket: %+v %v, want a new number 4", st, err)
		}
		if fields := rdb.HKeys(ctx, bucket).Val(); len(fields) != 2 || rdb.HGet(ctx, bucket, field).Val() != "4" {
			t.Errorf("b's bucket holds %v, want b's record and its line alone", fields)
		}
		if _, err := s.AdmitBatch(ctx); err != nil {
			t.Fatal(err)
		}
		if st, err := s.Position(ctx, "r", waitroom.Unlimited("a")); err != nil || st.Status != waitroom.Ready {
			t.Fatalf("a claiming its turn: %+v %v", st, err)
		}
		if bucket, field := redisstore.AccountKey("r", "a"); rdb.HExists(ctx, bucket, field).Val() {
			t.Errorf("a's record outlives its claim")
		}
	})
}
