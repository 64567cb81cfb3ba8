package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// admitOne enters user into room and admits them, returning the token.
func admitOne(t *testing.T, s *redisstore.Store, room, user string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Enter(ctx, room, waitroom.Unlimited(user)); err != nil {
		t.Fatal(err)
	}
	b, err := s.AdmitBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Position(ctx, room, waitroom.Unlimited(user)) // claims its turn (claim.lua)
	if err != nil || st.Status != waitroom.Ready {
		t.Fatalf("%s not admitted: %+v %+v %v", user, b, st, err)
	}
	return st.Token
}

// Releasing a lock is a compare-and-delete: a lease that no longer owns
// the lock (its request outlived the lock, and another took it) frees
// nothing.
func TestReleaseFreesOnlyItsOwnLock(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, rdb := newStore(t, engine, testConfig())
		token := admitOne(t, s, "r", "u")
		lease, err := s.BeginOrder(ctx, waitroom.Unlimited("u"), waitroom.OrderAttempt{Room: "r", Token: token})
		if err != nil {
			t.Fatal(err)
		}
		stale := lease
		stale.LockValue = "a-lease-that-lost-the-lock"
		if err := s.ReleaseOrder(ctx, stale); err != nil {
			t.Fatal(err)
		}
		if _, err := s.BeginOrder(ctx, waitroom.Unlimited(lease.User), lease.OrderAttempt); waitroom.ErrorCode(err) != waitroom.EOrderInProgress {
			t.Fatalf("another lease freed the lock: %v", err)
		}
		if err := s.ReleaseOrder(ctx, lease); err != nil {
			t.Fatal(err)
		}
		if n, err := rdb.Exists(ctx, "wr:{r}:lock:u").Result(); err != nil || n != 0 {
			t.Fatalf("the owner's release left the lock: %d %v", n, err)
		}
	})
}

// Commit consumes the token, frees the place and the lock.
func TestCommitConsumesAndUnlocks(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, rdb := newStore(t, engine, testConfig())
		token := admitOne(t, s, "r", "u")
		lease, err := s.BeginOrder(ctx, waitroom.Unlimited("u"), waitroom.OrderAttempt{Room: "r", Token: token, IdempotencyKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CommitOrder(ctx, lease, waitroom.StoredAnswer{Status: 201, Body: `{"id":1}`}); err != nil {
			t.Fatal(err)
		}
		n, err := rdb.Exists(ctx, "wr:{r}:lock:u", "wr:{r}:u:u").Result()
		if err != nil || n != 0 {
			t.Fatalf("after commit %d of lock and token remain (%v)", n, err)
		}
		if live, err := rdb.ZCard(ctx, "wr:{r}:tokens").Result(); err != nil || live != 0 {
			t.Fatalf("live tokens after commit: %d %v", live, err)
		}
		replay, err := s.BeginOrder(ctx, waitroom.Unlimited(lease.User), lease.OrderAttempt)
		if err != nil || replay.Replay == nil || replay.Replay.Body != `{"id":1}` {
			t.Fatalf("replay: %+v %v", replay, err)
		}
		if _, err := s.BeginOrder(ctx, waitroom.Unlimited("u"), waitroom.OrderAttempt{Room: "r", Token: token, IdempotencyKey: "other"}); waitroom.ErrorCode(err) != waitroom.ETokenInvalid {
			t.Fatalf("a consumed token with a new key: %v", err)
		}
	})
}

// The budget caps what a late admitter takes at one batch (plus the
// fraction carried over) whatever the number of token parts it brings: the
// cap is the script's, not the Go side's.
func TestBudgetCapIsTheScripts(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		cfg := testConfig()
		s, rdb := newStore(t, engine, cfg)
		for i := 0; i < 100; i++ {
			if _, err := s.Enter(ctx, "r", waitroom.Unlimited(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.AdmitBatch(ctx); err != nil { // spend the initial budget
			t.Fatal(err)
		}
		time.Sleep(600 * time.Millisecond) // six batches' worth of time
		src, _ := redisstore.Source("admit.lua")
		k := func(name string) string { return "wr:{r}:" + name }
		keys := []string{k("settings"), k("line"), k("budget"), k("marks"), k("tokens"), k("admits"), k("downstream"), k("control"), k("queue"), k("places"), k("batches"), k("unclaimed")}
		args := []any{fmt.Sprintf("1P%g:0:0:%d:%d:", cfg.AdmitRatePerSec, cfg.QueueCapacity, cfg.EntryTokenTTL.Milliseconds()),
			cfg.AdmitInterval.Seconds(), k("u:"), "r", int64(60000), int64(1000), int64(120000)}
		for i := 0; i < 50; i++ {
			args = append(args, fmt.Sprintf("part%02d", i))
		}
		reply, err := redis.NewScript(src).Run(ctx, rdb, keys, args...).Slice()
		if err != nil {
			t.Fatal(err)
		}
		admitted := (len(reply) - 12) / 3
		if limit := int(cfg.BatchSize()) + 1; admitted > limit {
			t.Fatalf("a late admitter with 50 token parts admitted %d, more than one batch (%d)", admitted, limit)
		}
	})
}

// An expired entry token is gone: the user is no longer READY and the gate
// refuses the token, though nobody swept it.
func TestExpiredTokenIsGone(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		cfg := testConfig()
		cfg.EntryTokenTTL = time.Second
		s, _ := newStore(t, engine, cfg)
		token := admitOne(t, s, "r", "late")
		time.Sleep(1200 * time.Millisecond)
		if st, err := s.Position(ctx, "r", waitroom.Unlimited("late")); err != nil || st.Status != waitroom.NotInQueue {
			t.Fatalf("after the token's expiry: %+v %v", st, err)
		}
		if _, err := s.BeginOrder(ctx, waitroom.Unlimited("late"), waitroom.OrderAttempt{Room: "r", Token: token}); waitroom.ErrorCode(err) != waitroom.ETokenInvalid {
			t.Fatalf("an expired token at the gate: %v", err)
		}
	})
}

// An enter re-registers its room for admission, so that a registration lost
// to an error heals with the next user, not only with the first of a line.
func TestEnterHealsALostRegistration(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, rdb := newStore(t, engine, testConfig())
		for _, u := range []string{"a", "b"} {
			if _, err := s.Enter(ctx, "r", waitroom.Unlimited(u)); err != nil {
				t.Fatal(err)
			}
		}
		if err := rdb.SRem(ctx, "wr:rooms", "r").Err(); err != nil { // lost
			t.Fatal(err)
		}
		if _, err := s.Enter(ctx, "r", waitroom.Unlimited("c")); err != nil {
			t.Fatal(err)
		}
		if b, err := s.AdmitBatch(ctx); err != nil || admittedCount(b) != 3 {
			t.Fatalf("after c entered: %+v %v", b, err)
		}
	})
}

// A room's stored capacity, not the default, bounds its line.
func TestStoredCapacityHolds(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, _ := newStore(t, engine, testConfig())
		if _, err := s.Update(ctx, "small", true, func(st waitroom.Settings) (waitroom.Settings, error) {
			st.Capacity = 2
			return st, nil
		}); err != nil {
			t.Fatal(err)
		}
		for _, u := range []string{"a", "b"} {
			if _, err := s.Enter(ctx, "small", waitroom.Unlimited(u)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Enter(ctx, "small", waitroom.Unlimited("c")); waitroom.ErrorCode(err) != waitroom.EQueueFull {
			t.Fatalf("third user of a room of capacity 2: %v", err)
		}
	})
}

// Two operators changing one room at once: the change that read the older
// version is applied again to the newer one, so neither change is lost.
func TestConcurrentSettingsChangesBothLand(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, _ := newStore(t, engine, testConfig())
		if _, err := s.Update(ctx, "sale", true, func(st waitroom.Settings) (waitroom.Settings, error) { return st, nil }); err != nil {
			t.Fatal(err)
		}
		calls := 0
		_, err := s.Update(ctx, "sale", false, func(st waitroom.Settings) (waitroom.Settings, error) {
			calls++
			if calls == 1 { // the other operator's change lands after our read
				if _, err := s.Update(ctx, "sale", false, func(o waitroom.Settings) (waitroom.Settings, error) {
					o.Capacity = 7
					return o, nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			st.RatePerSec = 5
			return st, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.Status(ctx, "sale")
		if err != nil || st.RatePerSec != 5 || st.Capacity != 7 || calls != 2 {
			t.Fatalf("after both changes (%d calls): %+v %v", calls, st.Settings, err)
		}
	})
}

// Admission tells how long each user waited, from the per-second marks:
// also a user who joined a line that was not empty, in a later second than
// the last mark (enter.lua marks each second once, 'mark').
func TestAdmissionMeasuresTheWait(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, _ := newStore(t, engine, testConfig())
		if _, err := s.Enter(ctx, "r", waitroom.Unlimited("patient")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2100 * time.Millisecond) // two second boundaries at least
		if _, err := s.Enter(ctx, "r", waitroom.Unlimited("prompt")); err != nil {
			t.Fatal(err)
		}
		b, err := s.AdmitBatch(ctx)
		if err != nil || admittedCount(b) != 2 {
			t.Fatalf("%+v %v", b, err)
		}
		waited := map[string]time.Duration{}
		for _, a := range b.Rooms[0].Admitted { // numbers 1 and 2
			waited[[]string{"patient", "prompt"}[a.Number-1]] = a.Waited
		}
		if w := waited["patient"]; w < 2*time.Second || w > 5*time.Second {
			t.Fatalf("patient waited %v, want 2 s or a little more", w)
		}
		if w := waited["prompt"]; w > time.Second {
			t.Fatalf("prompt waited %v, want under a second: the second it joined was not marked", w)
		}
	})
}

// Every new enter costs one round trip, not only a repeated one; only the
// first user of an empty line pays a second (the registration re-check).
func TestNewEnterIsOneRoundTrip(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		rdb := engine.Start(t).Client()
		counter := &redistest.RoundTrips{}
		rdb.AddHook(counter)
		s := redisstore.New(rdb, testConfig())
		if _, err := s.Enter(ctx, "r", waitroom.Unlimited("first")); err != nil { // loads the script
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			before := counter.Count()
			if _, err := s.Enter(ctx, "r", waitroom.Unlimited(fmt.Sprintf("new-%d", i))); err != nil {
				t.Fatal(err)
			}
			if got := counter.Count() - before; got != 1 {
				t.Fatalf("new user %d: %d round trips, want 1", i, got)
			}
		}
	})
}

// srem runs hook when a SREM of the rooms key is about to be sent.
type sremHook struct{ before func() }

func (h sremHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h sremHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.EqualFold(cmd.Name(), "srem") && h.before != nil {
			h.before()
		}
		return next(ctx, cmd)
	}
}
func (h sremHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// The cluster races of a room's registration, replayed in the order a
// cluster may run them. An enter between admission's empty-room check and
// its SREM is re-registered by forgetRoom's re-check.
func TestForgetRoomRechecksTheLine(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		srv := engine.Start(t)
		admitter, other := srv.Client(), srv.Client()
		cfg := testConfig()
		s, entrant := redisstore.New(admitter, cfg), redisstore.New(other, cfg)
		if _, err := entrant.Enter(ctx, "r", waitroom.Unlimited("a")); err != nil {
			t.Fatal(err)
		}
		if b, err := s.AdmitBatch(ctx); err != nil || admittedCount(b) != 1 {
			t.Fatalf("%+v %v", b, err)
		}
		if st, err := entrant.Position(ctx, "r", waitroom.Unlimited("a")); err != nil || st.Status != waitroom.Ready {
			t.Fatalf("a claiming its turn: %+v %v", st, err)
		}
		if err := other.Del(ctx, "wr:{r}:tokens", "wr:{r}:u:a").Err(); err != nil { // the order consumed it
			t.Fatal(err)
		}
		once := false
		admitter.AddHook(sremHook{before: func() {
			if !once {
				once = true
				if _, err := entrant.Enter(ctx, "r", waitroom.Unlimited("b")); err != nil {
					t.Error(err)
				}
			}
		}})
		if _, err := s.AdmitBatch(ctx); err != nil {
			t.Fatal(err)
		}
		if !once {
			t.Fatal("admission did not forget the empty room")
		}
		if ok, err := other.SIsMember(ctx, "wr:rooms", "r").Result(); err != nil || !ok {
			t.Fatalf("b waits in a room admission no longer visits (%v)", err)
		}
	})
}

// An enter whose registration a concurrent forgetRoom removed (on a
// cluster the SADD may run before the script, and the SREM between them)
// registers the room again when it made the line non-empty.
func TestFirstEnterRegistersAgain(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		srv := engine.Start(t)
		rdb, other := srv.Client(), srv.Client()
		s := redisstore.New(rdb, testConfig())
		rdb.AddHook(pipelineHook{after: func() {
			// forgetRoom's SREM, landing after this pipeline's SADD.
			if err := other.SRem(ctx, "wr:rooms", "r", "q").Err(); err != nil {
				t.Error(err)
			}
		}})
		if _, err := s.Enter(ctx, "r", waitroom.Unlimited("first")); err != nil {
			t.Fatal(err)
		}
		if ok, err := other.SIsMember(ctx, "wr:rooms", "r").Result(); err != nil || !ok {
			t.Fatalf("the first user waits in an unregistered room (%v)", err)
		}
		// The same for an instant admission that issues the room's only
		// live token: admission must visit the room to prune it.
		instant := redisstore.New(rdb, instantConfig())
		if st, err := instant.Enter(ctx, "q", waitroom.Unlimited("first")); err != nil || !st.AdmittedNow {
			t.Fatalf("instant admission: %+v %v", st, err)
		}
		if ok, err := other.SIsMember(ctx, "wr:rooms", "q").Result(); err != nil || !ok {
			t.Fatalf("the room's only live token in an unregistered room (%v)", err)
		}
	})
}

// pipelineHook runs after every pipeline.
type pipelineHook struct{ after func() }

func (h pipelineHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h pipelineHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h pipelineHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.after()
		return err
	}
}

// Issue 32: with ORDER_ROOMS unset the gate sells only in rooms an
// operator created. A token of a room a visitor opened (OPEN_ROOMS) is
// wrong_room in the very script that checks it, before the lock, even when
// the room's hash holds the limiter's buckets; a created room sells.
func TestOnlyCreatedRoomsSellInTheScript(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, rdb := newStore(t, engine, testConfig())
		if err := rdb.HSet(ctx, "wr:{quiet}:settings", "c:1:x", "1").Err(); err != nil { // a limiter's bucket
			t.Fatal(err)
		}
		quiet := admitOne(t, s, "quiet", "u")
		_, err := s.BeginOrder(ctx, waitroom.Unlimited("u"), waitroom.OrderAttempt{Room: "quiet", Token: quiet, CreatedRoomsOnly: true})
		if waitroom.ErrorCode(err) != waitroom.EWrongRoom {
			t.Fatalf("a token of a room no operator created: %v, want wrong_room", err)
		}
		if n, err := rdb.Exists(ctx, "wr:{quiet}:lock:u").Result(); err != nil || n != 0 {
			t.Fatalf("the refused order took the lock: %d %v", n, err)
		}
		if _, err := s.BeginOrder(ctx, waitroom.Unlimited("u"), waitroom.OrderAttempt{Room: "quiet", Token: quiet}); err != nil {
			t.Fatalf("ORDER_ROOMS names the room (no created check): %v", err)
		}
		if _, err := s.Update(ctx, "sale", true, func(st waitroom.Settings) (waitroom.Settings, error) { return st, nil }); err != nil {
			t.Fatal(err)
		}
		sale := admitOne(t, s, "sale", "u")
		if _, err := s.BeginOrder(ctx, waitroom.Unlimited("u"), waitroom.OrderAttempt{Room: "sale", Token: sale, CreatedRoomsOnly: true}); err != nil {
			t.Fatalf("a token of a created room: %v", err)
		}
	})
}
