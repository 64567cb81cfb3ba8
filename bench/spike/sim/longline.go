package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// pollingFactor is fixed 2 s polling's 30 polls per waiting user-minute
// over the measured rate: how many times fewer polls the server asks for.
func pollingFactor(ppm float64) float64 {
	if ppm <= 0 {
		return 0
	}
	return 30 / ppm
}

// longestWait is the longest measured enter → READY wait, or the line's
// length over the rate (marked ~) for results that predate the measure.
func longestWait(r *Result) string {
	if r.MaxWaitSeconds > 0 {
		return fmt.Sprintf("%.0f s", r.MaxWaitSeconds)
	}
	return fmt.Sprintf("~%.0f s", float64(r.Users)/r.ConfiguredPerSec)
}

// peakText is "N/s at t s (fixed 2 s polling: M/s)" for the busiest second
// of position requests, or "n/a".
func peakText(r *Result) string {
	if r.PeakPollsPerSec == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%d/s at %d s (fixed 2 s: %.0f/s)", r.PeakPollsPerSec, r.PeakPollsAtSec, r.Fixed2sAtPeakPerSec)
}

// pollingByLength is the table of polls per waiting user-minute against
// fixed 2 s polling, short lines to the long one.
func pollingByLength(b *strings.Builder, rep *Report) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	type line struct {
		what string
		r    *Result
		ppm  float64
	}
	var lines []line
	for _, r := range rep.group("sweep") {
		if r.Strategy.Name == BatchedJitter.Name && !r.Scenario.TierOnly && r.Scenario.Margin == 0.7 {
			lines = append(lines, line{"margin sweep's run at 0.7 (one run)", r, r.PollsPerUserMinute})
		}
	}
	if fixed := rep.defaultRuns(false); len(fixed) > 0 {
		ppm := medianOf(fixed, func(r *Result) float64 { return r.PollsPerUserMinute })
		lines = append(lines, line{fmt.Sprintf("headline (median of %d runs)", len(fixed)), fixed[0], ppm})
	}
	for _, r := range rep.group("scale") {
		if !r.Scenario.TierOnly {
			lines = append(lines, line{"larger scale (one run)", r, r.PollsPerUserMinute})
		}
	}
	for _, r := range rep.LongLine {
		lines = append(lines, line{"**long line** (one run)", r, r.PollsPerUserMinute})
	}
	if len(lines) == 0 {
		return
	}
	p("| line | users in spike | longest wait | polls / waiting user-minute | fixed 2 s polling ÷ this (30 ÷ polls/min) | ≤ 15 (at least 2× fewer) | busiest second of position requests |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, l := range lines {
		p("| %s | %d in %s | %s | %.1f | **%.2f×** | %s | %s |\n", l.what, l.r.Users, l.r.Scenario.Spike, longestWait(l.r), l.ppm, pollingFactor(l.ppm), check(l.ppm <= 15), peakText(l.r))
	}
	p("\n")
}

// longLineSection is the Black Friday case: a long line, waits of minutes.
func longLineSection(b *strings.Builder, rep *Report, plotDir, plotLink string) error {
	if len(rep.LongLine) == 0 {
		return nil
	}
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	r := rep.LongLine[0]
	sc := r.Scenario
	p("\n## A long line: the Black Friday case\n\n")
	p("The brief reasons about 100,000 users at 100/s, waits of many minutes spent mostly in API.md's 10 s tier. The runs above are short lines (the longest wait at most %s). This run is the largest line this 2-core machine simulates in real time: `%s` at margin %.1f, **%d users arriving in %s** (%s curve), ≈ %.0f s of admission at %.0f/s, same users and clients as above (`spike longline`, `make bench-longline`; one run, seed %d, %s). Its results are in `%s/longline-results.json`.\n\n",
		longestWaitOfScale(rep), r.Strategy.Name, sc.Margin, r.Users, sc.Spike, sc.Curve, float64(r.Users)/r.ConfiguredPerSec, r.ConfiguredPerSec, sc.Seed, rep.LongLineWhen, plotLink)
	resultTable(b, rep.LongLine)
	waited := 0.0
	if r.PollsPerUser > 0 {
		waited = r.WaitingUserMinutes * 60 / (float64(r.Polls) / r.PollsPerUser)
	}
	dev := 100 * (r.AdmittedPerSec/r.ConfiguredPerSec - 1)
	var polls, fixed float64
	for i, n := range r.PollsPerStep {
		polls += float64(n)
		if i < len(r.WaitingPerStep) {
			fixed += r.WaitingPerStep[i] / 2
		}
	}
	pollsAtPeakWaiting, peakWaitingAt := 0, 0
	for i, w := range r.WaitingPerStep {
		if w == r.PeakWaiting {
			peakWaitingAt = i
			if i < len(r.PollsPerStep) {
				pollsAtPeakWaiting = r.PollsPerStep[i]
			}
			break
		}
	}
	p("\n| figure | target | long line |\n| --- | --- | --- |\n")
	p("| downstream order p95 | ≤ 250 ms | %.0f ms (%s) |\n", r.OrderP95Ms, check(r.OrderP95Ms <= 250))
	p("| downstream max in flight / max queued at the pool | – | %d / %d |\n", r.DownstreamMaxInFlight, r.DownstreamMaxQueued)
	p("| admitted per s vs configured | within ±2%% | %.2f / %.2f (%+.2f%%, %s) |\n", r.AdmittedPerSec, r.ConfiguredPerSec, dev, check(dev >= -2 && dev <= 2))
	p("| FIFO inversions | 0 | %d (%s) |\n", r.FIFOInversions, check(r.FIFOInversions == 0))
	p("| polls per waiting user-minute (fixed 2 s polling: 30) | far below 30 (read: ≤ 15) | **%.2f**: %.2f× fewer than fixed 2 s polling (%s) |\n", r.PollsPerUserMinute, pollingFactor(r.PollsPerUserMinute), check(r.PollsPerUserMinute <= 15))
	p("| polls per waiting user / mean wait / longest wait | – | %.1f / %.0f s / %s |\n", r.PollsPerUser, waited, longestWait(r))
	p("| position requests/s, busiest second | – | %d/s at %d s, when fixed 2 s polling of the users then waiting would send %.0f/s |\n", r.PeakPollsPerSec, r.PeakPollsAtSec, r.Fixed2sAtPeakPerSec)
	p("| position requests/s when the most users waited | – | %d/s at %d s with %.0f users waiting; fixed 2 s polling: %.0f/s (%.1f× the measured rate) |\n", pollsAtPeakWaiting, peakWaitingAt, r.PeakWaiting, r.Fixed2sPeakPerSec, r.Fixed2sPeakPerSec/float64(max(1, pollsAtPeakWaiting)))
	if polls > 0 && r.Seconds > 0 {
		p("| position requests over the run | – | %.0f (%.0f/s on average); fixed 2 s polling: %.0f (%.0f/s) |\n", polls, polls/r.Seconds, fixed, fixed/r.Seconds)
	}
	p("\n![position requests per second, long line](%s/longline-polls.svg)\n\n", plotLink)
	p("Polls per user-minute fall as waits grow because a user polls every 10 s (±20%%) while its estimated wait is 60 s or more, every 5 s from 59 s to 10 s, and at the 2 s rate only for its last ~10 s. A user who waits W ≥ 60 s therefore polls about (W − 60)/10 + 10 + 5 times: the fixed cost of the 5 s and 2 s tiers, about 15 polls in the last minute, is spread over more minutes as the line grows. ")
	if float64(r.PeakPollsAtSec) <= (sc.Spike.Seconds() + 13) {
		p("The busiest second comes at %d s, within one 10 s tier (±20%%) of the spike: the spike's entrants polling for the first time, as many at once as the tier's jitter spreads them. ", r.PeakPollsAtSec)
	}
	p("Fixed 2 s polling is the dashed line: half the waiting population per second.\n\n")
	if err := pollsPlot(r, filepath.Join(plotDir, "longline-polls.svg")); err != nil {
		return err
	}
	return nil
}

func longestWaitOfScale(rep *Report) string {
	out := "a minute"
	for _, r := range rep.group("scale") {
		if !r.Scenario.TierOnly {
			out = longestWait(r)
		}
	}
	return out
}

// pollsPlot draws position requests per second against fixed 2 s polling
// of the same waiting users.
func pollsPlot(r *Result, path string) error {
	n := len(r.WaitingPerStep)
	x := make([]float64, n)
	got := make([]float64, n)
	fixed := make([]float64, n)
	for i := 0; i < n; i++ {
		x[i] = float64(i) * PollStep.Seconds()
		if i < len(r.PollsPerStep) {
			got[i] = float64(r.PollsPerStep[i])
		}
		fixed[i] = r.WaitingPerStep[i] / 2 / PollStep.Seconds()
	}
	c := Chart{Title: fmt.Sprintf("%s, %d users in %s: position requests per second", r.Strategy.Name, r.Users, r.Scenario.Spike),
		XLabel: "seconds since the spike began", YLabel: "requests per second",
		Series: []Series{{Name: "pollAfterMs (measured)", X: x, Y: got}, {Name: "fixed 2 s polling of the same waiting users", X: x, Y: fixed, Dash: true}}}
	return os.WriteFile(path, []byte(SVG(900, 320, c)), 0o644)
}
