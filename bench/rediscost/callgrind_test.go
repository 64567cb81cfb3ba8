package main

import (
	"strings"
	"testing"
)

// dump is a callgrind dump in valgrind 3.19's layout, with compressed
// names, a call into another object, a direct recursion and relative
// positions. Self costs: aeMain 10, serverCron 100, processCommand 40+50,
// memcpy 200+600 seen from its callers and 800 in its own block.
const dump = `# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 4242
cmd:  redis-server --port 1
part: 1

desc: Trigger: dump

positions: line
events: Ir
summary: 1000

ob=(1) /usr/bin/redis-check-rdb
fl=(1) ???
fn=(1) aeMain
0 10
cfn=(2) serverCron
calls=2 0
0 300
cfn=(3) processCommand
calls=5 0
0 690
fn=(2)
0 100
cob=(2) /usr/lib/x86_64-linux-gnu/libc.so.6
cfi=(2) ???
cfn=(4) memcpy
calls=4 0
0 200
fn=(3)
+2 40
* 50
cfn=(3)
calls=1 0
0 25
cob=(2)
cfn=(4)
calls=6 0
-1 600
ob=(2)
fl=(2)
fn=(4)
0 800

totals: 1000
`

func TestParseDump(t *testing.T) {
	p, err := parseDump(strings.NewReader(dump))
	if err != nil {
		t.Fatal(err)
	}
	if p.Total != 1000 || p.Timer() != 300 || p.Counted() != 700 {
		t.Errorf("total %d, timer %d, counted %d; want 1000, 300, 700", p.Total, p.Timer(), p.Counted())
	}
	for name, want := range map[string]cost{
		"aeMain":         {Object: "/usr/bin/redis-check-rdb", Self: 10, Inclusive: 1000},
		"serverCron":     {Object: "/usr/bin/redis-check-rdb", Self: 100, Inclusive: 300, Calls: 2},
		"processCommand": {Object: "/usr/bin/redis-check-rdb", Self: 90, Inclusive: 690, Calls: 6}, // its recursion not twice
		"memcpy":         {Object: "/usr/lib/x86_64-linux-gnu/libc.so.6", Self: 800, Inclusive: 800, Calls: 10},
	} {
		if got := p.Funcs[name]; got == nil || *got != want {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
	if got := p.top(2, false); strings.Join(got, " ") != "aeMain memcpy" {
		t.Errorf("top 2 by inclusive: %v", got)
	}
	if got := p.top(1, true); got[0] != "memcpy" {
		t.Errorf("top by self: %v", got)
	}
}

func TestParseDumpPicksIrAmongEvents(t *testing.T) {
	p, err := parseDump(strings.NewReader("events: Dr Ir\nsummary: 7 40\nfn=(1) f\n3 5 30\n4 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Total != 40 || p.Funcs["f"].Self != 30 { // "4 2": Dr 2, Ir omitted (0)
		t.Errorf("total %d, self %d; want 40, 30", p.Total, p.Funcs["f"].Self)
	}
}

func TestParseDumpRefusesIncompleteDumps(t *testing.T) {
	for name, text := range map[string]string{
		"no summary":   "events: Ir\nfn=(1) f\n0 5\n",
		"no Ir":        "events: Dr\nsummary: 1\n",
		"cost, no fn":  "events: Ir\nsummary: 1\n0 1\n",
		"bad calls":    "events: Ir\nsummary: 1\nfn=(1) f\ncalls=x 0\n0 1\n",
		"bad cost":     "events: Ir\nsummary: 1\nfn=(1) f\n0 x\n",
		"bad summary:": "events: Ir\nsummary: many\n",
	} {
		if _, err := parseDump(strings.NewReader(text)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// The figures of an operation measured in several windows are the sum of
// the windows' dumps: instructions less the timer, over all the calls.
func TestProfilesAddUp(t *testing.T) {
	one, err := parseDump(strings.NewReader(dump))
	if err != nil {
		t.Fatal(err)
	}
	var sum profile
	sum.add(one)
	sum.add(one)
	if sum.Total != 2000 || sum.Counted() != 1400 || sum.Funcs["memcpy"].Calls != 20 || sum.Funcs["serverCron"].Inclusive != 600 {
		t.Errorf("sum of two dumps: total %d, counted %d, memcpy calls %d, serverCron %d", sum.Total, sum.Counted(), sum.Funcs["memcpy"].Calls, sum.Funcs["serverCron"].Inclusive)
	}
	if one.Funcs["memcpy"].Calls != 10 {
		t.Error("add changed its argument")
	}
}

func TestParamsRefuseWhatCannotBeMeasured(t *testing.T) {
	ok := params{waiting: 100_000, calls: 2000, warmup: 200, chunk: 250, admitCalls: 100, memoryUsers: 1_000_000, memoryCallers: 50_000, fillClients: 16}
	if err := ok.validate(); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
	for name, change := range map[string]func(*params){
		"more calls than users":    func(p *params) { p.waiting = 1000 },
		"too many callers' IPs":    func(p *params) { p.memoryCallers = 70_000 },
		"no calls":                 func(p *params) { p.calls = 0 },
		"fewer users than callers": func(p *params) { p.memoryUsers = 10 },
	} {
		p := ok
		change(&p)
		if p.validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestUsersAndCallers(t *testing.T) {
	if got := uid(waitGroup, 7); got != "u000000000007" || len(got) != 13 {
		t.Errorf("uid: %q", got)
	}
	if got := ipOf(waitGroup, 258); got != "10.117.1.2" {
		t.Errorf("ipOf: %q", got)
	}
	seen := map[int]bool{}
	for i := range 2200 {
		j := spread(i, 2200, 100_000)
		if j < 0 || j >= 100_000 || seen[j] {
			t.Fatalf("spread(%d) = %d: out of the line or taken twice", i, j)
		}
		seen[j] = true
	}
}
