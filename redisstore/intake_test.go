package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
)

// A redelivered entry never enters twice: not while its user waits, and not
// after the user was admitted and used the token (a plain enter would put
// them at the back of the line again).
func TestApplyIsOnceInEffect(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, _ := newStore(t, engine, testConfig())
		t0 := time.Now()
		first := waitroom.Entry{Room: "shoes", User: "u:1", AcceptedAt: t0}
		st, again, err := s.Apply(ctx, first, time.Hour)
		if err != nil || again || st.Status != waitroom.Waiting || st.Position != 1 || !st.Joined {
			t.Fatalf("apply: %+v %v %v", st, again, err)
		}
		if _, again, err = s.Apply(ctx, first, time.Hour); err != nil || !again {
			t.Fatalf("redelivery while waiting must be found applied: %v %v", again, err)
		}
		if _, err := s.AdmitBatch(ctx); err != nil {
			t.Fatal(err)
		}
		ready, err := s.Position(ctx, "shoes", waitroom.Unlimited("u:1"))
		if err != nil || ready.Status != waitroom.Ready {
			t.Fatalf("admitted: %+v %v", ready, err)
		}
		lease, err := s.BeginOrder(ctx, waitroom.Unlimited("u:1"), waitroom.OrderAttempt{Room: "shoes", Token: ready.Token})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CommitOrder(ctx, lease, waitroom.StoredAnswer{Status: 201, Body: "{}"}); err != nil {
			t.Fatal(err)
		}
		if _, again, err = s.Apply(ctx, first, time.Hour); err != nil || !again {
			t.Fatalf("redelivery after the order must be found applied: %v %v", again, err)
		}
		if st, _ := s.Position(ctx, "shoes", waitroom.Unlimited("u:1")); st.Status != waitroom.NotInQueue {
			t.Fatalf("the redelivery moved the user back into line: %+v", st)
		}
		later := waitroom.Entry{Room: "shoes", User: "u:1", AcceptedAt: t0.Add(time.Minute)}
		if st, again, err := s.Apply(ctx, later, time.Hour); err != nil || again || st.Status != waitroom.Waiting {
			t.Fatalf("a later entry of the same user is a new one: %+v %v %v", st, again, err)
		}
		last, found, err := s.LastApplied(ctx, "shoes", "u:1")
		if err != nil || !found || !last.AcceptedAt.Equal(later.AcceptedAt.Truncate(time.Microsecond)) || last.Full {
			t.Fatalf("last applied: %+v %v %v", last, found, err)
		}
	})
}

// Apply runs enter.lua itself: the same places, the same full line, and the
// full line is recorded for position to report.
func TestApplyMatchesEnter(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		cfg := testConfig()
		cfg.QueueCapacity = 3
		s, _ := newStore(t, engine, cfg)
		for i := 1; i <= 4; i++ {
			e := waitroom.Entry{Room: "r", User: fmt.Sprintf("u%d", i), AcceptedAt: time.Now()}
			applied, _, aerr := s.Apply(ctx, e, time.Hour)
			direct, derr := s.Enter(ctx, "d", waitroom.Unlimited(e.User))
			if waitroom.ErrorCode(aerr) != waitroom.ErrorCode(derr) || applied != direct {
				t.Fatalf("entry %d: apply %+v %v, enter %+v %v", i, applied, aerr, direct, derr)
			}
		}
		last, found, err := s.LastApplied(ctx, "r", "u4")
		if err != nil || !found || !last.Full {
			t.Fatalf("a full line must be recorded: %+v %v %v", last, found, err)
		}
		if _, found, _ := s.LastApplied(ctx, "r", "nobody"); found {
			t.Fatal("nobody was applied")
		}
	})
}

// With OPEN_ROOMS off, an entry for a room no operator created is refused
// as enter refuses it, and leaves nothing behind (issue 19): position
// refuses the room by itself.
func TestApplyToAnUnknownRoom(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		cfg := testConfig()
		cfg.OpenRooms = false
		s, _ := newStore(t, engine, cfg)
		e := waitroom.Entry{Room: "nowhere", User: "u", AcceptedAt: time.Now()}
		_, _, aerr := s.Apply(ctx, e, time.Hour)
		_, derr := s.Enter(ctx, "nowhere", waitroom.Unlimited("u"))
		if waitroom.ErrorCode(aerr) != waitroom.ERoomNotFound || waitroom.ErrorCode(derr) != waitroom.ERoomNotFound {
			t.Fatalf("apply %v, enter %v: want room_not_found from both", aerr, derr)
		}
		if _, found, err := s.LastApplied(ctx, "nowhere", "u"); err != nil || found {
			t.Fatalf("a record of an entry for a room nobody made: %v %v", found, err)
		}
		if _, err := s.Position(ctx, "nowhere", waitroom.Unlimited("u")); waitroom.ErrorCode(err) != waitroom.ERoomNotFound {
			t.Fatalf("position in a room nobody made: %v", err)
		}
	})
}
