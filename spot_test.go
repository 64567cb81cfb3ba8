package waitroom_test

import (
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// A visitor's ticket carries its place once it has one, and nobody can
// move it: the place is signed with the rest.
func TestTicketCarriesItsPlace(t *testing.T) {
	k := keys(t, keyOf(t, 1))
	spot := waitroom.Spot{Room: "sale", Number: 1234, At: t0.Add(1500 * time.Millisecond)}
	tk, err := k.Sign("v-AAAAAAAAAAAAAAAAAAAAAA", t0, t0.Add(time.Hour), spot)
	if err != nil {
		t.Fatal(err)
	}
	got, err := k.Verify(tk, t0)
	if err != nil || !(got.Spot.Room == spot.Room && got.Spot.Number == spot.Number && got.Spot.At.Equal(spot.At)) {
		t.Fatalf("verified %+v %v, want the spot %+v", got, err, spot)
	}
	moved := strings.Replace(tk, ".1234.", ".1.", 1)
	if _, err := k.Verify(moved, t0); waitroom.ErrorCode(err) != waitroom.EInvalidTicket {
		t.Errorf("a ticket whose number was changed verified: %v", err)
	}
	if plain, _ := k.Sign("v-AAAAAAAAAAAAAAAAAAAAAA", t0, t0.Add(time.Hour), waitroom.Spot{}); strings.Count(plain, ".") != 4 {
		t.Errorf("a ticket without a place has the old five parts: %q", plain)
	}
}

// An account's place verifies for its account only, until it expires,
// under the current or the previous key; altered, it is refused.
func TestPlaceIsItsAccountsOnly(t *testing.T) {
	k := keys(t, keyOf(t, 1))
	spot := waitroom.Spot{Room: "sale", Number: 77, At: t0}
	place, err := k.SignPlace("a:alice.smith", spot, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := k.VerifyPlace(place, "a:alice.smith", t0); err != nil || got.Number != 77 || got.Room != "sale" || !got.At.Equal(t0) {
		t.Fatalf("own place: %+v %v", got, err)
	}
	rotated := keys(t, keyOf(t, 2)+","+keyOf(t, 1))
	if _, err := rotated.VerifyPlace(place, "a:alice.smith", t0); err != nil {
		t.Errorf("a place signed before a rotation: %v", err)
	}
	for name, c := range map[string]struct{ place, user string }{
		"another account": {place, "a:bob"},
		"another number":  {strings.Replace(place, ".77.", ".7.", 1), "a:alice.smith"},
		"another key": {func() string {
			p, _ := keys(t, keyOf(t, 3)).SignPlace("a:alice.smith", spot, t0.Add(time.Hour))
			return p
		}(), "a:alice.smith"},
		"a ticket": {func() string { p, _ := k.Sign("v-AAAAAAAAAAAAAAAAAAAAAA", t0, t0.Add(time.Hour), spot); return p }(), "v-AAAAAAAAAAAAAAAAAAAAAA"},
		"garbage":  {"x.y", "a:alice.smith"},
	} {
		if _, err := k.VerifyPlace(c.place, c.user, t0); err == nil {
			t.Errorf("%s: verified", name)
		}
	}
	if _, err := k.VerifyPlace(place, "a:alice.smith", t0.Add(time.Hour)); err == nil {
		t.Error("an expired place verified")
	}
}

// A view answers a poll only when it knows the answer: the spot is this
// room's, of this line, not yet reached by the front, and positions are
// exact; the answer is the store's (position, stalled near the front only).
func TestViewAnswersOnlyWhatItKnows(t *testing.T) {
	now := t0.Add(time.Hour)
	c := waitroom.Config{AdmitRatePerSec: 10, AdmitInterval: 100 * time.Millisecond}
	v := waitroom.View{Front: 100, Exact: true, Since: now.Add(-time.Minute), LastBatch: now, RatePerSec: 10, Message: "hi"}
	spot := waitroom.Spot{Room: "sale", Number: 150, At: now.Add(-30 * time.Second)}
	st, ok := v.Standing(spot, "sale", now, c)
	if !ok || st.Status != waitroom.Waiting || st.Position != 51 || st.Number != 150 || st.Message != "hi" || st.Stalled {
		t.Fatalf("waiting: %+v %v", st, ok)
	}
	with := func(f func(*waitroom.View, *waitroom.Spot)) (waitroom.Standing, bool) {
		v2, s2 := v, spot
		f(&v2, &s2)
		return v2.Standing(s2, "sale", now, c)
	}
	for name, f := range map[string]func(*waitroom.View, *waitroom.Spot){
		"another room's spot":          func(_ *waitroom.View, s *waitroom.Spot) { s.Room = "other" },
		"a spot of an earlier line":    func(_ *waitroom.View, s *waitroom.Spot) { s.At = v.Since.Add(-2 * time.Second) },
		"the front reached it":         func(v *waitroom.View, _ *waitroom.Spot) { v.Front = 151 },
		"the front reached it, paused": func(v *waitroom.View, _ *waitroom.Spot) { v.Front, v.Paused = 151, true },
		"nobody in line":               func(v *waitroom.View, _ *waitroom.Spot) { v.Front = 0 },
		"a pre-queue's draws in line":  func(v *waitroom.View, _ *waitroom.Spot) { v.Exact = false },
		"no spot":                      func(_ *waitroom.View, s *waitroom.Spot) { *s = waitroom.Spot{} },
	} {
		if st, ok := with(f); ok {
			t.Errorf("%s: answered %+v", name, st)
		}
	}
	// Within the next batch (10/s, 100 ms: one user) the store is asked,
	// unless the room is paused: then nothing moves.
	if st, ok := with(func(v *waitroom.View, _ *waitroom.Spot) { v.Front = 150 }); ok {
		t.Errorf("at the front: answered %+v", st)
	}
	if st, ok := with(func(v *waitroom.View, _ *waitroom.Spot) { v.Front = 149 }); !ok || st.Position != 2 {
		t.Errorf("second: %+v %v", st, ok)
	}
	if st, ok := with(func(v *waitroom.View, _ *waitroom.Spot) { v.Front, v.Paused = 150, true }); !ok || st.Position != 1 || !st.Paused {
		t.Errorf("at the front of a paused room: %+v %v", st, ok)
	}
	if st, ok := with(func(v *waitroom.View, _ *waitroom.Spot) { v.Closed = true }); !ok || st.Status != waitroom.Closed {
		t.Errorf("closed room: %+v %v", st, ok)
	}
	if st, ok := with(func(v *waitroom.View, _ *waitroom.Spot) { v.OpensAt = now.Add(time.Minute) }); !ok || st.Status != waitroom.PreQueue {
		t.Errorf("before the opening: %+v %v", st, ok)
	}
	// Stalled as the store says: no batch for five intervals, or maxActive
	// full, and only for a turn nearer than the far horizon.
	if st, _ := with(func(v *waitroom.View, _ *waitroom.Spot) { v.LastBatch = now.Add(-time.Second) }); !st.Stalled {
		t.Errorf("no batch for 1 s (5 intervals of 100 ms): not stalled")
	}
	if st, _ := with(func(v *waitroom.View, _ *waitroom.Spot) { v.Full = true }); !st.Stalled {
		t.Errorf("maxActive full: not stalled")
	}
	if st, _ := with(func(v *waitroom.View, s *waitroom.Spot) {
		v.Full = true
		s.Number = 100 + 10*int64(c.FarHorizon().Seconds())
	}); st.Stalled {
		t.Errorf("beyond the far horizon: stalled")
	}
}
