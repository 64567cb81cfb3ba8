package waitroom

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// PollTier says how long a user whose estimated wait is at least
// MinWaitSeconds may sleep before asking again (docs/API.md, POLL_TIERS).
type PollTier struct {
	MinWaitSeconds int64
	PollMs         int64
}

// PollTiers is a tier table, sorted by MinWaitSeconds descending (farthest
// first); its last tier starts at 0 so that every wait has a tier.
type PollTiers []PollTier

// DefaultPollTiers is POLL_TIERS' default: one tier, ask every minute.
// pollAfterMs is also capped at the user's own turn, so the tier does not
// decide when a user learns of its admission; it bounds how stale a waiting
// user's answer gets, and how late a user learns of an admission that came
// sooner than estimated: 72 s at most with the ±20% spread, a quarter of the
// default entry token's life. Chosen with the spike simulator's tier sweep,
// against the previous "60:10000,10:5000,0:2000" (BENCHMARKS.md, "Poll
// tiers", has the requests per visitor of each).
const DefaultPollTiers = "0:60000"

// defaultTiers is DefaultPollTiers parsed: the table of a Config built
// without envconfig.Load.
var defaultTiers = func() PollTiers {
	t, err := ParsePollTiers(DefaultPollTiers)
	if err != nil {
		panic(err)
	}
	return t
}()

// pollJitter spreads a tier by ±20% so that users of one tier do not poll in step.
const pollJitter = 0.2

// ParsePollTiers reads "minWaitSeconds:pollMs,…" pairs in any order; one pair
// must start at 0, and a longer wait may not poll more often than a shorter one.
func ParsePollTiers(s string) (PollTiers, error) {
	var tiers PollTiers
	for _, pair := range strings.Split(s, ",") {
		w, ms, ok := strings.Cut(strings.TrimSpace(pair), ":")
		wait, errW := strconv.ParseInt(w, 10, 64)
		poll, errP := strconv.ParseInt(ms, 10, 64)
		if !ok || errW != nil || errP != nil || wait < 0 || poll < 100 || poll > 600_000 {
			return nil, fmt.Errorf("%q is not minWaitSeconds:pollMs with pollMs from 100 to 600000", pair)
		}
		tiers = append(tiers, PollTier{MinWaitSeconds: wait, PollMs: poll})
	}
	slices.SortFunc(tiers, func(a, b PollTier) int { return int(b.MinWaitSeconds - a.MinWaitSeconds) })
	for i := 1; i < len(tiers); i++ {
		if tiers[i].MinWaitSeconds == tiers[i-1].MinWaitSeconds {
			return nil, fmt.Errorf("two tiers start at %d s", tiers[i].MinWaitSeconds)
		}
		if tiers[i].PollMs > tiers[i-1].PollMs {
			return nil, fmt.Errorf("the tier from %d s polls less often than the one from %d s", tiers[i].MinWaitSeconds, tiers[i-1].MinWaitSeconds)
		}
	}
	if tiers[len(tiers)-1].MinWaitSeconds != 0 {
		return nil, fmt.Errorf("one tier must start at 0 s")
	}
	return tiers, nil
}

// String is the POLL_TIERS spelling of t.
func (t PollTiers) String() string {
	parts := make([]string, len(t))
	for i, tier := range t {
		parts[i] = fmt.Sprintf("%d:%d", tier.MinWaitSeconds, tier.PollMs)
	}
	return strings.Join(parts, ",")
}

// Ms picks the tier of an estimated wait and spreads it by ±20%; u is
// uniform in [0, 1). An empty table is the default one.
func (t PollTiers) Ms(waitSeconds int64, u float64) int64 {
	if len(t) == 0 {
		t = defaultTiers
	}
	base := t[len(t)-1].PollMs
	for _, tier := range t {
		if waitSeconds >= tier.MinWaitSeconds {
			base = tier.PollMs
			break
		}
	}
	return int64(math.Round(float64(base) * (1 - pollJitter + 2*pollJitter*u)))
}

// EstimatedWaitSeconds is ceil(position / rate), and 0 within the first batch.
func (c Config) EstimatedWaitSeconds(position int64) int64 {
	if float64(position) <= c.AdmitRatePerSec*c.AdmitInterval.Seconds() {
		return 0
	}
	return int64(math.Ceil(float64(position) / c.AdmitRatePerSec))
}

// maxTurnAhead bounds how much faster than its rate an adaptive room
// reckons a turn (turnAhead): twice the rate.
const maxTurnAhead = 1.0

// turnAhead is the share by which PollAfterMs raises an adaptive room's
// rate to reckon a turn wait seconds away (0 in a room at a fixed rate):
// what the law may raise the rate by before then, a probe's most a window
// compounded, (1+maxProbe)^wait - 1, from maxProbe up to maxTurnAhead. A
// user told a turn at the rate as it is would come back late whenever the
// rate rose meanwhile, and those told in the same seconds would reach the
// order API together, late (docs/design.md, "Adaptive admission"). Near
// the front this costs about one poll more a wait (the wait left shrinks
// fivefold at each); farther back, about one more for each doubling of
// the wait beyond 3 s (it halves at each), so that a raised rate, even
// doubled, finds its visitors back in time.
func (c Config) turnAhead(wait float64) float64 {
	if !c.adaptive {
		return 0
	}
	return max(maxProbe, min(maxTurnAhead, math.Pow(1+maxProbe, wait)-1))
}

// PollAfterMs is when a user waiting at position should ask again: the tier
// of the estimated wait spread by ±20% (PollTiers.Ms), but never later than
// just after the user's own turn, position / rate from now plus half to one
// admission interval (in an adaptive room, at the rate the law may raise it
// to: turnAhead). Admission is FIFO at an exact rate, so that last poll
// lands right after the user is admitted: users who entered together in a
// spike reach the order API as evenly as admission paces them, instead of
// together at their next tier poll (BENCHMARKS.md measures the difference).
// u is uniform in [0, 1).
func (c Config) PollAfterMs(position int64, u float64) int64 {
	tier := c.PollTiers.Ms(c.EstimatedWaitSeconds(position), u)
	wait := float64(position) / c.AdmitRatePerSec
	turn := wait/(1+c.turnAhead(wait))*1000 + float64(c.AdmitInterval.Milliseconds())*(0.5+0.5*u)
	return min(tier, int64(math.Round(turn)))
}
