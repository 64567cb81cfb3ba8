package sim

import (
	"math"
	"testing"
	"time"
)

const tms = time.Millisecond

// served is an order served at the pool: answered at end after lat.
func served(end, lat time.Duration) PoolEvent {
	return PoolEvent{Arrive: end - lat, Start: end - lat, End: end, Served: true}
}

func fptr(x float64) *float64 { return &x }

func TestPerSecondAndTokens(t *testing.T) {
	s := time.Second
	in := adaptiveInputs{end: 4 * s, conns: 2, mean: 100 * tms, fixedRate: 70,
		cond: Conditions{Slow: []Slowdown{{Span{2 * s, 4 * s}, 2}}, Down: []Span{{3 * s, 4 * s}}},
		events: []PoolEvent{served(300*tms, 100*tms), served(600*tms, 120*tms), served(900*tms, 400*tms),
			{Arrive: 1100 * tms, End: 1100 * tms, Refused: true}, {Arrive: 1000 * tms, End: 1800 * tms}, served(5*s, 100*tms)},
		admissions: []time.Duration{100 * tms, 200 * tms, 1500 * tms, 4100 * tms}, // the last reported after the end
		users: []userRec{
			{arrive: 0, admittedAt: 100 * tms, readyAt: 200 * tms, waited: 200 * tms, expiresAt: 30 * s, ordered: true, tries: 1},
			{arrive: 0, admittedAt: 200 * tms, readyAt: 300 * tms, waited: 300 * tms, expiresAt: 1500 * tms, abandon: true},
			{arrive: 0, readyAt: 1600 * tms, waited: 1600 * tms, expiresAt: 2500 * tms, tries: 2, fails: 2, instant: true},
			{arrive: 0, expiresAt: 3500 * tms},
			{arrive: 0, expiresAt: 5 * s, tries: 1},
			{arrive: 6 * s},
		},
		samples: []statusSample{{At: 500 * tms, RatePerSec: 70, Waiting: 9}, {At: 2500 * tms, RatePerSec: 70, EffectiveRatePerSec: fptr(42), Waiting: 3, DownstreamP95Ms: fptr(180)}},
	}
	secs := perSecond(in)
	if len(secs) != 4 {
		t.Fatalf("%d seconds", len(secs))
	}
	want := []AdaptiveSecond{
		{T: 0, DownP95Ms: 400, Served: 3, Admitted: 2, CapacityPerSec: 20, ServiceMs: 100, Used: 0.15, EffectiveRatePerSec: 70, Waiting: 9, WaitP50S: 0.2, WaitP95S: 0.3},
		{T: 1, Refused: 1, GaveUp: 1, Admitted: 1, CapacityPerSec: 20, ServiceMs: 100, EffectiveRatePerSec: 70, Waiting: 9, WaitP50S: 1.6, WaitP95S: 1.6, Expired: 1},
		{T: 2, CapacityPerSec: 10, ServiceMs: 200, EffectiveRatePerSec: 42, Waiting: 3, Expired: 1, ExpiredNoCapacity: 1},
		{T: 3, CapacityPerSec: 0, ServiceMs: 200, EffectiveRatePerSec: 42, Waiting: 3, Expired: 1},
	}
	for i, w := range want {
		g := secs[i]
		p95 := g.StatusP95Ms
		g.StatusP95Ms, g.StatusErrorRate = nil, nil
		if g != w {
			t.Errorf("second %d:\n got %+v\nwant %+v", i, g, w)
		}
		if (i >= 2) != (p95 != nil && *p95 == 180) {
			t.Errorf("second %d: the status's p95 %v", i, p95)
		}
	}
	run := buildAdaptiveRun(in)
	if run.Users != 5 || run.Admitted != 3 || run.Instant != 1 || run.Ordered != 1 || run.Abandoned != 1 ||
		run.Expired != 3 || run.ExpiredAbandoned != 1 || run.ExpiredNoCapacity != 1 || run.ExpiredOther != 1 || run.LiveAtEnd != 1 {
		t.Errorf("totals %+v", run)
	}
	if !run.EffectiveShown || run.FewestWaiting != -1 || run.DownP95Ms != 400 {
		t.Errorf("effective shown %v, fewest waiting %d (no sample from %s on), p95 %g", run.EffectiveShown, run.FewestWaiting, FewestFrom, run.DownP95Ms)
	}
}

// phaseRun is a minute whose order API halves its capacity at 30 s: 20
// orders a second before at 110 ms, then 8 a second, at lateMs for the
// first 10 s and settledMs after; the rate 20, then 13 a second.
func phaseRun(lateMs, settledMs time.Duration, expiredNoCapacity bool) *AdaptiveRun {
	s := time.Second
	in := adaptiveInputs{end: 60 * s, conns: 2, mean: 100 * tms, fixedRate: 20, cond: Conditions{Slow: []Slowdown{{Span{30 * s, 60 * s}, 2}}}}
	for sec := 0; sec < 60; sec++ {
		n, lat := 20, 110*tms
		switch {
		case sec >= 40:
			n, lat = 8, settledMs*tms
		case sec >= 30:
			n, lat = 8, lateMs*tms
		}
		for k := 0; k < n; k++ {
			in.events = append(in.events, served(time.Duration(sec)*s+time.Duration(k+1)*s/time.Duration(n+1), lat))
		}
	}
	in.samples = []statusSample{{At: s / 2, RatePerSec: 20, Waiting: 50}, {At: 30*s + s/2, RatePerSec: 20, EffectiveRatePerSec: fptr(13), Waiting: 40}}
	if expiredNoCapacity {
		in.users = append(in.users, userRec{expiresAt: 45 * s, tries: 3, fails: 3})
	}
	return buildAdaptiveRun(in)
}

func TestTargets(t *testing.T) {
	type verdict struct{ applies, pass bool }
	check := func(name string, run *AdaptiveRun, want map[string]verdict) {
		t.Helper()
		if len(run.Targets) != 7 {
			t.Fatalf("%s: %d targets: %+v", name, len(run.Targets), run.Targets)
		}
		for _, tg := range run.Targets {
			w, ok := want[tg.Phase+" "+tg.Key]
			if !ok || tg.Applies != w.applies || tg.Pass != w.pass {
				t.Errorf("%s: %s %s: applies %v pass %v (%s), want %+v", name, tg.Phase, tg.Key, tg.Applies, tg.Pass, tg.Measured, w)
			}
		}
	}
	run := phaseRun(300, 210, false)
	if p := run.Phases[1]; p.Name != "during" || p.LimitMs != 250 || p.P95Ms != 300 || p.SettledP95Ms != 210 || p.SteadyUsed != 0.8 || p.SteadyCapacity != 10 || p.SteadyRatePerSec != 13 || p.SteadyFromS != 45 || p.AdmittedPerSec() != 0 {
		t.Errorf("during: %+v", p)
	}
	if p := run.Phases[0]; p.Name != "before" || p.SettledP95Ms != 110 || p.SteadyUsed != 1 || p.ServedPerSec() != 20 {
		t.Errorf("before: %+v", p)
	}
	// Settled within 10 s, yet the rate 30% above a capacity it uses 80% of.
	check("settled", run, map[string]verdict{"before p95": {true, true}, "before used": {true, true}, "before rate": {true, true},
		"during p95": {true, true}, "during used": {true, false}, "during rate": {true, false}, " expired": {true, true}})
	check("never settled, a token lost", phaseRun(300, 260, true), map[string]verdict{"before p95": {true, true}, "before used": {true, true}, "before rate": {true, true},
		"during p95": {true, false}, "during used": {true, false}, "during rate": {true, false}, " expired": {true, false}})
}

// A phase in which the API answers 503, and one too short for a steady
// state, are not judged: n/a, said why.
func TestTargetsNotApplicable(t *testing.T) {
	s := time.Second
	in := adaptiveInputs{end: 60 * s, conns: 20, mean: 200 * tms, fixedRate: 70, cond: Conditions{Down: []Span{{30 * s, 40 * s}}}}
	run := buildAdaptiveRun(in)
	if len(run.Phases) != 3 || run.Phases[2].Name != "after" {
		t.Fatalf("phases %+v", run.Phases)
	}
	// No order is served at all: no p95 anywhere; before is long enough
	// for a steady state (and uses none of the capacity).
	want := map[string]string{"before p95": "n/a: no order served from 10s on", "before used": "0% (of 100/s)", "before rate": "70/s vs 100/s (-30%)",
		"during p95": "n/a: the API answers 503, no service time", "during used": "n/a: capacity 0 (503)", "during rate": "n/a: capacity 0 (503)",
		"after p95": "n/a: no order served from 10s on", "after used": "n/a: shorter than 25s", "after rate": "n/a: shorter than 25s"}
	for _, tg := range run.Targets {
		if w, ok := want[tg.Phase+" "+tg.Key]; ok && (tg.Measured != w || tg.Applies != (tg.Phase == "before" && tg.Key != "p95")) {
			t.Errorf("%s %s: applies %v, %q; want %q", tg.Phase, tg.Key, tg.Applies, tg.Measured, w)
		}
	}
}

// A measure shown as a whole number where that number is the limit itself
// carries a tenth, rounded to the side the check decided: a p95 of 250.4 ms
// fails ≤ 250 and must not read "250 ms (not met)".
func TestNearLimitShowsWhatTheCheckDecided(t *testing.T) {
	for _, c := range []struct {
		v, limit float64
		toward   func(float64) float64
		want     string
	}{
		{250.4, 250, math.Ceil, "250.4"}, {250.04, 250, math.Ceil, "250.1"}, {249.96, 250, math.Ceil, "250.0"},
		{250, 250, math.Ceil, "250"}, {243.5, 250, math.Ceil, "244"}, {1523.2, 500, math.Ceil, "1,523"},
		{89.96, 90, math.Floor, "89.9"}, {90.04, 90, math.Floor, "90.0"}, {89.4, 90, math.Floor, "89"},
	} {
		if got := nearLimit(c.v, c.limit, c.toward); got != c.want {
			t.Errorf("nearLimit(%v, %v) = %q, want %q", c.v, c.limit, got, c.want)
		}
	}
}
