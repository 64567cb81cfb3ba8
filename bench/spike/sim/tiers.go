package sim

import (
	"time"

	"github.com/waitroom/waitroom"
)

// PreviousPollTiers is the tier table before issue 9 chose a new default
// (API.md's original table): the "before" of the tier sweep.
const PreviousPollTiers = "60:10000,10:5000,0:2000"

// TierCandidates are the tables the tier sweep tries by default: the
// previous default, and ever longer tiers down to a single one longer
// than the whole wait (one poll at one's turn).
var TierCandidates = []string{
	PreviousPollTiers,
	"60:20000,10:10000,0:5000",
	"0:20000",
	"0:30000",
	"120:60000,0:20000",
	"0:60000",
	"0:120000",
	"0:300000",
}

// TierSweepWait is the wait the tier sweep sizes its line for: 5 minutes,
// the wait issue 9 counts requests per visitor at.
const TierSweepWait = 5 * time.Minute

// TierSweepScenario is the long line scaled down in time so that several
// tables fit in one sitting: the same pool of 20 connections at the same
// margin, with a 4× longer service time (800 ms), hence a 4× lower rate
// (17.5/s) and 4× fewer users (5,400) for the same ~5-minute wait. The
// pool's queueing is the same relative to the service time, so the
// downstream target scales with it (250 ms at 200 ms is 1.25 × the mean).
func TierSweepScenario() Scenario {
	sc := DefaultScenario()
	sc.Service = ServiceTime{Kind: "uniform", Mean: 800 * time.Millisecond, Spread: 0.2}
	sc.ServiceSpec = sc.Service.String()
	sc.Spike = 10 * time.Second
	sc.Users = int(sc.Rate() * (TierSweepWait.Seconds() + 10))
	return sc
}

// DownstreamTarget is the downstream p95 target of a scenario: 250 ms at
// the brief's 200 ms service time, 1.25 × the mean service time.
func DownstreamTarget(sc Scenario) float64 {
	return 1.25 * float64(sc.Service.Mean.Milliseconds())
}

// ReadyLearnTargetMs is the target of the READY-learn delay's p95: a user
// learns of its admission within a second.
const ReadyLearnTargetMs = 1000

// RequestsForWait is the mean requests per visitor of the users who waited
// at least fromSeconds (the ByWait bins from there), and how many they are.
func (res *Result) RequestsForWait(fromSeconds int) (float64, int) {
	var sum float64
	var n int
	for _, b := range res.ByWait {
		if b.FromSeconds >= fromSeconds {
			sum += b.Requests * float64(b.Users)
			n += b.Users
		}
	}
	if n == 0 {
		return 0, 0
	}
	return round2(sum / float64(n)), n
}

// LongWaitFrom is where the "≈ 5-minute wait" bins start: the last 30 s
// before TierSweepWait.
var LongWaitFrom = int(TierSweepWait.Seconds()) - WaitBinSeconds

// IsDefaultTiers reports whether a table is waitroom.DefaultPollTiers,
// whatever its spelling.
func IsDefaultTiers(s string) bool {
	t, err := waitroom.ParsePollTiers(s)
	return err == nil && t.String() == waitroom.DefaultPollTiers
}
