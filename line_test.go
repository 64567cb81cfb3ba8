package waitroom_test

import (
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// threeTiers is a table with a tier of every kind (farthest, middle, from 0).
var threeTiers = waitroom.PollTiers{{60, 10000}, {10, 5000}, {0, 2000}}

func TestEstimateAndPollTiers(t *testing.T) {
	c := waitroom.Config{AdmitRatePerSec: 100, AdmitInterval: 100 * time.Millisecond, PollTiers: threeTiers}
	for pos, want := range map[int64]int64{1: 0, 10: 0, 11: 1, 100: 1, 101: 2, 342: 4, 999: 10, 6000: 60} {
		if got := c.EstimatedWaitSeconds(pos); got != want {
			t.Errorf("wait(%d) = %d, want %d", pos, got, want)
		}
	}
	tiers := map[int64]int64{0: 2000, 9: 2000, 10: 5000, 59: 5000, 60: 10000, 5000: 10000}
	for wait, base := range tiers {
		lo, mid, hi := c.PollTiers.Ms(wait, 0), c.PollTiers.Ms(wait, 0.5), c.PollTiers.Ms(wait, 0.999999)
		if mid != base || lo != base*8/10 || hi < base*119/100 || hi > base*12/10 {
			t.Errorf("wait %d: poll %d/%d/%d, want %d ±20%%", wait, lo, mid, hi, base)
		}
	}
}

func TestTokenRoomAndUsers(t *testing.T) {
	if room, ok := waitroom.TokenRoom("shoe-sale.qnCOPq6BcdSsjRmAKKehKQ"); !ok || room != "shoe-sale" {
		t.Fatalf("room %q %v", room, ok)
	}
	for _, bad := range []string{"", "nodot", "Bad.qnCOPq6BcdSsjRmAKKehKQ", "r.short", "r.qnCOPq6BcdSsjRmAKKeh+Q", "r.qnCOPq6BcdSsjRmAKKehKQx"} {
		if _, ok := waitroom.TokenRoom(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
	if waitroom.CheckUser(" ") != nil || waitroom.CheckUser("") == nil || waitroom.CheckUser("a\tb") == nil {
		t.Error("user id rules")
	}
}

// Near the front, a user is told to ask again right after its turn, never
// later than its tier says.
func TestPollAfterNeverPastTheTurn(t *testing.T) {
	c := waitroom.Config{AdmitRatePerSec: 70, AdmitInterval: 100 * time.Millisecond, PollTiers: threeTiers}
	for _, tc := range []struct {
		position int64
		lo, hi   int64
	}{
		{1, 64, 115},        // next batch: half to one interval after the turn
		{70, 1050, 1100},    // one second away, inside the 2 s tier: at the turn
		{140, 1600, 2100},   // two seconds away: the tier or the turn, whichever first
		{7000, 8000, 12000}, // far away: the tier, as before
	} {
		for _, u := range []float64{0, 0.5, 0.999} {
			got := c.PollAfterMs(tc.position, u)
			if got < tc.lo || got > tc.hi {
				t.Errorf("PollAfterMs(%d, %g) = %d, want %d..%d", tc.position, u, got, tc.lo, tc.hi)
			}
			if tier := c.PollTiers.Ms(c.EstimatedWaitSeconds(tc.position), u); got > tier {
				t.Errorf("PollAfterMs(%d, %g) = %d exceeds the tier %d", tc.position, u, got, tier)
			}
		}
	}
}

// A visitor that follows pollAfterMs comes back within half its room's
// claim window (the entry token life), however far its turn and whatever
// the room's state: admitted just after an answer, its number is still
// claimed. A room whose tokens live a minute, paused or stalled, told its
// line the far tier, 60 s ± 20 %: a number admitted after the answer
// outlived its window, and its holder went to the back (the tier sweep,
// tiers of 300 s against tokens of 300 s, its admission stalled).
func TestPollsComeBackWithinTheClaimWindow(t *testing.T) {
	c := waitroom.Config{AdmitRatePerSec: 10, AdmitInterval: 100 * time.Millisecond, PollTiers: waitroom.PollTiers{{0, 60000}},
		EntryTokenTTL: 5 * time.Minute}
	room := c.ForRoom(waitroom.Standing{RatePerSec: 10, ClaimWindow: time.Minute})
	for _, u := range []float64{0, 0.5, 0.999} {
		for name, ms := range map[string]int64{
			"far":       room.FarPollMs(u),
			"waiting":   room.PollAfterMs(6000, u),
			"pre-queue": room.PreQueuePollMs(time.Hour, u),
		} {
			if ms > 30000 || ms < 1 {
				t.Errorf("%s (u %g): pollAfterMs %d, want within half the claim window (30000)", name, u, ms)
			}
		}
	}
	// A window longer than twice the tier changes nothing.
	if got, want := c.FarPollMs(0.5), c.Tiers().Ms(0, 0.5); got != want {
		t.Errorf("FarPollMs with tokens of 5 minutes: %d, want the tier's %d", got, want)
	}
}

// In an adaptive room the turn is reckoned at the rate the law may reach
// by then (a probe's most a window, compounded: 25% more for a turn a
// second away, twice the rate from about 3 s on): the user comes back
// before its turn as the rate is now, and learns of an earlier admission
// in time.
func TestPollAfterInAnAdaptiveRoom(t *testing.T) {
	c := waitroom.Config{AdmitRatePerSec: 100, AdmitInterval: 100 * time.Millisecond, PollTiers: threeTiers}
	fixed := c.ForRoom(waitroom.Standing{RatePerSec: 40})
	adaptive := c.ForRoom(waitroom.Standing{RatePerSec: 40, Adaptive: true})
	// 40 users at 40/s: the turn in 1 s, or in 0.8 s at 50/s.
	if got := fixed.PollAfterMs(40, 0); got != 1050 {
		t.Errorf("fixed: %d, want 1050 (the turn and half an interval)", got)
	}
	if got := adaptive.PollAfterMs(40, 0); got != 850 {
		t.Errorf("adaptive: %d, want 850 (the turn at 50/s and half an interval)", got)
	}
	// 80 users: the turn in 2 s, or at 1.25² × 40/s = 62.5/s in 1.28 s.
	if got := adaptive.PollAfterMs(80, 0); got != 1330 {
		t.Errorf("adaptive, 2 s away: %d, want 1330", got)
	}
	// 400 users: the turn in 10 s, or in 5 s at twice the rate, the most
	// (a tier of a minute, which the turn caps).
	c.PollTiers = waitroom.PollTiers{{0, 60000}}
	fixed, adaptive = c.ForRoom(waitroom.Standing{RatePerSec: 40}), c.ForRoom(waitroom.Standing{RatePerSec: 40, Adaptive: true})
	if got, fix := adaptive.PollAfterMs(400, 0), fixed.PollAfterMs(400, 0); got != 5050 || fix != 10050 {
		t.Errorf("10 s away: adaptive %d, want 5050; fixed %d, want 10050", got, fix)
	}
	if fixed.EstimatedWaitSeconds(400) != adaptive.EstimatedWaitSeconds(400) {
		t.Error("the estimate the user is shown is the rate's as it is")
	}
}

func env(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}
