package sim

import (
	"fmt"
	"os"
	"path/filepath"
)

// writePlots draws the report's SVG plots into dir.
func writePlots(in *Inputs, d *reportData, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := inflightPlot(d.Compare, filepath.Join(dir, "inflight.svg"), "pollAfterMs"); err != nil {
		return err
	}
	if d.Design != nil {
		if err := inflightPlot(group(in.Spike.Runs, "tier-only"), filepath.Join(dir, "inflight-tier-only.svg"), "what-if: tier-only polling"); err != nil {
			return err
		}
	}
	if d.Margin != nil {
		if err := marginPlot(d.Margin, filepath.Join(dir, "p95-vs-margin.svg"), d.Targets.DownstreamMs); err != nil {
			return err
		}
	}
	if d.Long != nil {
		if err := pollsPlot(d.Long.R, filepath.Join(dir, "longline-polls.svg")); err != nil {
			return err
		}
	}
	if d.Tiers != nil {
		if err := tiersPlot(d.Tiers, filepath.Join(dir, "tiers-requests.svg")); err != nil {
			return err
		}
	}
	if d.Adaptive != nil {
		return adaptivePlots(d.Adaptive, dir)
	}
	return nil
}

// inflightPlotMax is the common y scale of the protected strategies' panels.
const inflightPlotMax = 80

func inflightPlot(rs []*Result, path, label string) error {
	var charts []Chart
	for _, r := range rs {
		x := make([]float64, len(r.InFlight))
		inF := make([]float64, len(r.InFlight))
		q := make([]float64, len(r.InFlight))
		for i := range r.InFlight {
			x[i] = float64(i) * TimelineStep.Seconds()
			inF[i] = float64(r.InFlight[i])
			if i < len(r.Queued) {
				q[i] = float64(r.Queued[i])
			}
		}
		c := Chart{Title: fmt.Sprintf("%s (%s): order API connections in use and requests queued, max per %s", r.Strategy.Name, label, TimelineStep),
			XLabel: "seconds since the spike began", YLabel: "requests", Series: []Series{{Name: "in flight", X: x, Y: inF}, {Name: "queued", X: x, Y: q, Dash: true}},
			HLine: float64(r.Scenario.Connections), HLabel: "pool size"}
		if r.Strategy.Kind != "direct" {
			c.YMin, c.YMax = 0, inflightPlotMax
		}
		charts = append(charts, c)
	}
	return os.WriteFile(path, []byte(SVG(900, 230, charts...)), 0o644)
}

func marginPlot(m *marginSweep, path string, target float64) error {
	var series []Series
	ymax := 0.0
	for _, row := range m.Rows {
		s := Series{Name: row.Name, Dash: row.Cells[0] != nil && row.Cells[0].Scenario.TierOnly}
		for i, r := range row.Cells {
			if r != nil {
				s.X, s.Y = append(s.X, m.Margins[i]), append(s.Y, r.OrderP95Ms)
				ymax = max(ymax, r.OrderP95Ms)
			}
		}
		series = append(series, s)
	}
	if m.DirectP95 > 0 {
		// Far above the others: drawn, but the scale keeps the waiting-room lines readable.
		series = append([]Series{{Name: "no-waiting-room", X: []float64{m.Margins[0], m.Margins[len(m.Margins)-1]}, Y: []float64{m.DirectP95, m.DirectP95}, Dash: true}}, series...)
	}
	c := Chart{Title: "Downstream order p95 vs safety margin", XLabel: fmt.Sprintf("safety margin (rate = %s/s × margin)", fmtTick(m.PerMargin)),
		YLabel: "p95 at the order API (ms)", Series: series, HLine: target, HLabel: fmt.Sprintf("target %.0f ms", target)}
	c.YMin, c.YMax = 0, max(1.2*target, ymax*1.1)
	return os.WriteFile(path, []byte(SVG(820, 420, c)), 0o644)
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
	c := Chart{Title: fmt.Sprintf("%s, %d users in %s, POLL_TIERS=%s: position requests per second", r.Strategy.Name, r.Users, r.Scenario.Spike, r.Scenario.Tiers()),
		XLabel: "seconds since the spike began", YLabel: "requests per second",
		Series: []Series{{Name: "pollAfterMs (measured)", X: x, Y: got}, {Name: "fixed 2 s polling of the same waiting users", X: x, Y: fixed, Dash: true}}}
	return os.WriteFile(path, []byte(SVG(900, 320, c)), 0o644)
}

// tiersPlot draws requests per visitor against the wait, one line per table.
func tiersPlot(s *tierSweep, path string) error {
	var series []Series
	for _, row := range s.Rows {
		se := Series{Name: "POLL_TIERS=" + row.Tiers, Dash: row.Tiers == PreviousPollTiers}
		for _, b := range row.R.ByWait {
			se.X = append(se.X, float64(b.FromSeconds)+WaitBinSeconds/2)
			se.Y = append(se.Y, b.Requests)
		}
		series = append(series, se)
	}
	c := Chart{Title: "Requests per visitor (enter + polls + order) by wait", XLabel: fmt.Sprintf("wait, enter → READY (s; bins of %d s)", WaitBinSeconds),
		YLabel: "requests per visitor", Series: series, HLine: s.RequestsTarget, HLabel: fmt.Sprintf("goal %.0f at a 5-minute wait", s.RequestsTarget)}
	return os.WriteFile(path, []byte(SVG(900, 420, c)), 0o644)
}
