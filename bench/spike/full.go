package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/waitroom/waitroom/bench/spike/sim"
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

	env, rep, err := newReport(ctx, *redisURL)
	if err != nil {
		return err
	}
	defer env.Close()

	run := func(group string, sc sim.Scenario, st sim.Strategy) error {
		t0 := time.Now()
		res, err := sim.Run(ctx, env, sc, st)
		if err != nil {
			return err
		}
		res.Group = group
		res.DropTimelines(group == "compare" || group == "tier-only", false) // what the plots draw
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
	// sleep the plain tier of the table of then, ignoring a shorter pollAfterMs.
	tierOnly := func(sc sim.Scenario) sim.Scenario {
		sc.TierOnly, sc.PollTiers = true, sim.PreviousPollTiers
		return sc
	}

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
	return saveReport(*out, rep)
}

// LongLineScenario is the long line of BENCHMARKS.md: a Black Friday line
// sized for real time on a small machine, 20,000 users in a 10 s spike at the
// default margin (≈ 290 s of admission at 70/s), so that most of the wait
// is spent far from the front, in the top poll tier.
func LongLineScenario() sim.Scenario {
	sc := sim.DefaultScenario()
	sc.Users, sc.Spike = 20_000, 10*time.Second
	sc.ServiceSpec = sc.Service.String()
	return sc
}

// cmdLongLine runs the default strategy on the long line and writes the
// results to their own JSON (kept apart so that each file stays small).
func cmdLongLine(ctx context.Context, args []string) error {
	sc := LongLineScenario()
	fs := flag.NewFlagSet("longline", flag.ExitOnError)
	out := fs.String("out", "docs/bench/longline-results.json", "results JSON")
	fs.IntVar(&sc.Users, "users", sc.Users, "simulated users")
	fs.DurationVar(&sc.Spike, "spike", sc.Spike, "all users arrive within this time")
	fs.Float64Var(&sc.Margin, "margin", sc.Margin, "safety margin")
	fs.Uint64Var(&sc.Seed, "seed", sc.Seed, "random seed")
	fs.StringVar(&sc.PollTiers, "poll-tiers", sc.PollTiers, "POLL_TIERS (default: waitroom.DefaultPollTiers)")
	redisURL := fs.String("redis", os.Getenv("REDIS_URL"), "use this Redis (FLUSHALL!) instead of spawning redis-server")
	_ = fs.Parse(args)
	env, rep, err := newReport(ctx, *redisURL)
	if err != nil {
		return err
	}
	defer env.Close()
	fmt.Fprintf(os.Stderr, "long line: %d users in %s (%s), rate %.1f/s, ~%.0f s of admission ...\n", sc.Users, sc.Spike, sc.Curve, sc.Rate(), float64(sc.Users)/sc.Rate())
	res, err := sim.Run(ctx, env, sc, sim.BatchedJitter)
	if err != nil {
		return err
	}
	res.Group = "longline"
	res.DropTimelines(false, true) // its plot draws the polling timeline
	rep.Runs = append(rep.Runs, res)
	fmt.Fprintf(os.Stderr, "long line: p95 %.0f ms, max in flight %d, %.2f/%.2f per s, inversions %d, polls/user-min %.2f, peak polls %d/s at %d s (fixed 2 s: %.0f/s), peak waiting %.0f (fixed 2 s: %.0f/s), longest wait %.0f s (%.0fs)\n",
		res.OrderP95Ms, res.DownstreamMaxInFlight, res.AdmittedPerSec, res.ConfiguredPerSec, res.FIFOInversions, res.PollsPerUserMinute,
		res.PeakPollsPerSec, res.PeakPollsAtSec, res.Fixed2sAtPeakPerSec, res.PeakWaiting, res.Fixed2sPeakPerSec, res.MaxWaitSeconds, res.Seconds)
	return saveReport(*out, rep)
}

// cmdReport writes BENCHMARKS.md and the plots from the results files.
func cmdReport(args []string) error {
	f := sim.DefaultFiles()
	fs := flag.NewFlagSet("report", flag.ExitOnError)
	fs.StringVar(&f.Spike, "in", f.Spike, "spike results (spike full)")
	fs.StringVar(&f.Micro, "micro", f.Micro, "micro-benchmark results (make bench-micro)")
	fs.StringVar(&f.Pinned, "micro-pinned", f.Pinned, "micro-benchmark results, pinned mode (make bench-micro-pinned)")
	fs.StringVar(&f.LongLine, "longline", f.LongLine, "long-line results (spike longline)")
	fs.StringVar(&f.Tiers, "tiers", f.Tiers, "poll-tier sweep results (spike tiers)")
	fs.StringVar(&f.Notify, "notify", f.Notify, "admission → client-knows results (make bench-notify)")
	fs.StringVar(&f.Intake, "intake", f.Intake, "enter direct vs broker and the drain (make bench-intake)")
	fs.StringVar(&f.RedisCost, "redis-cost", f.RedisCost, "Redis instructions per call and memory per user (make bench-redis-cost)")
	fs.StringVar(&f.Adaptive, "adaptive", f.Adaptive, "fixed against adaptive rate while the order API changes (make bench-adaptive)")
	fs.StringVar(&f.Markdown, "md", f.Markdown, "report to write")
	fs.StringVar(&f.Plots, "plots", f.Plots, "directory of the plots")
	_ = fs.Parse(args)
	in, err := sim.LoadInputs(f)
	if err != nil {
		return err
	}
	for _, m := range in.Missing {
		fmt.Fprintf(os.Stderr, "no %s: its section is left out\n", m)
	}
	text, err := sim.WriteReport(in, f)
	if err != nil {
		return err
	}
	return os.WriteFile(f.Markdown, []byte(text), 0o644)
}

// newReport spawns redis-server (or uses redisURL) and starts a report that
// describes the machine.
func newReport(ctx context.Context, redisURL string) (*sim.Env, *sim.Report, error) {
	env, err := sim.NewEnv(redisURL)
	if err != nil {
		return nil, nil, err
	}
	rep := &sim.Report{Machine: sim.DescribeMachine(ctx, env), Started: time.Now().UTC().Format(time.RFC3339)}
	rep.Machine.GOMAXPROCS = runtime.GOMAXPROCS(0)
	return env, rep, nil
}

// saveReport stamps the report finished and writes it to path as JSON.
func saveReport(path string, rep *sim.Report) error {
	rep.Finished = time.Now().UTC().Format(time.RFC3339)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s (%d bytes)\n", path, len(b)+1)
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
