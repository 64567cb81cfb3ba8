package sim

import (
	"fmt"
	"strings"
	"text/template"
)

// reportFuncs are the formatting helpers of report.md.tmpl.
var reportFuncs = template.FuncMap{
	"f0":      func(x float64) string { return fmt.Sprintf("%.0f", x) },
	"f1":      func(x float64) string { return fmt.Sprintf("%.1f", x) },
	"f2":      func(x float64) string { return fmt.Sprintf("%.2f", x) },
	"tick":    fmtTick,
	"check":   check,
	"join":    strings.Join,
	"polling": Polling,
	"runs":    runsText,
	"rate":    rateCell,
	"polls":   pollsCell,
	"client":  clientCell,
	"learn":   learnCell,
	"sub":     func(a, b float64) float64 { return a - b },
	"mul":     func(a, b float64) float64 { return a * b },
	"div":     func(a, b float64) float64 { return a / b },
	"pctLess": func(x, of float64) float64 { return 100 * (1 - x/of) },
	"float":   func(n int) float64 { return float64(n) },
	"verdict": func(ratio float64) string {
		if ratio >= reportTargets.MicroRatio {
			return "met"
		}
		return fmt.Sprintf("below %g", reportTargets.MicroRatio)
	},
}

func runsText(xs []float64) string {
	if len(xs) < 2 {
		return ""
	}
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	return " (runs: " + strings.Join(parts, ", ") + ")"
}

func rateCell(r *Result) string {
	if r.ConfiguredPerSec == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f / %.1f (%+.1f%%)", r.AdmittedPerSec, r.ConfiguredPerSec, deviation(r))
}

func pollsCell(r *Result) string {
	if r.Strategy.Kind != "room" || r.Scenario.Notify != "poll" {
		return "n/a"
	}
	return fmt.Sprintf("%.1f (%.1f)", r.PollsPerUserMinute, r.PollsPerUser)
}

func clientCell(r *Result) string {
	if r.Strategy.Kind != "room" {
		return "-"
	}
	return Polling(r.Scenario)
}

func learnCell(r *Result) string {
	if r.Strategy.Kind != "room" || r.ReadyLearnMaxMs == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f / %.0f", r.ReadyLearnP95Ms, r.ReadyLearnMaxMs)
}
