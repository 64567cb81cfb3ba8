package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/bench/spike/sim"
)

// cmdTiers is the poll-tier sweep (issue 9): the default strategy on a
// ~5-minute line once per candidate POLL_TIERS table, each run on its own
// redis-server, -parallel at a time.
func cmdTiers(ctx context.Context, args []string) error {
	sc := sim.TierSweepScenario()
	fs := flag.NewFlagSet("tiers", flag.ExitOnError)
	out := fs.String("out", "docs/bench/tiers-results.json", "results JSON")
	candidates := fs.String("candidates", strings.Join(sim.TierCandidates, ";"), "POLL_TIERS tables to try, separated by ;")
	parallel := fs.Int("parallel", 4, "runs at a time (each with its own redis-server); the runs are light, mostly sleeping users")
	var service string
	fs.IntVar(&sc.Users, "users", sc.Users, "simulated users")
	fs.DurationVar(&sc.Spike, "spike", sc.Spike, "all users arrive within this time")
	fs.IntVar(&sc.Connections, "connections", sc.Connections, "order API pool size")
	fs.StringVar(&service, "service", sc.ServiceSpec, "order service time (see spike run -h)")
	fs.Uint64Var(&sc.Seed, "seed", sc.Seed, "random seed")
	_ = fs.Parse(args)
	if err := finishScenario(&sc, service); err != nil {
		return err
	}
	tables := strings.Split(*candidates, ";")
	for _, t := range tables {
		if _, err := waitroom.ParsePollTiers(t); err != nil {
			return fmt.Errorf("-candidates: %w", err)
		}
	}
	env, rep, err := newReport(ctx, "")
	if err != nil {
		return err
	}
	env.Close() // the machine is described; each run spawns its own server
	fmt.Fprintf(os.Stderr, "tier sweep: %d tables, %d users in %s at %.1f/s (~%.0f s of admission), %d at a time ...\n",
		len(tables), sc.Users, sc.Spike, sc.Rate(), float64(sc.Users)/sc.Rate(), *parallel)
	runs, err := sweep(ctx, sc, tables, max(1, *parallel))
	if err != nil {
		return err
	}
	rep.Runs, rep.Parallel = runs, max(1, *parallel)
	return saveReport(*out, rep)
}

// sweep runs one scenario per table, n at a time, in the tables' order.
func sweep(ctx context.Context, sc sim.Scenario, tables []string, n int) ([]*sim.Result, error) {
	runs := make([]*sim.Result, len(tables))
	errs := make([]error, len(tables))
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i, t := range tables {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			s := sc
			s.PollTiers = t
			runs[i], errs[i] = runOwn(ctx, s)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return runs, nil
}

// runOwn runs the default strategy on a redis-server of its own.
func runOwn(ctx context.Context, sc sim.Scenario) (*sim.Result, error) {
	env, err := sim.NewEnv("")
	if err != nil {
		return nil, err
	}
	defer env.Close()
	res, err := sim.Run(ctx, env, sc, sim.BatchedJitter)
	if err != nil {
		return nil, err
	}
	res.Group = "tiers"
	res.DropTimelines(false, false)
	long, n := res.RequestsForWait(sim.LongWaitFrom)
	fmt.Fprintf(os.Stderr, "POLL_TIERS=%-26s requests/visitor %.2f (%.2f for the %d who waited ≥ %d s), polls/user %.2f, READY learned p95 %.0f ms (max %.0f), downstream p95 %.0f ms, longest wait %.0f s (%.0f s)\n",
		sc.PollTiers, res.RequestsPerVisitor, long, n, sim.LongWaitFrom, res.PollsPerUser, res.ReadyLearnP95Ms, res.ReadyLearnMaxMs, res.OrderP95Ms, res.MaxWaitSeconds, res.Seconds)
	return res, nil
}
