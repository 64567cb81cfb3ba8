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
		fmt.Fprintf(os.Stderr, "%-10s %-18s client=%-8s notify=%-4s margin=%.1f users=%d: p95 %.0f ms, max in flight %d, e2e p50 %.0f ms, %.1f/%.1f per s, inversions %d, polls/min %.1f (%.0fs)\n",
			group, st.Name, sc.Client, sc.Notify, sc.Margin, sc.Users, res.OrderP95Ms, res.DownstreamMaxInFlight, res.E2EP50Ms,
			res.AdmittedPerSec, res.ConfiguredPerSec, res.FIFOInversions, res.PollsPerUserMinute, time.Since(t0).Seconds())
		return nil
	}
	base := sim.DefaultScenario()
	base.Users, base.Spike = *users, *spike
	base.ServiceSpec = base.Service.String()

	// 1. Side by side, the API as specified (clients sleep pollAfterMs).
	for _, st := range sim.Strategies {
		if err := run("compare", base, st); err != nil {
			return err
		}
	}
	// 2. The same waiting-room strategies with the proposed poll-at-turn answers.
	turn := base
	turn.Client = "turn"
	for _, st := range sim.Strategies[2:] {
		if err := run("turn", turn, st); err != nil {
			return err
		}
	}
	// 3. Worst case: users told at the admission instant (push), smaller.
	push := base
	push.Notify, push.Users, push.Spike = "push", *sweepUsers, 3*time.Second
	for _, st := range sim.Strategies[2:] {
		if err := run("push", push, st); err != nil {
			return err
		}
	}
	// 4. Repeats of the default strategy, for medians.
	for i := 1; i < *repeats; i++ {
		for _, c := range []string{"contract", "turn"} {
			sc := base
			sc.Client, sc.Seed = c, uint64(1+i)
			if err := run("repeat", sc, sim.BatchedJitter); err != nil {
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
		sc.Client = "turn"
		if err := run("sweep-turn", sc, sim.BatchedJitter); err != nil {
			return err
		}
	}
	// 6. The default strategy at a larger scale (longer waits: poll tiers).
	if *scaleUsers > 0 {
		for _, c := range []string{"contract", "turn"} {
			sc := base
			sc.Users, sc.Spike, sc.Client = *scaleUsers, 10*time.Second, c
			if err := run("scale", sc, sim.BatchedJitter); err != nil {
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
