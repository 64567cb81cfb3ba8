package redisstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// A pre-queue scheduled while a queue waits (line.lua): the draws go
// behind the queue and ahead of whoever enters after the opening; every
// position counts both parts and admission serves them merged by number.
func TestPreQueueBehindAQueue(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, rdb := newStore(t, engine, testConfig())
		for _, u := range []string{"q1", "q2", "q3"} {
			if _, err := s.Enter(ctx, "r", waitroom.Unlimited(u)); err != nil {
				t.Fatal(err)
			}
		}
		opens := time.Now().Add(time.Hour)
		set(t, s, "r", func(st *waitroom.Settings) { st.OpensAt = &opens })
		for _, u := range []string{"p1", "p2"} { // their places are secret until the opening
			if st, err := s.Enter(ctx, "r", waitroom.Unlimited(u)); err != nil || st.Status != waitroom.PreQueue {
				t.Fatalf("pre-queue enter of %s: %+v %v", u, st, err)
			}
		}
		set(t, s, "r", func(st *waitroom.Settings) { st.OpensAt = nil }) // opened early, by the operator
		if st, err := s.Enter(ctx, "r", waitroom.Unlimited("late")); err != nil || st.Status != waitroom.Waiting || st.Position != 6 {
			t.Fatalf("enter after the opening: %+v %v", st, err)
		}
		line, err := redisstore.Waiting(ctx, rdb, "r", []string{"q1", "q2", "q3", "p1", "p2", "late"})
		if err != nil || len(line) != 6 || !slices.Equal(line[:3], []string{"q1", "q2", "q3"}) || line[5] != "late" {
			t.Fatalf("line %v %v", line, err)
		}
		for i, u := range line {
			if st, err := s.Position(ctx, "r", waitroom.Unlimited(u)); err != nil || st.Status != waitroom.Waiting || st.Position != int64(i+1) {
				t.Fatalf("%s: %+v %v, want position %d", u, st, err, i+1)
			}
		}
		b, err := s.AdmitBatch(ctx)
		if err != nil || len(b.Rooms) != 1 || len(b.Rooms[0].Admitted) != 6 {
			t.Fatalf("batch %+v %v", b, err)
		}
		// The draws are admitted by user, the numbers by number (claimed
		// later): q1, q2, q3 hold 1, 2, 3, late 4.
		numbers := map[string]int64{"q1": 1, "q2": 2, "q3": 3, "late": 4}
		for i, a := range b.Rooms[0].Admitted {
			if a.User != line[i] && (a.User != "" || a.Number != numbers[line[i]]) {
				t.Fatalf("admitted %s (%d) as the %d-th, want %s", a.User, a.Number, i+1, line[i])
			}
		}
	})
}

// A queue's sequences never repeat: the first user of a queue that emptied
// takes the number after the last one given out (line.lua's counter).
func TestSequenceContinuesAfterTheQueueEmpties(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, _ := newStore(t, engine, testConfig())
		for _, u := range []string{"a", "b", "c"} {
			if _, err := s.Enter(ctx, "r", waitroom.Unlimited(u)); err != nil {
				t.Fatal(err)
			}
		}
		if b, err := s.AdmitBatch(ctx); err != nil || len(b.Rooms) != 1 || len(b.Rooms[0].Admitted) != 3 {
			t.Fatalf("batch %+v %v", b, err)
		}
		if _, err := s.Enter(ctx, "r", waitroom.Unlimited("d")); err != nil {
			t.Fatal(err)
		}
		if st, place, err := s.Seat(ctx, "r", waitroom.Unlimited("d")); err != nil || st.Position != 1 || place.Seq != 4 {
			t.Fatalf("d: %+v %+v %v, want sequence 4 after a, b and c", st, place, err)
		}
	})
}

// No user's id is empty: the store refuses one (no caller is nobody), and
// the line keeps its front.
func TestEmptyUserIsRefused(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, _ := newStore(t, engine, testConfig())
		for _, u := range []string{"a", "b"} {
			if _, err := s.Enter(ctx, "r", waitroom.Unlimited(u)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Enter(ctx, "r", waitroom.Unlimited("")); waitroom.ErrorCode(err) != waitroom.EInvalidUser {
			t.Fatalf("enter of an empty id: %v", err)
		}
		if _, err := s.Position(ctx, "r", waitroom.Unlimited("")); waitroom.ErrorCode(err) != waitroom.EInvalidUser {
			t.Fatalf("position of an empty id: %v", err)
		}
		if st, err := s.Position(ctx, "r", waitroom.Unlimited("b")); err != nil || st.Position != 2 {
			t.Fatalf("b: %+v %v", st, err)
		}
	})
}

// Append numbers its users after the queue's last, as enter does, whoever
// made the queue: behind users who entered, no number is given twice.
func TestAppendFollowsTheQueue(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := context.Background()
		s, rdb := newStore(t, engine, testConfig())
		for _, u := range []string{"a", "b"} {
			if _, err := s.Enter(ctx, "r", waitroom.Unlimited(u)); err != nil {
				t.Fatal(err)
			}
		}
		if numbers, err := redisstore.Append(ctx, rdb, "r", []string{"c", "d"}); err != nil || !slices.Equal(numbers, []int64{3, 4}) {
			t.Fatalf("append: %v %v", numbers, err)
		}
		for i, u := range []string{"a", "b", "c", "d"} {
			if st, place, err := s.Seat(ctx, "r", waitroom.Unlimited(u)); err != nil || st.Position != int64(i+1) || place.Seq != int64(i+1) {
				t.Fatalf("%s: %+v %+v %v, want position and sequence %d", u, st, place, err, i+1)
			}
		}
	})
}
