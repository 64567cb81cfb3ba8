package sim

import (
	"fmt"
	"os"
	"path/filepath"
)

// adaptiveSection is the report's "Adaptive admission": per scenario, the
// fixed and the adaptive run side by side.
type adaptiveSection struct {
	*AdaptiveResults
	Setup       AdaptiveScenario // the scenarios' common arrivals and clients
	FixedRate   float64
	Scenarios   []adaptiveView
	AdaptiveRan bool // some adaptive run is in the results
	// The targets' constants, as the prose states them.
	SettleS, SteadyS, MinUsedPct, RateTolPct, P95Factor float64
	TokenTTLS, OrderTimeoutS                            float64
	ServiceMs, Capacity, FewestFromS                    float64 // the API's normal mean service time and capacity
	NotRun                                              string
}

// adaptiveView is one scenario: its runs (nil: not run), its plots, its
// targets fixed against adaptive.
type adaptiveView struct {
	Key, Name         string
	Fixed, Adaptive   *AdaptiveRun
	Runs              []adaptiveRunRow // the strategies in order, run or not
	P95Plot, RatePlot string           // the plots' file names in the plots' directory
	Targets           []adaptiveTargetRow
}

type adaptiveRunRow struct {
	Strategy string
	R        *AdaptiveRun // nil: not run
}

type adaptiveTargetRow struct {
	Phase, Goal, Fixed, Adaptive string
}

// notRun marks a strategy missing from the results.
const notRun = "not run"

func buildAdaptive(res *AdaptiveResults) *adaptiveSection {
	s := &adaptiveSection{AdaptiveResults: res, SettleS: SettleWithin.Seconds(), SteadyS: SteadyWindow.Seconds(),
		MinUsedPct: 100 * MinUsed, RateTolPct: 100 * RateTolerance, P95Factor: P95Factor}
	var order []string // scenarios in the order of their first run
	byKey := map[string]*adaptiveView{}
	for _, r := range res.Runs {
		// The targets are the phases' figures judged: judged again here, so
		// that their wording follows this code, not the code of the run.
		r.Targets = targetsOf(r)
		v := byKey[r.Scenario]
		if v == nil {
			v = &adaptiveView{Key: r.Scenario, Name: r.Name, P95Plot: adaptivePlot(r.Scenario, "p95"), RatePlot: adaptivePlot(r.Scenario, "rate")}
			byKey[r.Scenario], order, s.Setup = v, append(order, r.Scenario), r.Setup
		}
		switch r.Strategy {
		case AdaptiveFixed:
			v.Fixed = r
		case AdaptiveOn:
			v.Adaptive = r
			s.AdaptiveRan = true
		}
	}
	for _, k := range order {
		v := byKey[k]
		v.Runs = []adaptiveRunRow{{AdaptiveFixed, v.Fixed}, {AdaptiveOn, v.Adaptive}}
		v.Targets = targetRows(v.Fixed, v.Adaptive)
		s.Scenarios = append(s.Scenarios, *v)
	}
	s.FixedRate, s.NotRun, s.FewestFromS = s.Setup.Base.Rate(), notRun, FewestFrom.Seconds()
	s.ServiceMs = ms(s.Setup.Base.Service.Mean)
	s.Capacity = s.Setup.Base.Rate() / s.Setup.Base.Margin
	s.TokenTTLS, s.OrderTimeoutS = s.Setup.Base.TokenTTL.Seconds(), s.Setup.Base.OrderTimeout.Seconds()
	return s
}

// AdmittedPerSec is the phase's admissions per second.
func (p AdaptivePhase) AdmittedPerSec() float64 { return perSecondOf(p.Admitted, p.WholeSeconds) }

// ServedPerSec is the orders the API completed per second in the phase.
func (p AdaptivePhase) ServedPerSec() float64 { return perSecondOf(p.Served, p.WholeSeconds) }

func perSecondOf(n, seconds int) float64 {
	if seconds == 0 {
		return 0
	}
	return float64(n) / float64(seconds)
}

// adaptivePlot is the file name of a scenario's plot.
func adaptivePlot(key, kind string) string { return "adaptive-" + key + "-" + kind + ".svg" }

// targetRows pairs the two runs' targets, by phase and target.
func targetRows(fixed, adaptive *AdaptiveRun) []adaptiveTargetRow {
	base := fixed
	if base == nil {
		base = adaptive
	}
	var out []adaptiveTargetRow
	for i, t := range base.Targets {
		row := adaptiveTargetRow{Phase: t.Phase, Goal: t.Goal, Fixed: targetCell(fixed, i), Adaptive: targetCell(adaptive, i)}
		if row.Phase == "" {
			row.Phase = "whole run"
		}
		out = append(out, row)
	}
	return out
}

func targetCell(r *AdaptiveRun, i int) string {
	if r == nil || i >= len(r.Targets) {
		return notRun
	}
	t := r.Targets[i]
	if !t.Applies {
		return t.Measured
	}
	return t.Measured + " (" + check(t.Pass) + ")"
}

// adaptivePlots draws each scenario's two plots into dir.
func adaptivePlots(s *adaptiveSection, dir string) error {
	for _, v := range s.Scenarios {
		if err := os.WriteFile(filepath.Join(dir, v.P95Plot), []byte(p95Plot(v)), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, v.RatePlot), []byte(ratePlot(v)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// p95ClipFactor is how far above the highest target the p95 plot's scale
// reaches: an overloaded API's seconds of latency would flatten the target.
const p95ClipFactor = 4

// p95Plot is downstream p95 per second, fixed against adaptive, with the
// mean service time and the target it implies.
func p95Plot(v adaptiveView) string {
	var series []Series
	var svc, limit Series
	top := 0.0
	for _, rr := range v.Runs {
		if rr.R == nil {
			continue
		}
		se := Series{Name: rr.Strategy + ": downstream p95"}
		svc, limit = Series{Name: "mean service time", Dash: true}, Series{Name: fmt.Sprintf("target: %g × service time", P95Factor), Dash: true}
		for _, sec := range rr.R.Seconds {
			x := float64(sec.T) + 0.5
			if sec.Served > 0 {
				se.X, se.Y = append(se.X, x), append(se.Y, sec.DownP95Ms)
			}
			svc.X, svc.Y = append(svc.X, x), append(svc.Y, sec.ServiceMs)
			limit.X, limit.Y = append(limit.X, x), append(limit.Y, P95Factor*sec.ServiceMs)
			top = max(top, P95Factor*sec.ServiceMs)
		}
		series = append(series, se)
	}
	series = append(series, svc, limit)
	c := Chart{Title: fmt.Sprintf("(%s) %s: downstream p95 per second (scale clipped at %s ms)", v.Key, v.Name, fmtTick(p95ClipFactor*top)),
		XLabel: "seconds since the run began", YLabel: "p95 at the order API (ms)", Series: series, YMin: 0, YMax: p95ClipFactor * top}
	return SVG(900, 340, c)
}

// ratePlot is, per strategy, admitted/s and the effective rate against the
// API's capacity and the orders it completed.
func ratePlot(v adaptiveView) string {
	var charts []Chart
	for _, rr := range v.Runs {
		if rr.R == nil {
			continue
		}
		capa, eff := Series{Name: "API capacity", Dash: true}, Series{Name: "effective rate"}
		adm, done := Series{Name: "admitted/s"}, Series{Name: "orders completed/s"}
		for _, sec := range rr.R.Seconds {
			x := float64(sec.T) + 0.5
			capa.X, capa.Y = append(capa.X, x), append(capa.Y, sec.CapacityPerSec)
			eff.X, eff.Y = append(eff.X, x), append(eff.Y, sec.EffectiveRatePerSec)
			adm.X, adm.Y = append(adm.X, x), append(adm.Y, float64(sec.Admitted))
			done.X, done.Y = append(done.X, x), append(done.Y, float64(sec.Served))
		}
		charts = append(charts, Chart{Title: fmt.Sprintf("(%s) %s, %s: admission against the order API's capacity", v.Key, v.Name, rr.Strategy),
			XLabel: "seconds since the run began", YLabel: "per second", Series: []Series{capa, eff, adm, done}})
	}
	return SVG(900, 300, charts...)
}
