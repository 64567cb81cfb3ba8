package sim

import (
	"sort"
	"time"
)

// Conditions are the order API's changes over a run, on the simulation's
// clock (time since the pool's epoch): a slower service over intervals, a
// different number of connections from a moment on, and intervals in which
// it answers 503 at once. The zero value is an order API that never changes.
type Conditions struct {
	Slow  []Slowdown   `json:"slow,omitempty"`
	Conns []ConnChange `json:"conns,omitempty"`
	Down  []Span       `json:"down,omitempty"`
}

// Span is the interval [From, To).
type Span struct {
	From time.Duration `json:"from"`
	To   time.Duration `json:"to"`
}

// Holds says whether t lies in the span.
func (s Span) Holds(t time.Duration) bool { return t >= s.From && t < s.To }

// Slowdown multiplies the service time of calls that get a connection in Span.
type Slowdown struct {
	Span
	Factor float64 `json:"factor"`
}

// ConnChange sets the pool's size from At on.
type ConnChange struct {
	At          time.Duration `json:"at"`
	Connections int           `json:"connections"`
}

// Factor is the service-time multiplier at t (1 outside every slowdown).
func (c Conditions) Factor(t time.Duration) float64 {
	f := 1.0
	for _, s := range c.Slow {
		if s.Holds(t) {
			f *= s.Factor
		}
	}
	return f
}

// Connections is the pool's size at t: base until the first change, then
// the latest change's.
func (c Conditions) Connections(base int, t time.Duration) int {
	n, at := base, time.Duration(-1)
	for _, ch := range c.Conns {
		if ch.At <= t && ch.At > at {
			n, at = ch.Connections, ch.At
		}
	}
	return n
}

// IsDown says whether the order API answers 503 at t.
func (c Conditions) IsDown(t time.Duration) bool {
	for _, s := range c.Down {
		if s.Holds(t) {
			return true
		}
	}
	return false
}

// Capacity is what the order API completes per second at t: connections /
// current mean service time, 0 while it is down.
func (c Conditions) Capacity(base int, mean time.Duration, t time.Duration) float64 {
	if c.IsDown(t) {
		return 0
	}
	return float64(c.Connections(base, t)) / (mean.Seconds() * c.Factor(t))
}

// Changes are the moments the conditions change, in order, within (0, end).
func (c Conditions) Changes(end time.Duration) []time.Duration {
	set := map[time.Duration]bool{}
	for _, s := range c.Slow {
		set[s.From], set[s.To] = true, true
	}
	for _, s := range c.Down {
		set[s.From], set[s.To] = true, true
	}
	for _, ch := range c.Conns {
		set[ch.At] = true
	}
	var out []time.Duration
	for t := range set {
		if t > 0 && t < end {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Scaled is c with every moment multiplied by f: the same scenario in a
// shorter or longer run.
func (c Conditions) Scaled(f float64) Conditions {
	sc := func(d time.Duration) time.Duration { return time.Duration(float64(d) * f).Round(time.Second / 10) }
	out := Conditions{}
	for _, s := range c.Slow {
		out.Slow = append(out.Slow, Slowdown{Span{sc(s.From), sc(s.To)}, s.Factor})
	}
	for _, ch := range c.Conns {
		out.Conns = append(out.Conns, ConnChange{sc(ch.At), ch.Connections})
	}
	for _, s := range c.Down {
		out.Down = append(out.Down, Span{sc(s.From), sc(s.To)})
	}
	return out
}
