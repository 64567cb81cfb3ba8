// Command rediscost counts what each store call costs Redis, in
// instructions, and what a waiting user and a limited caller cost it in
// memory (issue 20): every visitor's poll runs one script in the one shard
// that holds the room, so the script's cost is the room's ceiling and, on
// ElastiCache Serverless, the bill. `make bench-redis-cost` runs it; its
// results go to docs/bench/redis-cost-results.json and, through
// `make bench-report`, to BENCHMARKS.md.
//
// The method. A pooled client fills a plain redis-server through
// redisstore.Store: one operator-created room (OPEN_ROOMS=false, as in
// AWS) with the configuration's defaults (rate 100/s, 100 ms batches) and a
// capacity that holds the line; at the head of its line the gate's users,
// admitted in one batch with the room's rate raised for it and set back
// after; then the admission's users; then -waiting users (100,000); and the
// keyspace's hash tables grown to a size that the run's new keys never
// double (a doubling table is moved partly by the calls and partly by the
// timer, in shares that depend on timing). The fill enters 2,000 users in
// each second of the clock, so that the line holds as many per-second
// marks in every run (admission scans them). SAVE; then
// redis-server starts on that snapshot under `valgrind --tool=callgrind`
// (--instr-atstart=no while it loads), active expiry is switched off
// (DEBUG SET-ACTIVE-EXPIRE 0), instrumentation goes on, and every call from
// there on goes through one go-redis client of exactly one connection,
// through the Store's own methods: Position, Enter, BeginOrder, CommitOrder,
// AdmitBatch (the tool knows none of the scripts' keys or text, so it
// measures whatever the scripts of the tree are).
//
// Each operation is measured twice, with the store's limits at the
// defaults (waitroom.DefaultClientRatePerSec, DefaultClientBurst,
// DefaultIPRatePerSec, DefaultIPBurst: "on") and at zero ("off"); each
// call passes a caller (waitroom.Caller) with an id and an IP of its
// own. An operation runs -warmup calls (200) unmeasured, then -calls (2,000)
// measured, in windows of -chunk calls (50): the window's preps, then
// `callgrind_control --zero`, the calls, `callgrind_control --dump`; the
// dumps' summaries are summed (calls without preps: one window). Each
// measured call is the steady, allowed path of a visitor polling as told:
// its limiter buckets (GCRAs, which live one interval past a call: 200 ms
// for a caller at the defaults) are gone since its last poll, so it takes
// them afresh; an unmeasured prep of an unlimited caller checks the state the
// call meets (in line, READY); every answer is checked, and a refusal
// stops the run.
//
//   - position: 2,000 distinct waiting users spread evenly over the line.
//   - enter (already in line): the same users entering again.
//   - enter (new user): a fresh user each call, whom an unmeasured poll
//     finds NOT_IN_QUEUE first.
//   - gate check (BeginOrder): admitted users holding entry tokens, with an
//     Idempotency-Key, each after a poll that found it READY; gate commit
//     (CommitOrder): the same leases, each consumed once. The commit takes
//     no limiter: its "on" and "off" are the same call twice.
//   - admit batch: one AdmitBatch (SMEMBERS of the rooms and the room's
//     admit script) of the one room with users waiting, at the default
//     rate and interval, right after the gate: -admit-calls (100) batches
//     counted after 542 of them (65 s at least: a room keeps a minute of
//     admission history), each after a pause of 1.2 intervals so that each
//     finds a full budget and admits one batch (10 users), whatever the
//     machine's speed; no limiter.
//   - plain ZRANK on a sorted set of -waiting members and plain GET of a
//     short string (a key of its own each call), on keys of this tool's
//     own, for scale.
//
// Per call = the dumps' instructions (event Ir: everything redis-server
// executed, event loop, network and parsing included) less serverCron's,
// divided by the calls. serverCron is Redis's timer (10 a second): its
// share depends on how long the run takes under valgrind, not on the
// calls; it is kept in the results as "timer".
//
// Memory: a plain redis-server (no valgrind), the same room filled with
// -memory-users (1,000,000) users through Store.Enter; used_memory before
// and after, over the users (the same clients having filled another room
// first, so that both reads find their buffers alike); and MEMORY USAGE of
// the line, the sorted set of that many members. Then -memory-callers (50,000) of them poll
// once with the limiter on, each a caller of its own (id and IP), active
// expiry off: the used_memory delta over the callers is one live caller's
// two buckets.
//
// Polls through HTTP (httppoll.go): on a plain redis-server, -poll-ahead
// (1,000) users in one room's line, then -poll-visitors (200) visitors,
// half accounts (a JWT sub) and half anonymous (the ticket their enter
// gave), enter it through httpapi's enter handler; nobody admits (the
// users ahead keep the pollers out of the next batch, whose polls go to
// the store by design); each then polls -poll-rounds (12) times through the
// position handler as the page does, sending back the ticket and the place
// its answers gave it; INFO commandstats over the polls (commands inside
// scripts included) is the store commands per waiting poll; then the same
// polls again, each round spread over -poll-round (1 s): a process reads
// a room's view at most every 100 ms whatever its polls, so its reads are
// a larger share of sparser polls.
//
// The output: a table, the results file (-out), and as the last line one
// JSON object: {"positionInstructions":…,"enterNewInstructions":…,
// "limiterShare":…,"bytesPerWaitingUser":…} (position and enter of a new
// user with the limiter on; limiterShare = (position on − off) / on).
//
// While changing a script: -only 'enterNew/on|position/on' measures just
// those operations (about a minute with -calls 500) and prints them,
// writing nothing; -profiles DIR adds each one's costliest functions,
// named when the redis-server first on the PATH was built with symbols.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/bench/internal/callgrind"
	"github.com/waitroom/waitroom/bench/internal/fnstore"
	"github.com/waitroom/waitroom/bench/spike/sim"
)

func main() {
	var p params
	out := flag.String("out", "docs/bench/redis-cost-results.json", "results file to write (\"\": none)")
	flag.IntVar(&p.waiting, "waiting", 100_000, "users waiting in the room's line")
	flag.IntVar(&p.calls, "calls", 2_000, "measured calls per operation")
	flag.IntVar(&p.warmup, "warmup", 200, "unmeasured calls before them")
	flag.IntVar(&p.chunk, "chunk", 50, "measured calls per zero/dump window (a caller's two calls are at most this many calls apart: keep it well under what its buckets live)")
	flag.IntVar(&p.admitCalls, "admit-calls", 100, "measured admission batches")
	flag.IntVar(&p.memoryUsers, "memory-users", 1_000_000, "users waiting for the memory figure (plain redis-server)")
	flag.IntVar(&p.memoryCallers, "memory-callers", 50_000, "callers with live buckets for the limiter's memory figure (at most 65,536)")
	flag.IntVar(&p.fillClients, "fill-clients", 16, "connections that fill the line (not measured)")
	flag.IntVar(&p.pollVisitors, "poll-visitors", 200, "waiting visitors polling through the position handler (half accounts, half anonymous)")
	flag.IntVar(&p.pollRounds, "poll-rounds", 12, "polls of each of them")
	flag.DurationVar(&p.pollRound, "poll-round", time.Second, "then the same polls again, each round spread over this (0: not)")
	flag.IntVar(&p.pollAhead, "poll-ahead", 1_000, "users in line ahead of them (out of the next batch, whose polls go to the store: their turn comes)")
	flag.StringVar(&p.profiles, "profiles", "", "write each operation's costliest functions (callgrind, per call) into this directory")
	only := flag.String("only", "", "measure only the operations whose key/limiter matches this regexp (enterNew/on, position/.*: the keys of the results' ops), and not memory: a quick look while changing a script, whose results are printed, never written")
	flag.Parse()
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			fmt.Fprintln(os.Stderr, "rediscost: -only:", err)
			os.Exit(2)
		}
		p.only, *out = re, ""
	}
	sim.Main("rediscost", p.validate(), func(ctx context.Context) error { return run(ctx, p, *out) })
}

func (p params) validate() error {
	n := p.warmup + p.calls
	switch {
	case p.calls < 1 || p.warmup < 0 || p.chunk < 1 || p.admitCalls < 1 || p.fillClients < 1:
		return fmt.Errorf("-calls, -chunk, -admit-calls and -fill-clients must be positive, -warmup not negative")
	case p.waiting < n:
		return fmt.Errorf("-waiting (%d) must be at least -warmup + -calls (%d): each call is a user of its own", p.waiting, n)
	case 2*n > 1<<16 || p.memoryCallers > 1<<16:
		return fmt.Errorf("callers' IPs are 10.<group>.<i>: at most 65,536 per group")
	case p.memoryUsers < p.memoryCallers:
		return fmt.Errorf("-memory-users must be at least -memory-callers")
	}
	return nil
}

func run(ctx context.Context, p params, out string) error {
	t0 := time.Now()
	res := &sim.RedisCostResults{Machine: sim.DescribeHost(), Valgrind: sim.Version("valgrind", "--version"), Started: t0.UTC().Format(time.RFC3339)}
	res.Machine.Redis = sim.Version("redis-server", "--version")
	// -only 'httpPoll' measures the polls through HTTP alone.
	if p.only == nil || !p.only.MatchString("httpPoll/none") {
		if err := instructions(ctx, p, res); err != nil {
			return err
		}
	}
	var err error
	if p.wants("httpPoll", "") {
		fmt.Fprintf(os.Stderr, "polls through HTTP: %d waiting visitors, %d polls each ...\n", p.pollVisitors, p.pollRounds)
		if res.HTTPPoll, err = measureHTTPPoll(ctx, p); err != nil {
			return fmt.Errorf("polls through HTTP: %w", err)
		}
		h := res.HTTPPoll
		fmt.Fprintf(os.Stderr, "  %.3f store commands per waiting poll (%d over %d polls in %.2f s: %v)\n", h.CommandsPerPoll, h.Commands, h.Polls, h.Seconds, h.ByCommand)
		if h.Paced != nil {
			fmt.Fprintf(os.Stderr, "  paced, %.0f polls/s: %.3f (%d over %d polls in %.2f s: %v)\n", h.Paced.PollsPerSec, h.Paced.CommandsPerPoll, h.Paced.Commands, h.Paced.Polls, h.Paced.Seconds, h.Paced.ByCommand)
		}
	}
	if p.only != nil {
		fmt.Print(table(res))
		return nil
	}
	fmt.Fprintf(os.Stderr, "memory: %d users through Store.Enter on a plain redis-server ...\n", p.memoryUsers)
	mem, err := measureMemory(ctx, p)
	if err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	res.Memory = mem
	res.Seconds = time.Since(t0).Seconds()
	head, err := res.Headline()
	if err != nil {
		return err
	}
	return sim.Publish(table(res), out, res, "", head)
}

// instructions is the callgrind part of the run (see the doc comment).
func instructions(ctx context.Context, p params, res *sim.RedisCostResults) error {
	cfg, err := fnstore.Config()
	if err != nil {
		return err
	}
	b := &bench{p: p, cfg: cfg}
	fmt.Fprintf(os.Stderr, "filling a plain redis-server: %d gate users, %d to admit, %d waiting ...\n", 2*(p.warmup+p.calls), b.admitUsers(), p.waiting)
	dir, tokens, err := b.fill(ctx)
	if err != nil {
		return fmt.Errorf("fill: %w", err)
	}
	defer os.RemoveAll(dir)
	fmt.Fprintln(os.Stderr, "starting redis-server under valgrind --tool=callgrind on its snapshot ...")
	if b.cg, err = callgrind.Start(dir, time.Minute); err != nil {
		return err
	}
	defer b.cg.Stop()
	b.one = redis.NewClient(&redis.Options{Addr: b.cg.Addr, PoolSize: 1, MaxActiveConns: 1, MaxRetries: -1,
		ReadTimeout: time.Minute, WriteTimeout: time.Minute, PoolTimeout: time.Minute, ConnMaxIdleTime: -1})
	defer b.one.Close()
	b.st = fnstore.NewStores(b.one, cfg)
	// Active expiry off: a bucket then expires only when touched, which
	// measure detects; and no expiry cycle runs among the counted calls.
	if err := b.one.Do(ctx, "DEBUG", "SET-ACTIVE-EXPIRE", "0").Err(); err != nil {
		return fmt.Errorf("DEBUG SET-ACTIVE-EXPIRE 0: %w", err)
	}
	if err := waitRehashed(ctx, b.one); err != nil {
		return err
	}
	if err := b.cg.Instrument(ctx); err != nil {
		return err
	}
	if n, err := sim.InfoField(ctx, b.one, "clients", "connected_clients"); err != nil || n != 1 {
		return fmt.Errorf("want exactly one client connected while measuring, found %d (%v)", n, err)
	}
	res.Method = b.method()
	if hz, err := b.one.ConfigGet(ctx, "hz").Result(); err == nil {
		res.Method.Hz, _ = strconv.Atoi(hz["hz"])
	}
	if res.Method.IdlePerSec, err = idle(ctx, b.cg); err != nil {
		return err
	}
	profiles, err := b.measureAll(ctx, tokens, res)
	if err != nil {
		return err
	}
	if p.only == nil {
		res.Functions = functions(profiles["position/on"], profiles["position/off"], p.calls)
	}
	return nil
}

// measureAll measures every operation into res.Ops, in this order: the
// gate first (its users' tokens live ENTRY_TOKEN_TTL_SECONDS from the
// fill), the admission batches (before new users' enters add per-second
// marks to the line at the machine's pace), the line's operations, the
// plain commands. It returns the profiles by "key/limiter".
func (b *bench) measureAll(ctx context.Context, tokens map[string]string, res *sim.RedisCostResults) (map[string]*callgrind.Profile, error) {
	gateOn, gateOff := b.gateOps("on", tokens), b.gateOps("off", tokens)
	gate := []op{gateOn[0], gateOff[0], gateOn[1], gateOff[1]}
	var line []op
	for _, limiter := range []string{"on", "off"} {
		line = append(line, b.lineOps(limiter)...)
	}
	profiles := map[string]*callgrind.Profile{}
	keep := func(r sim.RedisCostOp, prof *callgrind.Profile, t time.Time) error {
		fmt.Fprintf(os.Stderr, "  %-34s limiter %-3s %10.0f instructions per call (%.1f s)\n", r.Name, or(r.Limiter, "-"), r.PerCall(), time.Since(t).Seconds())
		res.Ops = append(res.Ops, r)
		profiles[r.Key+"/"+r.Limiter] = prof
		if b.p.profiles == "" {
			return nil
		}
		return writeProfile(filepath.Join(b.p.profiles, r.Key+"-"+or(r.Limiter, "none")+".txt"), prof, r.Calls)
	}
	run := func(ops []op) error {
		for _, o := range ops {
			if !b.p.wants(o.key, o.limiter) {
				continue
			}
			t := time.Now()
			r, prof, err := b.measure(ctx, o)
			if err == nil {
				err = keep(r, prof, t)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	if err := run(gate); err != nil {
		return nil, err
	}
	var err error
	if b.p.wants("admitBatch", "") {
		t := time.Now()
		var r sim.RedisCostOp
		var prof *callgrind.Profile
		if r, prof, err = b.admitBatch(ctx); err == nil {
			err = keep(r, prof, t)
		}
	}
	if err == nil {
		err = run(append(line, b.scaleOps()...))
	}
	return profiles, err
}

// idle counts one second of the server doing nothing but its timer.
func idle(ctx context.Context, cg *callgrind.Server) (float64, error) {
	if err := cg.Zero(ctx); err != nil {
		return 0, err
	}
	t := time.Now()
	time.Sleep(time.Second)
	prof, err := cg.Dump(ctx)
	if err != nil {
		return 0, err
	}
	return float64(prof.Counted()) / time.Since(t).Seconds(), nil
}

// method is the run's parameters as the results file records them.
func (b *bench) method() sim.RedisCostMethod {
	p, cfg := b.p, b.cfg
	return sim.RedisCostMethod{Waiting: p.waiting, Calls: p.calls, Warmup: p.warmup, Chunk: p.chunk, AdmitCalls: p.admitCalls,
		AdmitSleepMs: float64(fnstore.AdmitPause(cfg)) / float64(time.Millisecond), AdmitWarmupS: admitWarmup.Seconds(), AdmitWarmups: b.admitWarmups(), FillPerSec: paceChunk, FillSeconds: b.fillSeconds, Limits: cfg.Trust.Limits,
		Room: fmt.Sprintf("one operator-created room, rate %g/s, %d ms batches (%g users a batch), entry tokens %d s", cfg.AdmitRatePerSec,
			cfg.AdmitInterval.Milliseconds(), cfg.BatchSize(), int(cfg.EntryTokenTTL.Seconds())),
		Config: "envconfig.Load with the functions' defaults, OPEN_ROOMS=false among them, and INSTANT_ADMIT=false (the fills build lines)",
		Text: "the line filled on a plain redis-server through redisstore.Store, its snapshot loaded by redis-server under valgrind --tool=callgrind; " +
			"per operation, warm-up calls, then the measured calls in windows " +
			"(preps, callgrind_control --zero, calls, callgrind_control --dump) through one go-redis connection and redisstore.Store; " +
			"instructions (Ir) of the dumps less serverCron's, over the calls",
	}
}
