package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/waitroom/waitroom/bench/spike/sim"
)

// cmdAdaptive plays issue 21's scenarios (the order API slows down, loses
// connections, answers 503) under the fixed and the adaptive rate, same
// arrivals, and writes the results JSON BENCHMARKS.md's "Adaptive
// admission" is rendered from.
func cmdAdaptive(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("adaptive", flag.ExitOnError)
	out := fs.String("out", sim.DefaultFiles().Adaptive, "results JSON")
	scenarios := fs.String("scenarios", "all", "comma-separated keys, or all: "+scenarioKeys())
	strategies := fs.String("strategies", "all", "comma-separated, or all: "+strings.Join(sim.AdaptiveStrategies, ", "))
	duration := fs.Duration("duration", sim.AdaptiveDuration, "each run's length; the scenarios' moments scale with it (given for "+sim.AdaptiveDuration.String()+")")
	redisURL := fs.String("redis", os.Getenv("REDIS_URL"), "use this Redis (FLUSHALL!) instead of spawning redis-server")
	_ = fs.Parse(args)
	list, err := pickScenarios(*scenarios, *duration)
	if err != nil {
		return err
	}
	strats, err := pickStrategies(*strategies)
	if err != nil {
		return err
	}
	env, err := sim.NewEnv(*redisURL)
	if err != nil {
		return err
	}
	defer env.Close()
	res := &sim.AdaptiveResults{Machine: sim.DescribeMachine(ctx, env), Started: time.Now().UTC().Format(time.RFC3339), Settings: sim.AdaptiveRoom}
	res.Machine.GOMAXPROCS = runtime.GOMAXPROCS(0)
	for _, s := range strats {
		if s == sim.AdaptiveOn {
			if err := sim.CheckAdaptive(ctx, env); err != nil {
				return fmt.Errorf("the adaptive strategy cannot run on this build: %w", err)
			}
		}
	}
	// Both strategies of a scenario one after the other: the machine's
	// load is as alike as it gets between the two.
	for _, as := range list {
		for _, s := range strats {
			fmt.Fprintf(os.Stderr, "adaptive %s %s: %s, %d users (%d within %s, then %s/s), %s ...\n",
				as.Key, s, as.Name, as.Users(), as.SpikeUsers, as.SpikeWithin, fmtRate(as.StreamPerSec), as.Duration)
			run, err := sim.RunAdaptive(ctx, env, as, s)
			if err != nil {
				return err
			}
			res.Runs = append(res.Runs, run)
			fmt.Fprintln(os.Stderr, sim.AdaptiveSummaryLine(run))
		}
	}
	res.Finished = time.Now().UTC().Format(time.RFC3339)
	return writeJSON(*out, res)
}

func scenarioKeys() string {
	var k []string
	for _, s := range sim.AdaptiveScenarios() {
		k = append(k, s.Key)
	}
	return strings.Join(k, ", ")
}

func pickScenarios(keys string, d time.Duration) ([]sim.AdaptiveScenario, error) {
	if d < time.Second {
		return nil, fmt.Errorf("-duration must be at least 1s")
	}
	var out []sim.AdaptiveScenario
	for _, as := range sim.AdaptiveScenarios() {
		if keys == "all" || contains(keys, as.Key) {
			out = append(out, as.WithDuration(d))
		}
	}
	if len(out) == 0 || (keys != "all" && len(out) != len(strings.Split(keys, ","))) {
		return nil, fmt.Errorf("-scenarios %q: give some of %s, or all", keys, scenarioKeys())
	}
	return out, nil
}

func pickStrategies(names string) ([]string, error) {
	if names == "all" {
		return sim.AdaptiveStrategies, nil
	}
	var out []string
	for _, n := range strings.Split(names, ",") {
		n = strings.TrimSpace(n)
		if !contains(strings.Join(sim.AdaptiveStrategies, ","), n) {
			return nil, fmt.Errorf("-strategies: unknown %q (%s)", n, strings.Join(sim.AdaptiveStrategies, ", "))
		}
		out = append(out, n)
	}
	return out, nil
}

// contains says whether the comma-separated list holds s.
func contains(list, s string) bool {
	for _, x := range strings.Split(list, ",") {
		if strings.TrimSpace(x) == s {
			return true
		}
	}
	return false
}

func fmtRate(x float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", x), "0"), ".")
}
