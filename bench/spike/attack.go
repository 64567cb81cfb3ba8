package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/waitroom/waitroom/bench/spike/sim"
)

// attackResults is what `spike attack` writes.
type attackResults struct {
	Machine  sim.Machine          `json:"machine"`
	Started  string               `json:"started"`
	Finished string               `json:"finished"`
	Settings sim.AdaptiveSettings `json:"settings"`
	Duration string               `json:"duration"`
	Runs     []sim.AttackFigures  `json:"runs"`
}

// cmdAttack plays issue 32's attacks on the adaptive room (sim.AttackScenarios):
// token holders failing, aborting or sending refused orders, against the same
// run without them; a line each on stderr, and a results JSON.
func cmdAttack(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("attack", flag.ExitOnError)
	out := fs.String("out", "docs/bench/attack-results.json", "results JSON")
	scenarios := fs.String("scenarios", "all", "comma-separated keys, or all: none, fail1, fail5, fail20, abort20, refuse100")
	duration := fs.Duration("duration", time.Minute, "each run's length; the attack starts at a third of it, the figures from 10 s later")
	redisURL := fs.String("redis", os.Getenv("REDIS_URL"), "use this Redis (FLUSHALL!) instead of spawning redis-server")
	_ = fs.Parse(args)
	if *duration < 20*time.Second {
		return fmt.Errorf("-duration must be at least 20s")
	}
	env, err := sim.NewEnv(*redisURL)
	if err != nil {
		return err
	}
	defer env.Close()
	if err := sim.CheckAdaptive(ctx, env); err != nil {
		return fmt.Errorf("the adaptive room cannot run on this build: %w", err)
	}
	res := &attackResults{Machine: sim.DescribeMachine(ctx, env), Started: time.Now().UTC().Format(time.RFC3339),
		Settings: sim.AdaptiveRoom, Duration: duration.String()}
	for _, as := range sim.AttackScenarios(*duration) {
		if *scenarios != "all" && !contains(*scenarios, as.Key) {
			continue
		}
		run, err := sim.RunAdaptive(ctx, env, as, sim.AdaptiveOn)
		if err != nil {
			return err
		}
		f := sim.Attacked(run, *duration/3+10*time.Second)
		res.Runs = append(res.Runs, f)
		fmt.Fprintf(os.Stderr, "attack %-9s %-48s admitted %5.1f/s (fewest %3d in a second), rate %5.1f/s; counted %d calls, %d failed; attack orders %d\n",
			f.Scenario, f.Name, f.AdmittedPerS, f.FewestInASec, f.RatePerSec, f.CountedCalls, f.CountedFailed, f.AttackOrders)
	}
	res.Finished = time.Now().UTC().Format(time.RFC3339)
	return writeJSON(*out, res)
}
