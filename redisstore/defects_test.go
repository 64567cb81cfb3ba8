package redisstore_test

import (
	"context"
	"testing"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
)

// Issue 12, defect 4: a room whose registration was lost (a failed SADD
// after enter, a retried script) is registered again by the next position
// that finds someone waiting, so admission never forgets a waiting user.
func TestPositionReregistersAWaitingRoom(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, rdb := newStore(t, engine, testConfig())
		if _, err := s.Enter(ctx, "lost", waitroom.Unlimited("u")); err != nil {
			t.Fatal(err)
		}
		rdb.SRem(ctx, "wr:rooms", "lost")
		st, err := s.Position(ctx, "lost", waitroom.Unlimited("u"))
		if err != nil || st.Status != waitroom.Waiting {
			t.Fatalf("position: %+v %v", st, err)
		}
		if ok, _ := rdb.SIsMember(ctx, "wr:rooms", "lost").Result(); !ok {
			t.Fatal("the room is still unregistered: its waiting user would never be admitted")
		}
	})
}
