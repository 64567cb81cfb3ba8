// Command luafloor measures what a store script's constructs cost
// redis-server, in instructions per EVALSHA (issue 36: "enter ≤ 50k
// instructions"): the floor of a script call (`return 1`, with no key and
// with enter's keys and arguments), and over it a body's 30 closures, ten
// string.format, ten tonumber, a table constructor, one HGET, HMGET or
// HSET; then the least script that can be a new visitor's enter, with and
// without the limiter, and HINCRBY in a script and alone (cases.go).
// `make bench-luafloor` runs it; the table goes into docs/design.md ("What
// a poll costs Redis") between the markers of the block lua-floor, from
// docs/bench/luafloor-results.json (TestDesignShowsTheFloor checks that
// they agree).
//
// The method: a fresh redis-server under `valgrind --tool=callgrind
// --instr-atstart=no` (bench/internal/callgrind), active expiry off,
// instrumentation on; one go-redis connection. Each body is loaded
// (SCRIPT LOAD), called -warmup times unmeasured, then -calls times
// between `callgrind_control --zero` and `--dump`: the dump's
// instructions less serverCron's (Redis's timer), over the calls. The
// counts are callgrind's: two runs agree to about a hundred instructions a
// call (1% of the floor); the table rounds them to tens.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/bench/internal/callgrind"
	"github.com/waitroom/waitroom/bench/spike/sim"
)

// Results are a run's figures (docs/bench/luafloor-results.json).
type Results struct {
	Redis    string   `json:"redis"`
	Valgrind string   `json:"valgrind"`
	Calls    int      `json:"calls"`
	Warmup   int      `json:"warmup"`
	Cases    []Result `json:"cases"`
}

// Result is one case's figure: its instructions over its calls.
type Result struct {
	fcase
	Instructions int64 `json:"instructions"` // all calls', serverCron's left out
}

// PerCall is the case's instructions per EVALSHA.
func (r Result) PerCall(calls int) float64 { return float64(r.Instructions) / float64(calls) }

func main() {
	out := flag.String("out", "docs/bench/luafloor-results.json", "results file to write (\"\": none)")
	doc := flag.String("doc", "docs/design.md", "document whose lua-floor block gets the table (\"\": none)")
	calls := flag.Int("calls", 200, "measured calls per case")
	warmup := flag.Int("warmup", 50, "unmeasured calls before them")
	flag.Parse()
	var invalid error
	if *calls < 1 || *warmup < 0 {
		invalid = fmt.Errorf("-calls must be positive, -warmup not negative")
	}
	sim.Main("luafloor", invalid, func(ctx context.Context) error {
		res, err := measure(ctx, *calls, *warmup)
		if err != nil {
			return err
		}
		fmt.Print(Render(res))
		if *out != "" {
			if err := sim.WriteJSON(*out, res, " "); err != nil {
				return err
			}
			fmt.Fprintln(os.Stderr, "wrote", *out)
		}
		if *doc != "" {
			if err := spliceFile(*doc, res); err != nil {
				return err
			}
			fmt.Fprintln(os.Stderr, "wrote the lua-floor block of", *doc)
		}
		return nil
	})
}

// measure runs every case on a fresh redis-server under callgrind.
func measure(ctx context.Context, calls, warmup int) (*Results, error) {
	dir, err := os.MkdirTemp("", "waitroom-luafloor-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintln(os.Stderr, "starting redis-server under valgrind --tool=callgrind ...")
	cg, err := callgrind.Start(dir, 2*time.Minute)
	if err != nil {
		return nil, err
	}
	defer cg.Stop()
	one := redis.NewClient(&redis.Options{Addr: cg.Addr, PoolSize: 1, MaxActiveConns: 1, MaxRetries: -1,
		ReadTimeout: time.Minute, WriteTimeout: time.Minute, PoolTimeout: time.Minute, ConnMaxIdleTime: -1})
	defer one.Close()
	if err := prepare(ctx, one); err != nil {
		return nil, err
	}
	if err := cg.Instrument(ctx); err != nil {
		return nil, err
	}
	res := &Results{Redis: sim.Version("redis-server", "--version"), Valgrind: sim.Version("valgrind", "--version"), Calls: calls, Warmup: warmup}
	for _, c := range cases() {
		n, err := measureCase(ctx, one, cg, c, calls, warmup)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Key, err)
		}
		res.Cases = append(res.Cases, Result{fcase: c, Instructions: n})
		fmt.Fprintf(os.Stderr, "  %-70s %8.0f instructions per call\n", c.What, float64(n)/float64(calls))
	}
	return res, nil
}

// hashKey is the key the cases' commands use, and their calls' first key.
const hashKey = "wr:{floor}:settings"

// prepare switches active expiry off and writes the hash the commands'
// cases read: its fields, and a value longer than hash-max-listpack-value
// that makes it a hash table, as the room's hash is.
func prepare(ctx context.Context, c *redis.Client) error {
	if err := c.Do(ctx, "DEBUG", "SET-ACTIVE-EXPIRE", "0").Err(); err != nil {
		return fmt.Errorf("DEBUG SET-ACTIVE-EXPIRE 0: %w", err)
	}
	vals := []any{"layout", string(make([]byte, 80)), "hot", roomHot, "front", roomFront, "next", roomNext, "mark", "0"}
	for i := 1; i <= hashFields; i++ {
		vals = append(vals, "f"+strconv.Itoa(i), fmt.Sprintf("17334000000000%02d", i))
	}
	return c.HSet(ctx, hashKey, vals...).Err()
}

// measureCase loads c's body and counts its calls.
func measureCase(ctx context.Context, c *redis.Client, cg *callgrind.Server, fc fcase, calls, warmup int) (int64, error) {
	sha := ""
	if !fc.Plain {
		var err error
		if sha, err = c.ScriptLoad(ctx, fc.Body).Result(); err != nil {
			return 0, err
		}
	}
	keys := make([]string, fc.Keys)
	for i := range keys {
		keys[i] = hashKey
		if i > 0 {
			keys[i] = "wr:{floor}:key" + strconv.Itoa(i) // enter's keys are of this length
		}
	}
	args := make([]any, fc.Args)
	for i := range args {
		args[i] = "arg" + strconv.Itoa(i)
	}
	call := func(int) error { return c.EvalSha(ctx, sha, keys, args...).Err() }
	start, made := time.Now().UnixMicro(), 0
	if fc.Visitor != "" {
		call = func(int) error {
			made++
			n, err := c.EvalSha(ctx, sha, keys, visitorArgs(fc.Visitor, start, made)...).Result()
			if err == nil && n == int64(0) {
				err = fmt.Errorf("call %d took the whole enter's way, not the one measured", made)
			}
			return err
		}
	}
	if fc.Plain {
		cmd := []any{}
		for _, f := range strings.Fields(fc.Body) {
			cmd = append(cmd, f)
		}
		call = func(int) error { return c.Do(ctx, cmd...).Err() }
	}
	for i := range warmup {
		if err := call(i); err != nil {
			return 0, err
		}
	}
	prof, err := cg.Count(ctx, calls, call)
	if err != nil {
		return 0, err
	}
	return prof.Counted(), nil
}
