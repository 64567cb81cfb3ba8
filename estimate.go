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

// PollAfterMs picks the tier for an estimated wait and spreads it by
// ±20%; u is uniform in [0, 1).
func PollAfterMs(waitSeconds int64, u float64) int64 {
	base := float64(pollNearMs)
	switch {
	case waitSeconds >= 60:
		base = pollFarMs
	case waitSeconds >= 10:
		base = pollMidMs
	}
	return int64(math.Round(base * (1 - pollJitter + 2*pollJitter*u)))
}
