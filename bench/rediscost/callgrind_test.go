package main

import "testing"

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
