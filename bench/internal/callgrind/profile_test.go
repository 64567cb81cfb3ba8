package callgrind

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
	p, err := Parse(strings.NewReader(dump))
	if err != nil {
		t.Fatal(err)
	}
	if p.Total != 1000 || p.Timer() != 300 || p.Counted() != 700 {
		t.Errorf("total %d, timer %d, counted %d; want 1000, 300, 700", p.Total, p.Timer(), p.Counted())
	}
	for name, want := range map[string]Cost{
		"aeMain":         {Object: "/usr/bin/redis-check-rdb", Self: 10, Inclusive: 1000},
		"serverCron":     {Object: "/usr/bin/redis-check-rdb", Self: 100, Inclusive: 300, Calls: 2},
		"processCommand": {Object: "/usr/bin/redis-check-rdb", Self: 90, Inclusive: 690, Calls: 6}, // its recursion not twice
		"memcpy":         {Object: "/usr/lib/x86_64-linux-gnu/libc.so.6", Self: 800, Inclusive: 800, Calls: 10},
	} {
		if got := p.Funcs[name]; got == nil || *got != want {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
	if got := p.Top(2, false); strings.Join(got, " ") != "aeMain memcpy" {
		t.Errorf("top 2 by inclusive: %v", got)
	}
	if got := p.Top(1, true); got[0] != "memcpy" {
		t.Errorf("top by self: %v", got)
	}
}

func TestParseDumpPicksIrAmongEvents(t *testing.T) {
	p, err := Parse(strings.NewReader("events: Dr Ir\nsummary: 7 40\nfn=(1) f\n3 5 30\n4 2\n"))
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
		if _, err := Parse(strings.NewReader(text)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// The figures of an operation measured in several windows are the sum of
// the windows' dumps: instructions less the timer, over all the calls.
func TestProfilesAddUp(t *testing.T) {
	one, err := Parse(strings.NewReader(dump))
	if err != nil {
		t.Fatal(err)
	}
	var sum Profile
	sum.Add(one)
	sum.Add(one)
	if sum.Total != 2000 || sum.Counted() != 1400 || sum.Funcs["memcpy"].Calls != 20 || sum.Funcs["serverCron"].Inclusive != 600 {
		t.Errorf("sum of two dumps: total %d, counted %d, memcpy calls %d, serverCron %d", sum.Total, sum.Counted(), sum.Funcs["memcpy"].Calls, sum.Funcs["serverCron"].Inclusive)
	}
	if one.Funcs["memcpy"].Calls != 10 {
		t.Error("Add changed its argument")
	}
}
