package sim

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Issue 21's targets for admission that follows the order API.
const (
	SettleWithin  = 10 * time.Second // downstream p95 back under the limit this soon after a change
	P95Factor     = 1.25             // the limit: this × the API's current mean service time
	SteadyWindow  = 15 * time.Second // the last part of a phase that counts as its steady state
	MinUsed       = 0.90             // share of the API's capacity used at steady state, at least
	RateTolerance = 0.10             // the effective rate within this share of the capacity at steady state
)

// AdaptiveRun is one scenario under one strategy: the run's totals, its
// seconds, its phases (before, during, after the change) and the targets.
type AdaptiveRun struct {
	Scenario    string           `json:"scenario"` // AdaptiveScenario.Key
	Name        string           `json:"name"`
	Strategy    string           `json:"strategy"` // AdaptiveFixed or AdaptiveOn
	Setup       AdaptiveScenario `json:"setup"`
	WallSeconds float64          `json:"wallSeconds"`

	Users     int `json:"users"`     // arrived within the run
	Admitted  int `json:"admitted"`  // by the admitter's batches and instantly
	Instant   int `json:"instant"`   // enters answered READY at once
	Ordered   int `json:"ordered"`   // orders answered 2xx
	Abandoned int `json:"abandoned"` // admitted users who chose never to order

	// Entry tokens that expired unused within the run, by their holders:
	// abandoned (never tried), no capacity (tried to order, no try
	// succeeded: 503s, timeouts, or still queued at the expiry), other
	// (had not tried: had not learned READY in time).
	Expired           int `json:"expired"`
	ExpiredAbandoned  int `json:"expiredAbandoned"`
	ExpiredNoCapacity int `json:"expiredNoCapacity"`
	ExpiredOther      int `json:"expiredOther"`
	LiveAtEnd         int `json:"liveAtEnd"` // neither used nor expired when the run ended

	DownP95Ms      float64        `json:"downP95Ms"` // every order served at the pool
	WaitP50S       float64        `json:"waitP50S"`  // enter → READY, every user who saw READY
	WaitP95S       float64        `json:"waitP95S"`
	FewestWaiting  int64          `json:"fewestWaiting"`  // the shortest line the status showed from FewestFrom on
	EffectiveShown bool           `json:"effectiveShown"` // the status carried effectiveRatePerSec
	Status         map[string]int `json:"status"`         // "POST /orders 201" → count

	// The calls the gate's counters handed to the law over the run, and of
	// them the failures (5xx, 429, timeouts); the orders attackers sent.
	CountedCalls  int64 `json:"countedCalls,omitempty"`
	CountedFailed int64 `json:"countedFailed,omitempty"`
	AttackOrders  int   `json:"attackOrders,omitempty"`
	AttackOK      int   `json:"attackOk,omitempty"` // of which answered 2xx

	Seconds []AdaptiveSecond `json:"seconds"`
	Phases  []AdaptivePhase  `json:"phases"`
	Targets []AdaptiveTarget `json:"targets"`
}

// FewestFrom is when the spike's line has formed: from then on an empty
// line would mean the admission rate no longer decided the load.
const FewestFrom = 5 * time.Second

// AdaptiveSecond is one second of a run [T, T+1).
type AdaptiveSecond struct {
	T                   int      `json:"t"`
	DownP95Ms           float64  `json:"downP95Ms"` // orders served in this second, arrival → answer at the pool; 0: none
	Served              int      `json:"served"`    // orders completed (201) at the pool
	Refused             int      `json:"refused"`   // answered 503
	GaveUp              int      `json:"gaveUp"`    // callers that gave up while queued (the order timeout)
	Admitted            int      `json:"admitted"`
	CapacityPerSec      float64  `json:"capacityPerSec"` // connections / current mean service time; 0 while down
	ServiceMs           float64  `json:"serviceMs"`      // the current mean service time
	Used                float64  `json:"used"`           // served / capacity (0 while down)
	EffectiveRatePerSec float64  `json:"effectiveRatePerSec"`
	Waiting             int64    `json:"waiting"` // the line, as the status showed it
	StatusP95Ms         *float64 `json:"statusP95Ms,omitempty"`
	StatusErrorRate     *float64 `json:"statusErrorRate,omitempty"`
	WaitP50S            float64  `json:"waitP50S"` // enter → READY of users who saw READY in this second
	WaitP95S            float64  `json:"waitP95S"`
	Expired             int      `json:"expired"` // tokens that expired unused in this second
	ExpiredNoCapacity   int      `json:"expiredNoCapacity"`
}

// AdaptivePhase is the run between two changes of the order API.
type AdaptivePhase struct {
	Name           string  `json:"name"` // before, during, after
	FromS          float64 `json:"fromS"`
	ToS            float64 `json:"toS"`
	Connections    int     `json:"connections"`
	ServiceMs      float64 `json:"serviceMs"`
	Down           bool    `json:"down"` // answering 503
	CapacityPerSec float64 `json:"capacityPerSec"`
	LimitMs        float64 `json:"limitMs"` // P95Factor × ServiceMs

	P95Ms         float64 `json:"p95Ms"`         // orders served in the phase
	SettledP95Ms  float64 `json:"settledP95Ms"`  // orders served from SettleWithin after its start
	SettledServed int     `json:"settledServed"` // how many (0: no such orders)

	SteadyFromS      float64 `json:"steadyFromS"` // -1: the phase is too short for a steady state
	SteadyUsed       float64 `json:"steadyUsed"`
	SteadyRatePerSec float64 `json:"steadyRatePerSec"`
	SteadyCapacity   float64 `json:"steadyCapacity"`

	WholeSeconds      int     `json:"wholeSeconds"` // the run's seconds wholly in the phase: what the counts below cover
	Admitted          int     `json:"admitted"`
	Served            int     `json:"served"`
	ExpiredNoCapacity int     `json:"expiredNoCapacity"` // by expiry in the phase
	WaitP50S          float64 `json:"waitP50S"`
	WaitP95S          float64 `json:"waitP95S"`
}

// AdaptiveTarget is one of issue 21's targets, evaluated.
type AdaptiveTarget struct {
	Key      string `json:"key"`   // p95, used, rate, expired
	Phase    string `json:"phase"` // "" for the whole run
	Goal     string `json:"goal"`
	Measured string `json:"measured"`
	Applies  bool   `json:"applies"` // false: n/a, Measured says why
	Pass     bool   `json:"pass"`
}

// userRec is what the figures need of a user.
type userRec struct {
	arrive, admittedAt, readyAt, waited, expiresAt time.Duration
	entered, instant, ordered, abandon             bool
	tries, fails                                   int
}

// adaptiveInputs are a run's records, all on the run's clock.
type adaptiveInputs struct {
	end        time.Duration
	conns      int
	mean       time.Duration
	cond       Conditions
	fixedRate  float64
	events     []PoolEvent
	admissions []time.Duration // one per admitted user
	users      []userRec
	samples    []statusSample
}

func buildAdaptiveRun(in adaptiveInputs) *AdaptiveRun {
	run := &AdaptiveRun{Seconds: perSecond(in)}
	run.tokens(in)
	var lat, waits []float64
	for _, e := range in.events {
		if e.Served && e.End < in.end {
			lat = append(lat, ms(e.End-e.Arrive))
		}
	}
	for _, u := range in.users {
		if u.arrive < in.end {
			run.Users++
		}
		if u.readyAt > 0 {
			waits = append(waits, u.waited.Seconds())
		}
	}
	run.DownP95Ms = round1(Percentiles(lat, 95)[0])
	w := Percentiles(waits, 50, 95)
	run.WaitP50S, run.WaitP95S = round1(w[0]), round1(w[1])
	run.FewestWaiting = -1
	for _, s := range in.samples {
		run.EffectiveShown = run.EffectiveShown || s.EffectiveRatePerSec != nil
		if s.At >= FewestFrom && (run.FewestWaiting < 0 || s.Waiting < run.FewestWaiting) {
			run.FewestWaiting = s.Waiting
		}
	}
	run.Phases = phasesOf(in, run.Seconds)
	run.Targets = targetsOf(run)
	return run
}

// tokens counts admissions and what became of their tokens. An admission
// is the run's when it falls in one of its seconds: a batch the admitter
// began before the deadline can report after it on a loaded machine, and
// the total must be the sum of the seconds.
func (run *AdaptiveRun) tokens(in adaptiveInputs) {
	for _, t := range in.admissions {
		if t >= 0 && t < in.end {
			run.Admitted++
		}
	}
	for _, u := range in.users {
		if u.instant {
			run.Instant++
		}
		switch {
		case u.ordered:
			run.Ordered++
		case u.expiresAt == 0:
			continue // never admitted
		case u.abandon:
			run.Abandoned++
		}
		if u.ordered || u.expiresAt == 0 {
			continue
		}
		switch {
		case u.expiresAt > in.end:
			run.LiveAtEnd++
		case u.abandon:
			run.Expired++
			run.ExpiredAbandoned++
		case u.tries > 0:
			run.Expired++
			run.ExpiredNoCapacity++
		default:
			run.Expired++
			run.ExpiredOther++
		}
	}
}

// perSecond sorts the records into the run's seconds.
func perSecond(in adaptiveInputs) []AdaptiveSecond {
	n := int(in.end / time.Second)
	out := make([]AdaptiveSecond, n)
	bucket := func(t time.Duration) int {
		if t < 0 || int(t/time.Second) >= n {
			return -1
		}
		return int(t / time.Second)
	}
	lat, waits := make([][]float64, n), make([][]float64, n)
	for i := range out {
		mid := time.Duration(i)*time.Second + time.Second/2
		out[i].T = i
		out[i].CapacityPerSec = round2(in.cond.Capacity(in.conns, in.mean, mid))
		out[i].ServiceMs = round1(ms(in.mean) * in.cond.Factor(mid))
	}
	for _, e := range in.events {
		switch i := bucket(e.End); {
		case i < 0:
		case e.Served:
			out[i].Served++
			lat[i] = append(lat[i], ms(e.End-e.Arrive))
		case e.Refused:
			out[i].Refused++
		default:
			out[i].GaveUp++
		}
	}
	for _, t := range in.admissions {
		if i := bucket(t); i >= 0 {
			out[i].Admitted++
		}
	}
	for _, u := range in.users {
		if i := bucket(u.readyAt); i >= 0 && u.readyAt > 0 {
			waits[i] = append(waits[i], u.waited.Seconds())
		}
		if i := bucket(u.expiresAt); i >= 0 && u.expiresAt > 0 && !u.ordered {
			out[i].Expired++
			if u.tries > 0 && !u.abandon {
				out[i].ExpiredNoCapacity++
			}
		}
	}
	for i := range out {
		out[i].DownP95Ms = round1(Percentiles(lat[i], 95)[0])
		w := Percentiles(waits[i], 50, 95)
		out[i].WaitP50S, out[i].WaitP95S = round1(w[0]), round1(w[1])
		if out[i].CapacityPerSec > 0 {
			out[i].Used = round2(float64(out[i].Served) / out[i].CapacityPerSec)
		}
	}
	statusPerSecond(out, in)
	return out
}

// statusPerSecond fills each second from the status sampled in it, the
// previous second's when none was: the effective rate (the stored fixed
// rate when the status has no effectiveRatePerSec), the line, the gate's
// own downstream figures.
func statusPerSecond(out []AdaptiveSecond, in adaptiveInputs) {
	rate, waiting := in.fixedRate, int64(0)
	var p95, errRate *float64
	k := 0
	for i := range out {
		for k < len(in.samples) && in.samples[k].At < time.Duration(i+1)*time.Second {
			s := in.samples[k]
			rate, waiting, p95, errRate = s.RatePerSec, s.Waiting, s.DownstreamP95Ms, s.DownstreamErrorRate
			if s.EffectiveRatePerSec != nil {
				rate = *s.EffectiveRatePerSec
			}
			k++
		}
		out[i].EffectiveRatePerSec, out[i].Waiting = round2(rate), waiting
		out[i].StatusP95Ms, out[i].StatusErrorRate = p95, errRate
	}
}

// phasesOf splits the run at the order API's changes.
func phasesOf(in adaptiveInputs, secs []AdaptiveSecond) []AdaptivePhase {
	bounds := append(append([]time.Duration{0}, in.cond.Changes(in.end)...), in.end)
	var out []AdaptivePhase
	for k := 0; k+1 < len(bounds); k++ {
		p := phase(in, secs, bounds[k], bounds[k+1])
		switch {
		case k == 0:
			p.Name = "before"
		case k == len(bounds)-2 && k > 1:
			p.Name = "after"
		default:
			p.Name = "during"
		}
		out = append(out, p)
	}
	return out
}

// phase is the figures of [from, to).
func phase(in adaptiveInputs, secs []AdaptiveSecond, from, to time.Duration) AdaptivePhase {
	mid := (from + to) / 2
	p := AdaptivePhase{FromS: from.Seconds(), ToS: to.Seconds(), Connections: in.cond.Connections(in.conns, mid),
		ServiceMs: round1(ms(in.mean) * in.cond.Factor(mid)), Down: in.cond.IsDown(mid),
		CapacityPerSec: round2(in.cond.Capacity(in.conns, in.mean, mid)), SteadyFromS: -1}
	p.LimitMs = round1(P95Factor * p.ServiceMs)
	var all, settled, waits []float64
	for _, e := range in.events {
		if e.Served && e.End >= from && e.End < to {
			all = append(all, ms(e.End-e.Arrive))
			if e.End >= from+SettleWithin {
				settled = append(settled, ms(e.End-e.Arrive))
			}
		}
	}
	for _, u := range in.users {
		if u.readyAt > 0 && u.readyAt >= from && u.readyAt < to {
			waits = append(waits, u.waited.Seconds())
		}
	}
	p.P95Ms, p.SettledP95Ms, p.SettledServed = round1(Percentiles(all, 95)[0]), round1(Percentiles(settled, 95)[0]), len(settled)
	w := Percentiles(waits, 50, 95)
	p.WaitP50S, p.WaitP95S = round1(w[0]), round1(w[1])
	first, last := int(math.Ceil(from.Seconds())), min(len(secs), int(to/time.Second))
	p.WholeSeconds = max(0, last-first)
	for _, s := range secs[min(first, last):last] {
		p.Admitted += s.Admitted
		p.Served += s.Served
		p.ExpiredNoCapacity += s.ExpiredNoCapacity
	}
	if to-from >= SettleWithin+SteadyWindow {
		p.steady(secs[max(0, last-int(SteadyWindow/time.Second)):last])
	}
	return p
}

// steady fills the steady-state figures from the phase's last seconds.
func (p *AdaptivePhase) steady(secs []AdaptiveSecond) {
	if len(secs) == 0 {
		return
	}
	var served, capacity, rate float64
	for _, s := range secs {
		served, capacity, rate = served+float64(s.Served), capacity+s.CapacityPerSec, rate+s.EffectiveRatePerSec
	}
	p.SteadyFromS = float64(secs[0].T)
	p.SteadyRatePerSec = round2(rate / float64(len(secs)))
	p.SteadyCapacity = round2(capacity / float64(len(secs)))
	if capacity > 0 {
		p.SteadyUsed = round2(served / capacity)
	}
}

// targetsOf evaluates issue 21's targets: per phase, the downstream p95
// once settled, the capacity used and the effective rate at steady state;
// for the run, tokens expired unused for lack of capacity.
func targetsOf(run *AdaptiveRun) []AdaptiveTarget {
	var out []AdaptiveTarget
	for _, p := range run.Phases {
		out = append(out, p95Target(p), usedTarget(p), rateTarget(p))
	}
	return append(out, AdaptiveTarget{Key: "expired", Goal: "no token expires unused for lack of capacity", Applies: true,
		Measured: fmt.Sprintf("%s of %s admitted (%s expired unused in all)", itoa(run.ExpiredNoCapacity), itoa(run.Admitted), itoa(run.Expired)),
		Pass:     run.ExpiredNoCapacity == 0})
}

func p95Target(p AdaptivePhase) AdaptiveTarget {
	t := AdaptiveTarget{Key: "p95", Phase: p.Name,
		Goal: fmt.Sprintf("downstream p95 ≤ %g × service time (%s ms) from %s after the change", P95Factor, fmtTick(p.LimitMs), SettleWithin)}
	switch {
	case p.Down:
		t.Measured = "n/a: the API answers 503, no service time"
	case p.SettledServed == 0:
		t.Measured = "n/a: no order served from " + SettleWithin.String() + " on"
	default:
		t.Applies, t.Pass = true, p.SettledP95Ms <= p.LimitMs
		t.Measured = fmt.Sprintf("%s ms (%s orders)", nearLimit(p.SettledP95Ms, p.LimitMs, math.Ceil), itoa(p.SettledServed))
	}
	return t
}

// nearLimit writes a measure as a whole number, but with a tenth where the
// whole number would be the limit itself (250.4 ms against 250, 89.96 %
// against 90): there the tenth is rounded away from the limit on the side
// that fails (toward: math.Ceil for a ceiling, math.Floor for a floor), so
// the figure shown says what the check decided.
func nearLimit(v, limit float64, toward func(float64) float64) string {
	if math.Round(v) == limit && v != limit {
		return strconv.FormatFloat(toward(v*10)/10, 'f', 1, 64)
	}
	return thousands(v)
}

func usedTarget(p AdaptivePhase) AdaptiveTarget {
	t := AdaptiveTarget{Key: "used", Phase: p.Name, Goal: fmt.Sprintf("≥ %.0f%% of capacity used at steady state (the phase's last %s)", 100*MinUsed, SteadyWindow)}
	if na, ok := steadyNA(p); !ok {
		t.Measured = na
		return t
	}
	t.Applies, t.Pass = true, p.SteadyUsed >= MinUsed
	t.Measured = fmt.Sprintf("%s%% (of %s/s)", nearLimit(100*p.SteadyUsed, 100*MinUsed, math.Floor), fmtTick(p.SteadyCapacity))
	return t
}

func rateTarget(p AdaptivePhase) AdaptiveTarget {
	t := AdaptiveTarget{Key: "rate", Phase: p.Name, Goal: fmt.Sprintf("effective rate within ±%.0f%% of capacity at steady state", 100*RateTolerance)}
	if na, ok := steadyNA(p); !ok {
		t.Measured = na
		return t
	}
	dev := p.SteadyRatePerSec/p.SteadyCapacity - 1
	t.Applies, t.Pass = true, math.Abs(dev) <= RateTolerance
	t.Measured = fmt.Sprintf("%s/s vs %s/s (%+.0f%%)", fmtTick(round1(p.SteadyRatePerSec)), fmtTick(p.SteadyCapacity), 100*dev)
	return t
}

// steadyNA says why a phase has no steady state to judge, if it has none.
func steadyNA(p AdaptivePhase) (string, bool) {
	switch {
	case p.Down:
		return "n/a: capacity 0 (503)", false
	case p.SteadyFromS < 0:
		return fmt.Sprintf("n/a: shorter than %s", SettleWithin+SteadyWindow), false
	case p.SteadyCapacity == 0:
		return "n/a: capacity 0", false
	}
	return "", true
}
