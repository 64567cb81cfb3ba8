// Command bigroom measures one room holding ten million waiting visitors
// (issue 36, "Measure it"): what each waiting visitor costs Redis in
// memory, what an enter behind them, an admission batch and a claim cost
// it in instructions, and how long the last of them waits. `make
// bench-bigroom` runs it; its results go to docs/bench/bigroom-results.json
// and, through `make bench-report`, to BENCHMARKS.md.
//
// The method.
//
//   - The fill. One operator-created room on a fresh redis-server spawned on
//     a free port (the functions' configuration: rate 100/s in 100 ms
//     batches of 10, a capacity that holds the line, instant admission off).
//     Its first visitor, an account, enters through Store.Enter (so that the
//     room's own state, its counter's birth, its per-second mark and its
//     budget's "since", is what an enter writes); the others, -visitors in
//     all, numbered behind it alternately an account ("a:" and a UUID-like
//     JWT subject: httpapi's namespace of the authorizer's users) and an
//     anonymous visitor (a ticket's holder: waitroom.NewVisitorID, "v-" and
//     22 characters), get what enter.lua writes for each (line.lua,
//     place.lua's keepAccount): an account its number under its field in
//     its bucket (redisstore.AccountKey: one of 262,144 hashes, each with
//     its line's 'b', the counter's birth; HSET of a bucket's records,
//     pipelined) and a TTL on every bucket (its latest record's life, as
//     enter sets it), an anonymous visitor nothing but the room's counter
//     ("next") moving past its number. The accounts' records are written
//     first, then the counter moves once: the two phases are measured
//     apart.
//   - The fill's claim checked. On a server of its own, 1,000 users,
//     accounts and anonymous visitors alternately, enter one room through
//     Store.Enter (an anonymous visitor as Unlimited with Anonymous and
//     NewVisitor set and no place: a new visitor) and are put in another as the fill puts
//     them; every key and hash field of the two rooms is compared (those
//     holding times by presence), every key's TTL by presence, and the
//     accounts' buckets as one: every record (bucket, field, number), each
//     bucket's 'b' as its room's birth or not, each bucket's TTL by
//     presence. The output says which are the same and which one side
//     alone writes.
//   - Memory: used_memory, through one connection, before the fill (the
//     room created, its first visitor in line), after the accounts'
//     records, and after the counter moved past the anonymous numbers: per
//     anonymous visitor the last step over them; per account, after DEBUG
//     RELOAD (the snapshot saved and loaded back, which leaves every
//     bucket's listpack at the size a steady line has), the whole line's
//     delta over the accounts. MEMORY USAGE of every account bucket (SCAN
//     MATCH redisstore.AccountPattern) besides, and how many are
//     listpacks.
//   - Instructions. The filled server SAVEs; a redis-server started under
//     `valgrind --tool=callgrind --instr-atstart=no` (bench/internal/callgrind)
//     loads that snapshot (the 10M line is there before callgrind counts
//     anything), active expiry is switched off, instrumentation goes on, and
//     every call goes through one go-redis client of one connection and the
//     Store's own methods (the scripts of the tree, by EVALSHA; the tool
//     knows none of their keys). Each operation: warm-up calls, then
//     `callgrind_control --zero`, the measured calls, `--dump`: the dump's
//     summary over the calls, less serverCron's inclusive instructions
//     (Redis's timer, 10 a second): its share depends on how long the
//     run takes under valgrind, not on the calls (bench/rediscost's
//     figure, read the same way). The operations:
//     enter of a new account and of a new anonymous visitor (NewVisitor and
//     Anonymous, no place) behind the 10M, each caller its own id and IP, the limiter at its
//     defaults ("on") and at zero ("off"); an admission batch
//     (waitroom.RunBatch: SMEMBERS of the rooms and admit.lua) of the
//     default size, each after a pause of 1.2 intervals so that each finds a
//     full budget, after a warm-up as long as a room's admission history
//     (or longer, until the claims below have their numbers): it moves the
//     front past accounts' and anonymous numbers alike and records the
//     batch, popping nobody; and the claims: Store.Position of the holder
//     of a number those batches admitted, which claims its token
//     (claim.lua) and answers READY, limiter on and off: an anonymous
//     visitor with its ticket's place (Anonymous, Place its number,
//     PlaceAt now), and an account (the fill's, at that number) with its
//     signed place, whose record the claim deletes.
//   - The last visitor's wait at -rate admissions a second: the line's
//     length over the rate (computed); and, on the plain server after its
//     SAVE, the room set to that rate and the functions' admitter
//     (waitroom.Admitter: a batch every 80-100% of the admission interval)
//     run for -rate-window: the admissions after its first batch over the
//     time from the first batch to the last, and the wait that measured
//     rate gives the last visitor.
//   - Two figures come from other measures, read when their files exist
//     (else "not measured"): store commands per waiting poll through HTTP
//     (docs/bench/redis-cost-results.json) and function calls per visitor
//     through the page (docs/bench/page-calls-results.json).
//
// The output: a table, the results file (-out), and as the last line one
// JSON object (the headline). Memory: the fill's server holds the line
// (about 140 MB of used_memory at 10M, the accounts' buckets) and then the
// server under callgrind does (a bit more); never both at once.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/waitroom/waitroom/bench/internal/fnstore"
	"github.com/waitroom/waitroom/bench/spike/sim"
)

// params are a run's sizes (flags).
type params struct {
	visitors   int
	calls      int
	warmup     int
	admitCalls int
	rate       float64
	rateWindow time.Duration
	admitWarm  time.Duration
	top        int
}

func main() {
	var p params
	out := flag.String("out", "docs/bench/bigroom-results.json", "results file to write (\"\": none)")
	flag.IntVar(&p.visitors, "visitors", 10_000_000, "visitors waiting in the room (half accounts, half anonymous)")
	flag.IntVar(&p.calls, "calls", 500, "measured calls per operation (enter, claim)")
	flag.IntVar(&p.warmup, "warmup", 100, "unmeasured calls before them")
	flag.IntVar(&p.admitCalls, "admit-calls", 100, "measured admission batches")
	flag.DurationVar(&p.admitWarm, "admit-warmup", 65*time.Second, "admission batches before the measured ones (a room keeps a minute of admission history)")
	flag.Float64Var(&p.rate, "rate", 1000, "admissions a second for the last visitor's wait")
	flag.DurationVar(&p.rateWindow, "rate-window", 10*time.Second, "how long admission runs at -rate on the plain server (0: the wait is computed only)")
	flag.IntVar(&p.top, "top", 0, "print each measured operation's N costliest functions (inclusive instructions per call; 0: none)")
	reread := flag.Bool("reread", false, "measure nothing: read the other measures' figures anew into the -out file's results (they may be written after this tool's run)")
	flag.Parse()
	if *reread {
		if err := rereadOthers(*out); err != nil {
			fmt.Fprintln(os.Stderr, "bigroom:", err)
			os.Exit(1)
		}
		return
	}
	sim.Main("bigroom", p.validate(), func(ctx context.Context) error { return run(ctx, p, *out) })
}

func (p params) validate() error {
	switch {
	case p.visitors < 2 || p.calls < 1 || p.warmup < 0 || p.admitCalls < 1 || p.rate <= 0 || p.rateWindow < 0 || p.admitWarm < 0:
		return fmt.Errorf("-visitors must be at least 2; -calls, -admit-calls and -rate positive; the others not negative")
	case 2*(p.warmup+p.calls) > 1<<16:
		return fmt.Errorf("callers' IPs are 10.<group>.<i>: at most 65,536 per group (-warmup + -calls, twice)")
	}
	return nil
}

func run(ctx context.Context, p params, out string) error {
	t0 := time.Now()
	cfg, err := fnstore.Config()
	if err != nil {
		return err
	}
	res := &sim.BigRoomResults{Machine: sim.DescribeHost(), Valgrind: sim.Version("valgrind", "--version"), When: t0.UTC().Format(time.RFC3339),
		Visitors: p.visitors, Room: fmt.Sprintf("one operator-created room, rate %g/s, %d ms batches (%g users a batch), capacity above the line, instant admission off",
			cfg.AdmitRatePerSec, cfg.AdmitInterval.Milliseconds(), cfg.BatchSize())}
	res.Machine.Redis = sim.Version("redis-server", "--version")
	res.Wait = sim.BigRoomWait{RatePerSec: p.rate, LastPosition: int64(p.visitors), ComputedSeconds: float64(p.visitors) / p.rate}
	dir, err := fillAndMeasure(ctx, p, cfg, res)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := instructions(ctx, p, cfg, dir, res); err != nil {
		return err
	}
	others(res, out)
	res.Seconds = time.Since(t0).Seconds()
	return sim.Publish(table(res), out, res, " ", res.Headline())
}

// others reads the figures of other measures, beside the results file.
func others(res *sim.BigRoomResults, out string) {
	res.PollStoreCommands = pollCommands(filepath.Join(filepath.Dir(outOr(out)), "redis-cost-results.json"))
	res.FunctionCallsPerVisitor = pageCalls(filepath.Join(filepath.Dir(outOr(out)), "page-calls-results.json"))
}

// rereadOthers reads the other measures' figures anew into the results
// at out, whose own figures it leaves as they are.
func rereadOthers(out string) error {
	b, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	var res sim.BigRoomResults
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("%s: %w", out, err)
	}
	others(&res, out)
	fmt.Fprintf(os.Stderr, "store commands per waiting poll through HTTP: %s\nfunction calls per visitor through the page: %s\n", fig(res.PollStoreCommands), fig(res.FunctionCallsPerVisitor))
	return sim.WriteJSON(out, &res, " ")
}

// outOr is the results file, or its default when none is written: the
// other measures' files are read beside it.
func outOr(out string) string {
	if out == "" {
		return "docs/bench/bigroom-results.json"
	}
	return out
}
