package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/waitroom/waitroom/sim"
)

// cmdFull runs every experiment of BENCHMARKS.md, one after the other on
// one redis-server, and writes them to a results JSON.
func cmdFull(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("full", flag.ExitOnError)
	out := fs.String("out", "docs/bench/spike-results.json", "results JSON")
	users := fs.Int("users", 2000, "users of the side-by-side comparison")
	spike := fs.Duration("spike", 8*time.Second, "their spike")
	sweepUsers := fs.Int("sweep-users", 800, "users of each margin-sweep run")
	scaleUsers := fs.Int("scale-users", 5000, "users of the at-scale run of the default strategy (0: skip)")
	repeats := fs.Int("repeats", 3, "runs of the default strategy for medians")
	redisURL := fs.String("redis", os.Getenv("REDIS_URL"), "use this Redis (FLUSHALL!) instead of spawning redis-server")
	_ = fs.Parse(args)

	env, err := sim.NewEnv(*redisURL)
	if err != nil {
		return err
	}
	defer env.Close()
	rep := &sim.Report{Machine: sim.DescribeMachine(ctx, env), Started: time.Now().UTC().Format(time.RFC3339)}
	rep.Machine.GOMAXPROCS = runtime.GOMAXPROCS(0)

	run := func(group string, sc sim.Scenario, st sim.Strategy) error {
		t0 := time.Now()
		res, err := sim.Run(ctx, env, sc, st)
		if err != nil {
			return err
		}
		res.Group = group
		rep.Runs = append(rep.Runs, res)
		fmt.Fprintf(os.Stderr, "%-15s %-16s polling=%-11s margin=%.1f users=%d: p95 %.0f ms, max in flight %d, e2e p50 %.0f ms, %.1f/%.1f per s, inversions %d, polls/min %.1f, polls/user %.1f (%.0fs)\n",
			group, st.Name, sim.Polling(sc), sc.Margin, sc.Users, res.OrderP95Ms, res.DownstreamMaxInFlight, res.E2EP50Ms,
			res.AdmittedPerSec, res.ConfiguredPerSec, res.FIFOInversions, res.PollsPerUserMinute, res.PollsPerUser, time.Since(t0).Seconds())
		return nil
	}
	base := sim.DefaultScenario()
	base.Users, base.Spike = *users, *spike
	base.ServiceSpec = base.Service.String()

	// tierOnly is the what-if of the server before poll-at-turn: clients
	// sleep the plain API.md tier, ignoring a shorter pollAfterMs.
	tierOnly := func(sc sim.Scenario) sim.Scenario { sc.TierOnly = true; return sc }

	// 1. Side by side, clients as specified (sleep pollAfterMs).
	for _, st := range sim.Strategies {
		if err := run("compare", base, st); err != nil {
			return err
		}
	}
	// 2. The default strategy with tier-only polling: why the design changed.
	if err := run("tier-only", tierOnly(base), sim.BatchedJitter); err != nil {
		return err
	}
	// 3. Worst case: users told at the admission instant (push), smaller.
	push := base
	push.Notify, push.Users, push.Spike = "push", *sweepUsers, 3*time.Second
	for _, st := range sim.Strategies[2:] {
		if err := run("push", push, st); err != nil {
			return err
		}
	}
	// 4. Repeats of the default strategy (and of its what-if), for medians.
	for i := 1; i < *repeats; i++ {
		sc := base
		sc.Seed = uint64(1 + i)
		for _, s := range []sim.Scenario{sc, tierOnly(sc)} {
			if err := run("repeat", s, sim.BatchedJitter); err != nil {
				return err
			}
		}
	}
	// 5. Downstream p95 against the safety margin.
	for _, m := range []float64{0.5, 0.6, 0.7, 0.8, 0.9, 1.0} {
		sc := base
		sc.Users, sc.Spike, sc.Margin = *sweepUsers, 3*time.Second, m
		for _, st := range sim.Strategies[1:] {
			if err := run("sweep", sc, st); err != nil {
				return err
			}
		}
		if err := run("sweep", tierOnly(sc), sim.BatchedJitter); err != nil {
			return err
		}
	}
	// 6. The default strategy at a larger scale (longer waits: poll tiers).
	if *scaleUsers > 0 {
		sc := base
		sc.Users, sc.Spike = *scaleUsers, 10*time.Second
		for _, s := range []sim.Scenario{sc, tierOnly(sc)} {
			if err := run("scale", s, sim.BatchedJitter); err != nil {
				return err
			}
		}
	}
	rep.Finished = time.Now().UTC().Format(time.RFC3339)
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rep, "", " ")
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", *out)
	return os.WriteFile(*out, append(b, '\n'), 0o644)
}

// cmdReport writes BENCHMARKS.md and the plots from the results files.
func cmdReport(args []string) error {
	fs := flag.NewFlagSet("report", flag.ExitOnError)
	in := fs.String("in", "docs/bench/spike-results.json", "spike results (spike full)")
	micro := fs.String("micro", "docs/bench/micro-results.json", "micro-benchmark results (make bench)")
	md := fs.String("md", "BENCHMARKS.md", "report to write")
	plots := fs.String("plots", "docs/bench", "directory of the plots")
	_ = fs.Parse(args)
	var rep sim.Report
	b, err := os.ReadFile(*in)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("%s: %w", *in, err)
	}
	for _, r := range rep.Runs { // the service time travels as its spec
		if st, err := sim.ParseServiceTime(r.Scenario.ServiceSpec); err == nil {
			r.Scenario.Service = st
		}
	}
	var mr *sim.MicroResults
	if b, err := os.ReadFile(*micro); err == nil {
		mr = &sim.MicroResults{}
		if err := json.Unmarshal(b, mr); err != nil {
			return fmt.Errorf("%s: %w", *micro, err)
		}
	} else {
		fmt.Fprintf(os.Stderr, "no %s: micro-benchmark section left out\n", *micro)
	}
	text, err := sim.WriteReport(&rep, mr, *plots, strings.TrimSuffix(filepath.ToSlash(*plots), "/"))
	if err != nil {
		return err
	}
	return os.WriteFile(*md, []byte(text), 0o644)
}
