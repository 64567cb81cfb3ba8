package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/linetest"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// change applies f to room's settings (creating the room).
func change(t *testing.T, s *redisstore.Store, room string, f func(*waitroom.Settings)) {
	t.Helper()
	if _, err := s.Update(context.Background(), room, true, func(st waitroom.Settings) (waitroom.Settings, error) { f(&st); return st, nil }); err != nil {
		t.Fatal(err)
	}
}

// Issue 22: a closed room refuses newcomers, tells the line CLOSED with the
// operator's message and keeps live entry tokens; admission releases the
// line at once, its front jumping to the counter and its kept places freed
// off the main thread (UNLINK); reopening starts a fresh line.
func TestClosedRoomReleasesItsLine(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, rdb := newStore(t, engine, testConfig())
		const room, waiting = "sale", 12_000
		change(t, s, room, func(st *waitroom.Settings) { st.RatePerSec = 10 })
		if _, err := s.Enter(ctx, room, waitroom.Unlimited("buyer")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AdmitBatch(ctx); err != nil {
			t.Fatal(err)
		}
		if st, err := s.Position(ctx, room, waitroom.Unlimited("buyer")); err != nil || st.Status != waitroom.Ready { // the buyer claims its token
			t.Fatalf("the buyer's claim: %+v %v", st, err)
		}
		fill(t, rdb, room, waiting)
		change(t, s, room, func(st *waitroom.Settings) { st.Closed, st.Message = true, "Sold out, thank you!" })

		if st, err := s.Position(ctx, room, waitroom.Unlimited("w-0")); err != nil || st.Status != waitroom.Closed || st.Message != "Sold out, thank you!" {
			t.Fatalf("position of a waiting user: %+v %v", st, err)
		}
		if st, err := s.Position(ctx, room, waitroom.Unlimited("buyer")); err != nil || st.Status != waitroom.Ready || st.Message != "Sold out, thank you!" {
			t.Fatalf("position of the token holder: %+v %v", st, err)
		}
		if st, err := s.Enter(ctx, room, waitroom.Unlimited("newcomer")); err != nil || st.Status != waitroom.Closed {
			t.Fatalf("enter of a newcomer: %+v %v", st, err)
		}
		if st, err := s.Enter(ctx, room, waitroom.Unlimited("buyer")); err != nil || st.Status != waitroom.Ready {
			t.Fatalf("enter of the token holder: %+v %v", st, err)
		}
		k := func(name string) string { return "wr:{" + room + "}:" + name }
		for batch, want := range []int64{0} {
			b, err := s.AdmitBatch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n := linetest.Length(t, rdb, room); n != want || len(b.Rooms) != 1 || len(b.Rooms[0].Admitted) != 0 {
				t.Fatalf("batch %d: line %d, want %d; batch %+v", batch, n, want, b)
			}
		}
		if n := rdb.Exists(ctx, k("line"), k("marks"), k("budget")).Val(); n != 0 {
			t.Errorf("%d of the line's keys are left after it was released", n)
		}
		if n := rdb.Exists(ctx, k("u:buyer"), k("tokens")).Val(); n != 2 {
			t.Errorf("the live token went with the line (%d of its 2 keys left)", n)
		}

		// Reopened: a fresh line, the first newcomer first.
		change(t, s, room, func(st *waitroom.Settings) { st.Closed = false })
		if st, err := s.Enter(ctx, room, waitroom.Unlimited("late")); err != nil || st.Status != waitroom.Waiting || st.Position != 1 {
			t.Fatalf("enter after reopening: %+v %v", st, err)
		}
	})
}

// fill puts n accounts w-0 … at the back of room's line, the way enter
// numbers them (redisstore.Append).
func fill(t *testing.T, rdb *redis.Client, room string, n int) {
	t.Helper()
	var users []string
	for i := range n {
		users = append(users, fmt.Sprintf("w-%d", i))
	}
	if _, err := redisstore.Append(context.Background(), rdb, room, users); err != nil {
		t.Fatal(err)
	}
}

// Once its line is released and its last token gone, everything a closed
// room wrote but its settings expires: no key is left without an expiry,
// and none but the accounts' records (which live as long as their places
// might have waited: Append's a day) lives longer than the idle expiry.
func TestClosedRoomKeysExpire(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		as := func(user string) waitroom.Caller { return waitroom.Caller{User: user, IP: "192.0.2.1"} }
		cfg := testConfig()
		cfg.Trust.Limits = waitroom.Limits{ClientRatePerSec: 100, ClientBurst: 100, IPRatePerSec: 100, IPBurst: 100}
		s, rdb := newStore(t, engine, cfg)
		change(t, s, "gone", func(st *waitroom.Settings) { st.RatePerSec = 1 })
		fill(t, rdb, "gone", 3)
		for _, u := range []string{"a", "b"} {
			if _, err := s.Enter(ctx, "gone", as(u)); err != nil {
				t.Fatal(err)
			}
		}
		change(t, s, "gone", func(st *waitroom.Settings) { st.Closed = true })
		if _, err := s.Position(ctx, "gone", as("a")); err != nil { // the limiter writes its buckets
			t.Fatal(err)
		}
		for range 2 {
			if _, err := s.AdmitBatch(ctx); err != nil {
				t.Fatal(err)
			}
		}
		keys := rdb.Keys(ctx, "wr:{gone}:*").Val()
		for _, key := range keys {
			ttl := rdb.PTTL(ctx, key).Val()
			switch {
			case strings.HasSuffix(key, ":settings"):
			case strings.Contains(key, ":a:"): // accounts' records: as long as their places may wait (line.lua)
				if ttl < 0 || ttl > 24*time.Hour {
					t.Errorf("%s lives %v after the room closed and emptied", key, ttl)
				}
			case ttl < 0 || ttl.Milliseconds() > 60_000:
				t.Errorf("%s lives %v after the room closed and emptied", key, ttl)
			}
		}
		if len(keys) == 0 {
			t.Fatal("not even the settings are left")
		}
	})
}

// message, title, brandColor, logoUrl and language are stored and read
// back: the message in every answer, the page in enter's.
func TestMessageAndPageInAnswers(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, _ := newStore(t, engine, testConfig())
		page := waitroom.Page{Title: "Kim's Shoes", BrandColor: "#aa3300", LogoURL: "https://img.example/logo.png", Language: "ko"}
		change(t, s, "shop", func(st *waitroom.Settings) { st.Message, st.Page = "Sizes 40–44 are gone", page })
		st, err := s.Enter(ctx, "shop", waitroom.Unlimited("u1"))
		if err != nil || st.Message != "Sizes 40–44 are gone" || st.Page != page {
			t.Fatalf("enter: %+v %v", st, err)
		}
		st, err = s.Position(ctx, "shop", waitroom.Unlimited("u1"))
		if err != nil || st.Message != "Sizes 40–44 are gone" || st.Page != (waitroom.Page{}) {
			t.Fatalf("position: %+v %v", st, err)
		}
		status, err := s.Status(ctx, "shop")
		if err != nil || status.Message != "Sizes 40–44 are gone" || status.Page != page || status.State != waitroom.StateOpen {
			t.Fatalf("status: %+v %v", status, err)
		}
		change(t, s, "shop", func(st *waitroom.Settings) { st.Message = "" })
		if st, err := s.Position(ctx, "shop", waitroom.Unlimited("u1")); err != nil || st.Message != "" {
			t.Fatalf("position after the message was cleared: %+v %v", st, err)
		}
		change(t, s, "shop", func(st *waitroom.Settings) { st.Closed = true })
		if status, err := s.Status(ctx, "shop"); err != nil || status.State != waitroom.StateClosed || !status.Closed {
			t.Fatalf("status of a closed room: %+v %v", status, err)
		}
	})
}
