package httpapi_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
)

// jitterSamples is how many answers each case of TestPollJitterOfTheDefaultSourceRedisServer
// draws: enough that a uniform spread fails its checks with a probability
// below 1e-9 (see spreadOver), few enough to stay near a second under -race.
const jitterSamples = 600

// slowCall is the longest call TestPollJitterOfTheDefaultSourceRedisServer keeps; a
// slower one is drawn again.
const slowCall = 50 * time.Millisecond

// spreadOver checks that samples, meant to be uniform over [lo, hi), are:
// every one within it (give: the slack the clock allows), the smallest in
// its lowest 4 % and the largest in its highest 4 %, and each third of it
// holding at least half its share. For n = 600 uniform samples, an end
// missed has probability 0.96^600 < 2.3e-11, a third holding fewer than
// 100 of its expected 200 at most exp(-200·0.5²/2) < 1.4e-11 (Chernoff):
// with 4 cases × (2 ends + 3 thirds), the test fails by chance with a
// probability below 1e-9. A constant source, or a jitter over half of the
// range or less, fails every time.
func spreadOver(t *testing.T, name string, samples []float64, lo, hi, give float64) {
	t.Helper()
	n := float64(len(samples))
	var thirds [3]int
	least, most := math.Inf(1), math.Inf(-1)
	for _, s := range samples {
		if s < lo-give || s > hi+give {
			t.Errorf("%s: pollAfterMs jitter %v outside the documented [%v, %v)", name, s, lo, hi)
			return
		}
		least, most = min(least, s), max(most, s)
		thirds[min(2, max(0, int(3*(s-lo)/(hi-lo))))]++
	}
	if end := 0.04 * (hi - lo); least > lo+end || most < hi-end {
		t.Errorf("%s: %v answers spread over [%v, %v] only; want near both ends of [%v, %v)", name, n, least, most, lo, hi)
	}
	for i, c := range thirds {
		if float64(c) < n/6 {
			t.Errorf("%s: thirds of the range hold %v of %v answers: third %d has fewer than half its share", name, thirds, n, i+1)
			return
		}
	}
}

// Issue 37: real visitors' polls spread out. The handler with its default
// random source (API.Rand nil: math/rand), the one every deployment runs,
// spreads pollAfterMs over the ranges docs/API.md documents ("Estimated
// wait and when to ask again", PREQUEUE): the tier ±20 %, the turn plus
// half to one ADMIT_INTERVAL_MS, the farthest tier ±20 % while paused,
// and the opening plus one interval plus 0 to 5 s before it. Every other
// test injects its own source; a constant one in production would put a
// spike's visitors in step again, and no other test would notice. The
// jitter is drawn in Go from the store's answer, the same on every engine
// (whose scripts' answers are tested on each elsewhere): one engine, the
// faster, draws the samples.
func TestPollJitterOfTheDefaultSourceRedisServer(t *testing.T) {
	t.Run(redistest.RedisServer.Name, func(t *testing.T) {
		h := newHarness(t, redistest.RedisServer, func(c *waitroom.Config) {
			// Ten seconds: the turn's share is wide, and the room that is not
			// admitting is not told it stalled (5 intervals) during the test.
			c.AdmitInterval = 10 * time.Second
			// One visitor asks thousands of times: no limiter in the way.
			c.Trust.Limits.ClientBurst, c.Trust.Limits.IPBurst = 1_000_000, 1_000_000
		})
		withAdmin(h, false)
		h.api.Rand = nil
		opens := time.Now().Add(time.Minute).Truncate(time.Second)
		for room, settings := range map[string]string{
			"far":    `{"ratePerSec":0.001}`, // a turn 1000 s away: the tier
			"near":   `{"ratePerSec":1000}`,  // a turn 1 ms away: the turn
			"paused": `{"ratePerSec":1000,"paused":true}`,
			"soon":   fmt.Sprintf(`{"ratePerSec":1000,"opensAt":%q}`, opens.Format(time.RFC3339)),
		} {
			if r := h.admin("PUT", "/admin/rooms/"+room, settings); r.StatusCode != 200 {
				t.Fatalf("PUT %s: %d %s", room, r.StatusCode, r.Body)
			}
			if r := h.call(withRoom(request("POST", "/queue/enter", "alice", nil), room)); r.StatusCode != 200 {
				t.Fatalf("enter %s: %d %s", room, r.StatusCode, r.Body)
			}
		}
		interval := float64(h.cfg.AdmitInterval.Milliseconds())
		// polls asks room's line jitterSamples times; less is what each
		// answer should be but for its random share, as the call begins.
		polls := func(room string, less func() float64) []float64 {
			out := make([]float64, 0, jitterSamples)
			for tries := 0; len(out) < jitterSamples; tries++ {
				if tries == 10*jitterSamples {
					t.Fatalf("%s: %d of %d calls took longer than %v", room, tries-len(out), tries, slowCall)
				}
				start, base := time.Now(), less()
				// The router itself: the harness's check of every exchange
				// against the contract would take most of the time.
				r := h.api.Route(context.Background(), withRoom(request("GET", "/queue/position", "alice", nil), room))
				v, ok := decode(t, r)["pollAfterMs"].(float64)
				if r.StatusCode != 200 || !ok {
					t.Fatalf("%s: %d %s", room, r.StatusCode, r.Body)
				}
				// A slow call (a loaded machine, a collection) moves the
				// time until the opening by more than the slack: drawn
				// again, which biases nothing (how long a call takes does
				// not depend on its random draw).
				if time.Since(start) <= slowCall {
					out = append(out, v-base)
				}
			}
			return out
		}
		zero := func() float64 { return 0 }
		spreadOver(t, "the tier", polls("far", zero), 48000, 72000, 0)
		spreadOver(t, "the turn", polls("near", zero), 1+interval/2, 1+interval, 0)
		spreadOver(t, "paused", polls("paused", zero), 48000, 72000, 0)
		// Before the opening, less the time until it and one interval:
		// what remains is the random share, less up to the call's time.
		untilOpen := func() float64 { return float64(time.Until(opens).Milliseconds()) + interval }
		spreadOver(t, "pre-queued", polls("soon", untilOpen), 0, 5000, float64(slowCall.Milliseconds()+1))
	})
}
