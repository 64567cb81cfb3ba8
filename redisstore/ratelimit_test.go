package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/linetest"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

func limitedConfig(l waitroom.Limits) waitroom.Config {
	cfg := testConfig()
	cfg.Trust.Limits = l
	return cfg
}

// Two stores (two processes' worth: two clients, two connection pools) on
// one Redis enforce one limit: 64 concurrent polls of one caller, half
// through each, let exactly the burst through (the refill is negligible).
func TestLimiterIsSharedAcrossProcesses(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		srv := engine.Start(t)
		cfg := limitedConfig(waitroom.Limits{ClientRatePerSec: 0.001, ClientBurst: 10, IPRatePerSec: 1000, IPBurst: 1000})
		stores := []*redisstore.Store{redisstore.New(srv.Client(), cfg), redisstore.New(srv.Client(), cfg)}
		ctx, flood := context.Background(), waitroom.Caller{User: "flood", IP: "192.0.2.7"}
		var ok, limited atomic.Int64
		var wg sync.WaitGroup
		for i := 0; i < 64; i++ {
			wg.Add(1)
			go func(s *redisstore.Store) {
				defer wg.Done()
				_, err := s.Position(ctx, "r", flood)
				switch waitroom.ErrorCode(err) {
				case "":
					ok.Add(1)
				case waitroom.ERateLimited:
					limited.Add(1)
					var e *waitroom.Error
					if !asError(err, &e) || e.RetryAfter <= 0 {
						t.Errorf("rate_limited without a retry time: %v", err)
					}
				default:
					t.Errorf("position: %v", err)
				}
			}(stores[i%2])
		}
		wg.Wait()
		if ok.Load() != 10 || limited.Load() != 54 {
			t.Fatalf("%d allowed, %d limited; want 10 and 54", ok.Load(), limited.Load())
		}
		// Another caller behind another IP is untouched, through either store.
		other := waitroom.Caller{User: "calm", IP: "192.0.2.8"}
		for _, s := range stores {
			if _, err := s.Enter(ctx, "r", other); err != nil {
				t.Fatalf("another caller: %v", err)
			}
		}
	})
}

// Calls reach the store in another order than their stamps (two processes,
// or two goroutines of one, stamp a call and are then scheduled apart): a
// call stamped before the one that made the bucket is still one of the
// burst. Here every call is stamped a millisecond before the one counted
// just before it, all a second behind the store's clock: exactly the burst
// is allowed, and what is refused says when to come back.
func TestLimiterCountsABurstStampedOutOfOrder(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		srv := engine.Start(t)
		cfg := limitedConfig(waitroom.Limits{ClientRatePerSec: 0.001, ClientBurst: 10, IPRatePerSec: 1000, IPBurst: 1000})
		stores := []*redisstore.Store{redisstore.New(srv.Client(), cfg), redisstore.New(srv.Client(), cfg)}
		ctx, flood := context.Background(), waitroom.Caller{User: "flood", IP: "192.0.2.7"}
		base := time.Now().Add(-time.Second)
		var allowed, limited []int
		for i := range 14 {
			s, stamp := stores[i%2], base.Add(-time.Duration(i)*time.Millisecond)
			redisstore.SetLimiterClock(s, func() time.Time { return stamp })
			_, err := s.Position(ctx, "r", flood)
			var e *waitroom.Error
			switch {
			case err == nil:
				allowed = append(allowed, i)
			case waitroom.ErrorCode(err) == waitroom.ERateLimited && asError(err, &e) && e.RetryAfter > 0:
				limited = append(limited, i)
			default:
				t.Fatalf("call %d: %v", i, err)
			}
		}
		if len(allowed) != 10 || len(limited) != 4 {
			t.Fatalf("burst 10, 14 calls stamped out of order: allowed %v, limited %v", allowed, limited)
		}
	})
}

// Many identities behind one IP meet the IP's bucket; the enter refused
// takes no place in line.
func TestLimiterPerIP(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		s, rdb := newStore(t, engine, limitedConfig(waitroom.Limits{ClientRatePerSec: 1000, ClientBurst: 1000, IPRatePerSec: 0.001, IPBurst: 5}))
		var refused int
		for i := 0; i < 8; i++ {
			c := waitroom.Caller{User: fmt.Sprint("id", i), IP: "198.51.100.1"}
			if _, err := s.Enter(context.Background(), "r", c); waitroom.ErrorCode(err) == waitroom.ERateLimited {
				refused++
			} else if err != nil {
				t.Fatal(err)
			}
		}
		if n := linetest.Length(t, rdb, "r"); refused != 3 || n != 5 {
			t.Fatalf("%d refused, %d in line; want 3 and 5", refused, n)
		}
	})
}

// A stray key of another type where a bucket lives (the limiter before
// this one kept hashes under other names) is neither an error nor a way
// past the limit: MGET reads it as no bucket and SET replaces it. What the
// store refuses to write fails the call (awslambda's
// TestLimiterRefusesWhenItCannotWriteOnRedisServer).
func TestLimiterReplacesAStrayKey(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		s, rdb := newStore(t, engine, limitedConfig(waitroom.Limits{ClientRatePerSec: 0.001, ClientBurst: 1000, IPRatePerSec: 0.001, IPBurst: 2}))
		ctx, u := context.Background(), waitroom.Caller{User: "u", IP: "203.0.113.9"}
		rdb.HSet(context.Background(), "wr:{r}:gcra:a:203.0.113.9", "not", "a number")
		for i := 0; i < 3; i++ {
			_, err := s.Enter(ctx, "r", u)
			if i < 2 && err != nil || i == 2 && waitroom.ErrorCode(err) != waitroom.ERateLimited {
				t.Fatalf("enter %d past a stray key (burst 2): %v", i, err)
			}
		}
	})
}

func asError(err error, target **waitroom.Error) bool { return errors.As(err, target) }

// A room nobody created (OPEN_ROOMS=false) is refused before the limiter
// writes its buckets: unknown rooms still write nothing.
func TestUnknownRoomWritesNoBuckets(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		cfg := limitedConfig(waitroom.Limits{ClientRatePerSec: 1, ClientBurst: 5, IPRatePerSec: 1, IPBurst: 5})
		cfg.OpenRooms = false
		s, rdb := newStore(t, engine, cfg)
		ctx, u := context.Background(), waitroom.Caller{User: "u", IP: "192.0.2.3"}
		if _, err := s.Enter(ctx, "nobody-made-this", u); waitroom.ErrorCode(err) != waitroom.ERoomNotFound {
			t.Fatalf("enter: %v", err)
		}
		if _, err := s.Position(ctx, "nobody-made-this", u); waitroom.ErrorCode(err) != waitroom.ERoomNotFound {
			t.Fatalf("position: %v", err)
		}
		if n := rdb.DBSize(context.Background()).Val(); n != 0 {
			t.Fatalf("%d keys written for an unknown room", n)
		}
	})
}

// The limiter's buckets are fields of the room's hash; admission sweeps
// those whose time has passed, so the hash holds the last moments' callers,
// not everyone who ever called; the idle expiry of a room nobody created
// takes the hash too.
func TestSweptBuckets(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		cfg := limitedConfig(waitroom.Limits{ClientRatePerSec: 5, ClientBurst: 20, IPRatePerSec: 500, IPBurst: 2000})
		s, rdb := newStore(t, engine, cfg)
		ctx := context.Background()
		if _, err := s.Enter(ctx, "r", waitroom.Unlimited("stays")); err != nil { // someone waits: the room is visited
			t.Fatal(err)
		}
		for i := 0; i < 300; i++ {
			c := waitroom.Caller{User: fmt.Sprint("poller-", i), IP: fmt.Sprintf("198.51.%d.%d", i/250, i%250)}
			if _, err := s.Position(ctx, "r", c); err != nil { // none of them waits
				t.Fatal(err)
			}
		}
		// Two buckets a caller; a room nobody created has no settings, only
		// the last second its line marked (enter.lua's 'mark'), its line's
		// front, counter and its counter's start (line.lua's 'front', 'next'
		// and 'born') and when its line started (enter.lua's 'since', for
		// the room's view).
		if n := rdb.HLen(ctx, "wr:{r}:settings").Val(); n != 605 {
			t.Fatalf("%d fields after 300 callers, want 600, 'mark', 'front', 'next', 'born' and 'since'", n)
		}
		time.Sleep(250 * time.Millisecond) // every bucket is full again (a step is 200 ms)
		for i := 0; i < 20; i++ {
			if _, err := s.AdmitBatch(ctx); err != nil {
				t.Fatal(err)
			}
		}
		// The line's start, which the room's view reads, and its numbers stay
		// beside 'mark' (the first batch admitted the one waiting: admission
		// kept nothing for the view, whose 'batch' and 'full' it writes while
		// someone waits), with 'pending', the admitted number not yet
		// claimed (claim.lua).
		if f := rdb.HKeys(ctx, "wr:{r}:settings").Val(); !sameSet(f, "mark", "since", "front", "next", "born", "pending") {
			t.Fatalf("%d fields left after the sweeps, want 'mark', 'since', 'front', 'next', 'born' and 'pending': %.5q", len(f), f)
		}
	})
}

// A store's limits are compiled into its scripts' text (configHead): two
// stores of different limits on one Redis each keep their own, also after
// the server loses its script cache (NOSCRIPT, then EVAL of the same text).
func TestLimitsAreEachStoresOwn(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		srv := engine.Start(t)
		strict := redisstore.New(srv.Client(), limitedConfig(waitroom.Limits{ClientRatePerSec: 0.001, ClientBurst: 3}))
		loose := redisstore.New(srv.Client(), limitedConfig(waitroom.Limits{ClientRatePerSec: 0.001, ClientBurst: 6}))
		ctx, u := context.Background(), waitroom.Caller{User: "u", IP: "192.0.2.7"}
		allowed := func(s *redisstore.Store, calls int) int {
			n := 0
			for range calls {
				_, err := s.Position(ctx, "r", u)
				switch waitroom.ErrorCode(err) {
				case "":
					n++
				case waitroom.ERateLimited:
				default:
					t.Fatalf("position: %v", err)
				}
			}
			return n
		}
		if n := allowed(strict, 5); n != 3 {
			t.Fatalf("the store with a burst of 3 allowed %d of 5", n)
		}
		if err := srv.Client().ScriptFlush(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		// The same bucket, three steps taken: the looser store allows three more.
		if n := allowed(loose, 5); n != 3 {
			t.Fatalf("the store with a burst of 6 allowed %d of 5 after 3 taken, want 3", n)
		}
		if n := allowed(strict, 2); n != 0 {
			t.Fatalf("the store with a burst of 3 allowed %d more", n)
		}
	})
}

// A created room's hash, its settings and its callers' buckets, is a hash
// table from its first write (a field past hash-max-listpack-value:
// settings.lua's layout), not a listpack that every poll's HMGET scans;
// the sweeps take the full buckets and leave the settings. The encoding is
// Redis's own: the embedded store has none.
func TestHashesAreHashTables(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		cfg := limitedConfig(waitroom.Limits{ClientRatePerSec: 5, ClientBurst: 20, IPRatePerSec: 500, IPBurst: 2000})
		cfg.OpenRooms = false
		s, rdb := newStore(t, engine, cfg)
		ctx := context.Background()
		set(t, s, "r", func(*waitroom.Settings) {})
		caller := waitroom.Caller{User: "u", IP: "198.51.100.1"}
		poll := func() {
			if _, err := s.Position(ctx, "r", caller); err != nil {
				t.Fatal(err)
			}
		}
		encoded := func(key string) {
			t.Helper()
			if engine.Embedded() {
				return
			}
			if enc := rdb.ObjectEncoding(ctx, key).Val(); enc != "hashtable" {
				t.Fatalf("%s is a %q", key, enc)
			}
		}
		settings := rdb.HLen(ctx, "wr:{r}:settings").Val()
		poll()
		encoded("wr:{r}:settings")
		if !rdb.HExists(ctx, "wr:{r}:settings", "layout").Val() {
			t.Fatal("no layout field in the room's hash")
		}
		if n := rdb.HLen(ctx, "wr:{r}:settings").Val(); n != settings+2 {
			t.Fatalf("%d fields after one caller's poll, want the %d settings and its two buckets", n, settings)
		}
		time.Sleep(250 * time.Millisecond) // the buckets are full again (a step is 200 ms)
		for range 20 {
			if _, err := s.AdmitBatch(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if n := rdb.HLen(ctx, "wr:{r}:settings").Val(); n != settings {
			t.Fatalf("%d fields left after the sweeps, want the %d settings", n, settings)
		}
		if _, err := s.Status(ctx, "r"); err != nil {
			t.Fatalf("the settings after the sweeps: %v", err)
		}
		poll()
		encoded("wr:{r}:settings")
	})
}

// A call no visitor makes (waitroom.Unlimited: the broker's consumer, a
// stream's re-reads, tools) takes no bucket however strict the limits; the
// same user as a request's caller is limited, by its identity's bucket
// even without an address.
func TestUnlimitedCallerTakesNoBucket(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		s, rdb := newStore(t, engine, limitedConfig(waitroom.Limits{ClientRatePerSec: 0.001, ClientBurst: 1, IPRatePerSec: 0.001, IPBurst: 1}))
		ctx := context.Background()
		for i := range 3 {
			if _, err := s.Enter(ctx, "r", waitroom.Unlimited("u")); err != nil {
				t.Fatalf("unlimited enter %d: %v", i, err)
			}
			if _, err := s.Position(ctx, "r", waitroom.Unlimited("u")); err != nil {
				t.Fatalf("unlimited position %d: %v", i, err)
			}
		}
		for _, f := range rdb.HKeys(ctx, "wr:{r}:settings").Val() {
			if len(f) > 1 && f[1] == ':' {
				t.Fatalf("an unlimited caller took bucket %q", f)
			}
		}
		for i, want := range []waitroom.Code{"", waitroom.ERateLimited} {
			if _, err := s.Position(ctx, "r", waitroom.Caller{User: "u"}); waitroom.ErrorCode(err) != want {
				t.Fatalf("position %d of the same user as a request's caller (burst 1): %v, want %q", i, err, want)
			}
		}
	})
}

// sameSet reports whether got holds exactly want, in any order.
func sameSet(got []string, want ...string) bool {
	if len(got) != len(want) {
		return false
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			return false
		}
	}
	return true
}
