// Package callgrind runs a redis-server under valgrind's callgrind tool
// and reads what it counts: the server starts with instrumentation off
// (so that loading a snapshot runs at valgrind's plain speed), and its
// counters are zeroed and dumped with callgrind_control; each dump is
// parsed here (the instructions executed, event Ir, in all and per
// function). Redis's timer, serverCron, runs on the clock, not on the
// calls, so what a figure counts (Profile.Counted) leaves it out. It is
// bench/rediscost's and bench/bigroom's: commands, not a library.
package callgrind

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// TimerFunc is Redis's timer event: time-driven (hz times a second), not
// call-driven, so its cost is left out of every figure (see the package comment).
const TimerFunc = "serverCron"

// Profile is one callgrind dump, or the sum of several: instructions
// executed (event Ir) in all, and per function.
type Profile struct {
	Total int64            // the dump's summary (every instruction counted)
	Funcs map[string]*Cost // by function name (callgrind's, "0x…" for unnamed ones)
}

// Cost is one function's share of a Profile.
type Cost struct {
	Object    string // the object file holding it (binary, libc, …)
	Self      int64  // instructions in the function itself
	Inclusive int64  // itself and everything it called (direct recursion counted once)
	Calls     int64  // times it was called
}

// Timer is the instructions of Redis's timer (serverCron and all it calls).
func (p *Profile) Timer() int64 {
	if c := p.Funcs[TimerFunc]; c != nil {
		return c.Inclusive
	}
	return 0
}

// Counted is what the figures count: everything but the timer.
func (p *Profile) Counted() int64 { return p.Total - p.Timer() }

// Add sums q into p: the measured calls of one operation may span dumps.
func (p *Profile) Add(q *Profile) {
	if p.Funcs == nil {
		p.Funcs = map[string]*Cost{}
	}
	p.Total += q.Total
	for name, c := range q.Funcs {
		s := p.Funcs[name]
		if s == nil {
			s = &Cost{Object: c.Object}
			p.Funcs[name] = s
		}
		s.Self += c.Self
		s.Inclusive += c.Inclusive
		s.Calls += c.Calls
	}
}

// Top is the n functions of highest inclusive cost, or of highest self
// cost with bySelf, costliest first (ties by name, for stable output).
func (p *Profile) Top(n int, bySelf bool) []string {
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

// Parse reads a callgrind output file (format version 1, as
// valgrind 3.x writes it): the summary line, and per function its self
// cost (the cost lines under fn=) and inclusive cost (self plus the
// inclusive cost of every call it made: the line after each calls=).
// Only the event Ir is read. Names may be compressed: "fn=(12) name" the
// first time, "fn=(12)" after; cfn shares fn's numbers, cob ob's.
func Parse(r io.Reader) (*Profile, error) {
	p := &Profile{Funcs: map[string]*Cost{}}
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
func (p *Profile) fn(name, object string) *Cost {
	c := p.Funcs[name]
	if c == nil {
		c = &Cost{Object: object}
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
