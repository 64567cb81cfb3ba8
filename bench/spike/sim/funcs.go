package sim

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
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
	"add":     func(a, b float64) float64 { return a + b },
	"mul":     func(a, b float64) float64 { return a * b },
	"div":     func(a, b float64) float64 { return a / b },
	"pctLess": func(x, of float64) float64 { return 100 * (1 - x/of) },
	"float":   func(n int) float64 { return float64(n) },
	"float64": func(n int64) float64 { return float64(n) },
	"n0":      thousands,
	"secs":    secs,
	"pct":     func(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) },
	"base":    func(path string) string { return filepath.Base(path) },
	"selfTop": selfTop,
	"signed":  signed,
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

// thousands is x rounded to a whole number, with thousands separated by
// commas: 216512.4 → "216,512".
func thousands(x float64) string {
	d := strconv.FormatInt(int64(math.Round(math.Abs(x))), 10)
	for i := len(d) - 3; i > 0; i -= 3 {
		d = d[:i] + "," + d[i:]
	}
	if math.Round(x) < 0 {
		return "-" + d
	}
	return d
}

// selfTop are the functions ranked by their own cost.
func selfTop(fs []RedisCostFunc) []RedisCostFunc {
	var out []RedisCostFunc
	for _, f := range fs {
		if f.TopBySelfOrder > 0 {
			out = append(out, f)
		}
	}
	return out
}

// signed is x to one decimal with its sign, never "-0.0".
func signed(x float64) string {
	r := math.Round(x*10) / 10
	if r == 0 {
		r = 0 // not -0
	}
	return fmt.Sprintf("%+.1f", r)
}

// secs writes a duration in seconds as milliseconds below one second.
func secs(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%.0f ms", s*1000)
	}
	return fmt.Sprintf("%.1f s", s)
}
