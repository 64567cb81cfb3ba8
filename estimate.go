package waitroom

import "math"

// Poll tiers of API.md: far from the front, ask rarely; near it, often.
const (
	pollFarMs  = 10_000 // estimated wait 60 s or more
	pollMidMs  = 5_000  // 10 s to 59 s
	pollNearMs = 2_000  // under 10 s
	pollJitter = 0.2    // ±20% so that a tier does not poll in step
)

// EstimatedWaitSeconds is ceil(position / rate), and 0 within the first batch.
func (c Config) EstimatedWaitSeconds(position int64) int64 {
	if float64(position) <= c.AdmitRatePerSec*c.AdmitInterval.Seconds() {
		return 0
	}
	return int64(math.Ceil(float64(position) / c.AdmitRatePerSec))
}

// PollAfterMs is when a user waiting at position should ask again: the tier
// of the estimated wait spread by ±20% (PollTierMs), but never later than just
// after the user's own turn, position / rate from now plus half to one
// admission interval. Admission is FIFO at an exact rate, so that last poll
// lands right after the user is admitted: users who entered together in a
// spike reach the order API as evenly as admission paces them, instead of
// together at their next tier poll (BENCHMARKS.md measures the difference).
// u is uniform in [0, 1).
func (c Config) PollAfterMs(position int64, u float64) int64 {
	tier := PollTierMs(c.EstimatedWaitSeconds(position), u)
	turn := float64(position)/c.AdmitRatePerSec*1000 + float64(c.AdmitInterval.Milliseconds())*(0.5+0.5*u)
	return min(tier, int64(math.Round(turn)))
}

// PollTierMs picks API.md's tier for an estimated wait and spreads it by
// ±20%; u is uniform in [0, 1).
func PollTierMs(waitSeconds int64, u float64) int64 {
	base := float64(pollNearMs)
	switch {
	case waitSeconds >= 60:
		base = pollFarMs
	case waitSeconds >= 10:
		base = pollMidMs
	}
	return int64(math.Round(base * (1 - pollJitter + 2*pollJitter*u)))
}
