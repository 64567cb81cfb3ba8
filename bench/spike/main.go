// Command spike is Waitroom's Black Friday spike simulator: simulated users
// against the real handlers and a real redis-server, with a simulated order
// API (a pool of connections). See BENCHMARKS.md.
//
//	spike run    [flags]   one or more strategies, a table and one JSON line per strategy
//	spike quick  [flags]   the default strategy, small; the last line is its JSON summary
//	spike full   [flags]   everything BENCHMARKS.md shows, into a results JSON
//	spike longline [flags] the default strategy on a long line (minutes of waiting), into its own JSON
//	spike tiers  [flags]   the poll-tier sweep: candidate POLL_TIERS tables on a ~5-minute line
//	spike adaptive [flags] fixed against adaptive rate while the order API changes, into its own JSON
//	spike attack [flags]   token holders steering the adaptive rate (issue 32), into its own JSON
//	spike report [flags]   BENCHMARKS.md and plots from the results JSON files
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/waitroom/waitroom/bench/spike/sim"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "run":
		err = cmdRun(ctx, os.Args[2:], false)
	case "quick":
		err = cmdRun(ctx, os.Args[2:], true)
	case "full":
		err = cmdFull(ctx, os.Args[2:])
	case "longline":
		err = cmdLongLine(ctx, os.Args[2:])
	case "tiers":
		err = cmdTiers(ctx, os.Args[2:])
	case "adaptive":
		err = cmdAdaptive(ctx, os.Args[2:])
	case "attack":
		err = cmdAttack(ctx, os.Args[2:])
	case "report":
		err = cmdReport(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "spike:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: spike run|quick|full|longline|tiers|adaptive|attack|report [flags]  (spike <cmd> -h for flags)")
	os.Exit(2)
}

// scenarioFlags binds the scenario's knobs to fs.
func scenarioFlags(fs *flag.FlagSet, sc *sim.Scenario, service *string) {
	fs.IntVar(&sc.Users, "users", sc.Users, "simulated users")
	fs.DurationVar(&sc.Spike, "spike", sc.Spike, "all users arrive within this time")
	fs.StringVar(&sc.Curve, "curve", sc.Curve, "arrival curve: flat, midnight (most at once, decaying), ramp")
	fs.IntVar(&sc.Connections, "connections", sc.Connections, "order API pool size")
	fs.StringVar(service, "service", sc.Service.String(), "order service time: uniform:MEAN:SPREAD, exp:MEAN, lognormal:MEAN:SIGMA, const:MEAN")
	fs.Float64Var(&sc.Margin, "margin", sc.Margin, "safety margin: rate = connections × 1s/mean service time × margin")
	fs.Float64Var(&sc.Abandon, "abandon", sc.Abandon, "share of users who never order once READY (their tokens expire)")
	fs.DurationVar(&sc.Think, "think", sc.Think, "READY → order")
	fs.StringVar(&sc.PollTiers, "poll-tiers", sc.PollTiers, "POLL_TIERS, minWaitSeconds:pollMs,... (default: waitroom.DefaultPollTiers)")
	fs.StringVar(&sc.Notify, "notify", sc.Notify, "poll (as pollAfterMs says) or push (users told at the admission instant)")
	fs.BoolVar(&sc.TierOnly, "tier-only", sc.TierOnly, "what-if: clients sleep the plain tier of estimatedWaitSeconds, ignoring a shorter pollAfterMs (the server before poll-at-turn; give -poll-tiers "+sim.PreviousPollTiers+" for the table of then)")
	fs.DurationVar(&sc.OrderTimeout, "order-timeout", sc.OrderTimeout, "ORDER_TIMEOUT_MS, also the direct clients' timeout")
	fs.DurationVar(&sc.RetryMin, "retry-min", sc.RetryMin, "client back-off after a 429 or failed order, from")
	fs.DurationVar(&sc.RetryMax, "retry-max", sc.RetryMax, "... to")
	fs.IntVar(&sc.MaxAttempts, "max-attempts", sc.MaxAttempts, "no waiting room: orders tried before giving up")
	fs.Float64Var(&sc.LimiterBurst, "limiter-burst", sc.LimiterBurst, "rate limiter bucket, in seconds of rate")
	fs.Uint64Var(&sc.Seed, "seed", sc.Seed, "random seed")
}

func finishScenario(sc *sim.Scenario, service string) error {
	st, err := sim.ParseServiceTime(service)
	if err != nil {
		return err
	}
	sc.Service, sc.ServiceSpec = st, st.String()
	if sc.Notify != "poll" && sc.Notify != "push" {
		return fmt.Errorf("-notify must be poll or push")
	}
	if sc.Users < 1 || sc.Margin <= 0 || sc.Connections < 1 {
		return fmt.Errorf("users, margin and connections must be positive")
	}
	return nil
}

// QuickScenario is make bench-quick: the default strategy, small enough for
// well under a minute (~17 s of admission at 70/s).
func QuickScenario() sim.Scenario {
	sc := sim.DefaultScenario()
	sc.Users, sc.Spike = 1200, 4*time.Second
	return sc
}

func cmdRun(ctx context.Context, args []string, quick bool) error {
	name := "run"
	sc := sim.DefaultScenario()
	strategies := "all"
	if quick {
		name, sc, strategies = "quick", QuickScenario(), sim.BatchedJitter.Name
	}
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	var service string
	scenarioFlags(fs, &sc, &service)
	fs.StringVar(&strategies, "strategies", strategies, "comma-separated, or all: "+strategyNames())
	redisURL := fs.String("redis", os.Getenv("REDIS_URL"), "use this Redis (FLUSHALL!) instead of spawning redis-server")
	out := fs.String("out", "", "also write the results as JSON here")
	_ = fs.Parse(args)
	if err := finishScenario(&sc, service); err != nil {
		return err
	}
	var list []sim.Strategy
	if strategies == "all" {
		list = sim.Strategies
	} else {
		for _, n := range strings.Split(strategies, ",") {
			s, err := sim.StrategyByName(strings.TrimSpace(n))
			if err != nil {
				return err
			}
			list = append(list, s)
		}
	}
	env, err := sim.NewEnv(*redisURL)
	if err != nil {
		return err
	}
	defer env.Close()
	var results []*sim.Result
	for _, st := range list {
		fmt.Fprintf(os.Stderr, "running %s: %d users in %s (%s), rate %.1f/s ...\n", st.Name, sc.Users, sc.Spike, sc.Curve, sc.Rate())
		res, err := sim.Run(ctx, env, sc, st)
		if err != nil {
			return err
		}
		results = append(results, res)
	}
	fmt.Print(sim.TextTable(results))
	if *out != "" {
		if err := writeJSON(*out, results); err != nil {
			return err
		}
	}
	for _, res := range results {
		line, _ := json.Marshal(sim.Summarize(res))
		fmt.Println(string(line))
	}
	return nil
}

func strategyNames() string {
	var n []string
	for _, s := range sim.Strategies {
		n = append(n, s.Name)
	}
	return strings.Join(n, ", ")
}

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
