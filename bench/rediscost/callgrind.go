package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/bench/spike/sim"
)

// timerFunc is Redis's timer event: time-driven (hz times a second), not
// call-driven, so its cost is left out of every figure (see the doc comment).
const timerFunc = "serverCron"

// profile is one callgrind dump, or the sum of several: instructions
// executed (event Ir) in all, and per function.
type profile struct {
	Total int64            // the dump's summary (every instruction counted)
	Funcs map[string]*cost // by function name (callgrind's, "0x…" for unnamed ones)
}

// cost is one function's share of a profile.
type cost struct {
	Object    string // the object file holding it (binary, libc, …)
	Self      int64  // instructions in the function itself
	Inclusive int64  // itself and everything it called (direct recursion counted once)
	Calls     int64  // times it was called
}

// Timer is the instructions of Redis's timer (serverCron and all it calls).
func (p *profile) Timer() int64 {
	if c := p.Funcs[timerFunc]; c != nil {
		return c.Inclusive
	}
	return 0
}

// Counted is what the figures count: everything but the timer.
func (p *profile) Counted() int64 { return p.Total - p.Timer() }

// add sums q into p: the measured calls of one operation may span dumps.
func (p *profile) add(q *profile) {
	if p.Funcs == nil {
		p.Funcs = map[string]*cost{}
	}
	p.Total += q.Total
	for name, c := range q.Funcs {
		s := p.Funcs[name]
		if s == nil {
			s = &cost{Object: c.Object}
			p.Funcs[name] = s
		}
		s.Self += c.Self
		s.Inclusive += c.Inclusive
		s.Calls += c.Calls
	}
}

// top is the n functions of highest inclusive cost, or of highest self
// cost with bySelf, costliest first (ties by name, for stable output).
func (p *profile) top(n int, bySelf bool) []string {
	names := make([]string, 0, len(p.Funcs))
	for name := range p.Funcs {
		names = append(names, name)
	}
	key := func(name string) int64 {
		if bySelf {
			return p.Funcs[name].Self
		}
		return p.Funcs[name].Inclusive
	}
	sort.Slice(names, func(i, j int) bool {
		if a, b := key(names[i]), key(names[j]); a != b {
			return a > b
		}
		return names[i] < names[j]
	})
	return names[:min(n, len(names))]
}

// parseDump reads a callgrind output file (format version 1, as
// valgrind 3.x writes it): the summary line, and per function its self
// cost (the cost lines under fn=) and inclusive cost (self plus the
// inclusive cost of every call it made: the line after each calls=).
// Only the event Ir is read. Names may be compressed: "fn=(12) name" the
// first time, "fn=(12)" after; cfn shares fn's numbers, cob ob's.
func parseDump(r io.Reader) (*profile, error) {
	p := &profile{Funcs: map[string]*cost{}}
	names, objects := map[string]string{}, map[string]string{}
	ir, positions := 0, 1
	var fn, cfn, ob, cob string
	var callCount int64
	inCall, haveSummary := false, false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 0; sc.Scan(); line++ {
		t := sc.Text()
		switch {
		case t == "" || t[0] == '#':
		case strings.HasPrefix(t, "events:"):
			ir = indexOf(strings.Fields(t[len("events:"):]), "Ir")
			if ir < 0 {
				return nil, fmt.Errorf("line %d: no Ir event in %q", line+1, t)
			}
		case strings.HasPrefix(t, "positions:"):
			positions = len(strings.Fields(t[len("positions:"):]))
		case strings.HasPrefix(t, "summary:"):
			v, err := nth(strings.Fields(t[len("summary:"):]), ir)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", line+1, err)
			}
			p.Total, haveSummary = v, true
		case strings.HasPrefix(t, "ob="):
			ob = resolve(objects, t[3:])
		case strings.HasPrefix(t, "cob="):
			cob = resolve(objects, t[4:])
		case strings.HasPrefix(t, "fn="):
			fn, cob = resolve(names, t[3:]), ""
			p.fn(fn, ob).Object = ob // a callee seen first keeps its caller's object until here
		case strings.HasPrefix(t, "cfn="):
			cfn = resolve(names, t[4:])
		case strings.HasPrefix(t, "calls="):
			f := strings.Fields(t[len("calls="):])
			if len(f) == 0 {
				return nil, fmt.Errorf("line %d: %q", line+1, t)
			}
			n, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", line+1, err)
			}
			callCount, inCall = n, true
		case isCostLine(t):
			v, err := nth(strings.Fields(t)[min(positions, len(strings.Fields(t))):], ir)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", line+1, err)
			}
			if fn == "" {
				return nil, fmt.Errorf("line %d: a cost before any fn=", line+1)
			}
			if !inCall {
				p.Funcs[fn].Self += v
				p.Funcs[fn].Inclusive += v
				continue
			}
			callee := p.fn(cfn, or(cob, ob))
			callee.Calls += callCount
			if cfn != fn { // a direct recursion's cost is already the caller's own
				p.Funcs[fn].Inclusive += v
			}
			inCall, cob = false, ""
		default: // fl=, fi=, fe=, cfi=, jump=, jcnd=, totals:, desc:, …
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !haveSummary {
		return nil, fmt.Errorf("no summary line: not a complete callgrind dump")
	}
	return p, nil
}

// fn returns the function's entry, made on first sight.
func (p *profile) fn(name, object string) *cost {
	c := p.Funcs[name]
	if c == nil {
		c = &cost{Object: object}
		p.Funcs[name] = c
	}
	return c
}

// resolve reads "(id) name" (defining id), "(id)" (using it) or a plain name.
func resolve(table map[string]string, v string) string {
	if !strings.HasPrefix(v, "(") {
		return v
	}
	end := strings.IndexByte(v, ')')
	if end < 0 {
		return v
	}
	id, name := v[:end+1], strings.TrimSpace(v[end+1:])
	if name == "" {
		return table[id]
	}
	table[id] = name
	return name
}

// isCostLine: a cost line starts with a position, a number, "+n", "-n" or "*".
func isCostLine(t string) bool {
	c := t[0]
	return c >= '0' && c <= '9' || c == '+' || c == '-' || c == '*'
}

// nth is the i-th value of a cost list; missing trailing values are 0.
func nth(f []string, i int) (int64, error) {
	if i >= len(f) {
		return 0, nil
	}
	return strconv.ParseInt(f[i], 10, 64)
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// callgrind is a redis-server under valgrind --tool=callgrind, started
// with instrumentation off (so that filling the line runs at valgrind's
// plain speed) and collecting from the moment instrumentation is on; its
// counters are zeroed and dumped with callgrind_control.
type callgrind struct {
	*sim.Redis
	out   string // the dumps' file name prefix
	dumps int
}

// startCallgrind spawns redis-server under callgrind in dir, loading the
// snapshot there. DEBUG is allowed from loopback so that active expiry can
// be switched off (see measure).
func startCallgrind(dir string) (*callgrind, error) {
	bin, err := exec.LookPath("valgrind")
	if err != nil {
		return nil, fmt.Errorf("valgrind not found (`make bench-redis-cost` installs it): %w", err)
	}
	if _, err := exec.LookPath("callgrind_control"); err != nil {
		return nil, fmt.Errorf("callgrind_control not found (package valgrind): %w", err)
	}
	dumps, err := os.MkdirTemp("", "waitroom-callgrind-")
	if err != nil {
		return nil, err
	}
	out := filepath.Join(dumps, "callgrind.out")
	srv, err := sim.StartRedisWrapped([]string{bin, "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=yes",
		"--callgrind-out-file=" + out}, time.Minute, "--dir", dir, "--enable-debug-command", "local")
	if err != nil {
		return nil, err
	}
	return &callgrind{Redis: srv, out: out}, nil
}

// control runs callgrind_control with args on the server's process.
func (c *callgrind) control(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "callgrind_control", append(args, strconv.Itoa(c.PID()))...)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "OK") {
		return fmt.Errorf("callgrind_control %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// instrument turns instrumentation (and so counting) on for good.
func (c *callgrind) instrument(ctx context.Context) error { return c.control(ctx, "--instr=on") }

// zero sets every counter to zero: what runs next is what the next dump holds.
func (c *callgrind) zero(ctx context.Context) error { return c.control(ctx, "--zero") }

// dump writes the counters since the last zero or dump into the next
// numbered file and reads it.
func (c *callgrind) dump(ctx context.Context) (*profile, error) {
	if err := c.control(ctx, "--dump"); err != nil {
		return nil, err
	}
	c.dumps++
	name := fmt.Sprintf("%s.%d", c.out, c.dumps)
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("callgrind dump: %w", err)
	}
	defer f.Close()
	p, err := parseDump(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return p, os.Remove(name)
}

// stop ends the server and removes the dumps' directory.
func (c *callgrind) stop() {
	c.Stop()
	_ = os.RemoveAll(filepath.Dir(c.out))
}
