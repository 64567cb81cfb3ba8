package sim

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeAdaptive is a results file of scenario (a): the fixed run, and the
// adaptive one when withAdaptive.
func fakeAdaptive(withAdaptive bool) *AdaptiveResults {
	as := AdaptiveScenarios()[0]
	res := &AdaptiveResults{Machine: Machine{NumCPU: 2, Redis: "redis-server 7.9"}, Started: "g", Finished: "h", Settings: AdaptiveRoom}
	add := func(strategy string, run *AdaptiveRun) {
		run.Scenario, run.Name, run.Strategy, run.Setup, run.WallSeconds = as.Key, as.Name, strategy, as, 121
		res.Runs = append(res.Runs, run)
	}
	add(AdaptiveFixed, phaseRun(300, 260, true))
	if withAdaptive {
		add(AdaptiveOn, phaseRun(300, 210, false))
	}
	return res
}

func renderAdaptive(t *testing.T, res *AdaptiveResults) (string, string) {
	t.Helper()
	dir := t.TempDir()
	f := Files{Spike: filepath.Join(dir, "r", "spike.json"), Adaptive: filepath.Join(dir, "r", "adaptive.json"), Markdown: filepath.Join(dir, "B.md"), Plots: filepath.Join(dir, "r")}
	// Through JSON, as LoadInputs reads it: the service time is kept as its spec alone.
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	in := fakeInputs()
	in.Adaptive = &AdaptiveResults{}
	if err := json.Unmarshal(b, in.Adaptive); err != nil {
		t.Fatal(err)
	}
	in.Adaptive.restore()
	md, err := WriteReport(in, f)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md, "<no value>") {
		t.Errorf("report has an unset value")
	}
	return md, f.Plots
}

func TestAdaptiveSectionFixedOnly(t *testing.T) {
	md, plots := renderAdaptive(t, fakeAdaptive(false))
	for _, want := range []string{
		"## Adaptive admission (issue 21)",
		"`r/adaptive.json`",
		"**The adaptive strategy has not been run for these results**",
		"`ratePerSec` 70 (the seeds' formula: 20 connections × 1000/200 ms × margin 0.7)",
		`{"targetP95Ms":250,"minRatePerSec":10,"maxRatePerSec":200}`,
		"1,500 visitors within the first 3s, then 110 a second for the whole run (14,700 in 2m0s)",
		"**Entry tokens live 30 s**",
		"### (a) service time doubles at 30 s, recovers at 90 s",
		"](r/adaptive-a-p95.svg)",
		"| downstream p95 ≤ 1.25 × service time (250 ms) from 10s after the change | during | 260 ms (160 orders) (**not met**) | not run |",
		"| ≥ 90% of capacity used at steady state (the phase's last 15s) | during | 80% (of 10/s) (**not met**) | not run |",
		"| effective rate within ±10% of capacity at steady state | during | 13/s vs 10/s (+30%) (**not met**) | not run |",
		"| no token expires unused for lack of capacity | whole run | 1 of 0 admitted (1 expired unused in all) (**not met**) | not run |",
		"| adaptive | not run |",
		"| fixed | during | 30–60 | 2, 200 ms → 10/s | 300 / 260 ms | 0.0 | 8.0 | 80% | 13.0/s | 1 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, svg := range []string{"adaptive-a-p95.svg", "adaptive-a-rate.svg"} {
		b, err := os.ReadFile(filepath.Join(plots, svg))
		if err != nil || !strings.Contains(string(b), "fixed") || strings.Contains(string(b), "adaptive: downstream") {
			t.Errorf("plot %s: %v", svg, err)
		}
	}
}

func TestAdaptiveSectionBoth(t *testing.T) {
	md, plots := renderAdaptive(t, fakeAdaptive(true))
	for _, want := range []string{
		"| downstream p95 ≤ 1.25 × service time (250 ms) from 10s after the change | during | 260 ms (160 orders) (**not met**) | 210 ms (160 orders) (met) |",
		"| no token expires unused for lack of capacity | whole run | 1 of 0 admitted (1 expired unused in all) (**not met**) | 0 of 0 admitted (0 expired unused in all) (met) |",
		"| adaptive | 0 / 0 (0) / 0 | 300 ms |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(md, "not run") || strings.Contains(md, "has not been run") {
		t.Error("a strategy marked not run")
	}
	b, err := os.ReadFile(filepath.Join(plots, "adaptive-a-p95.svg"))
	if err != nil || !strings.Contains(string(b), "adaptive: downstream p95") {
		t.Errorf("the p95 plot lacks the adaptive run (%v)", err)
	}
}
