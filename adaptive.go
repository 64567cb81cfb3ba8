package waitroom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// minRate and maxRate bound every rate a room is given: its ratePerSec,
// and the adaptive law's floor and ceiling.
const minRate, maxRate = 0.001, 1e6

// Adaptive is a room's adaptive admission (docs/design.md, "Adaptive
// admission"): the admitter moves the room's effective rate within
// [MinRatePerSec, MaxRatePerSec] after the order API's measured health.
// A nil *Adaptive is a fixed rate: ratePerSec.
type Adaptive struct {
	TargetP95Ms   int64   `json:"targetP95Ms"`
	MinRatePerSec float64 `json:"minRatePerSec"`
	MaxRatePerSec float64 `json:"maxRatePerSec"`
}

// maxTargetP95Ms bounds targetP95Ms: ten minutes, beyond any order timeout.
const maxTargetP95Ms = 600_000

// Validate names the first field out of range, as adaptive.<field>.
func (a Adaptive) Validate() error {
	rates := fmt.Sprintf("must be a number from %g to %g", float64(minRate), float64(maxRate))
	switch {
	case a.TargetP95Ms < 1 || a.TargetP95Ms > maxTargetP95Ms:
		return invalidSetting("adaptive.targetP95Ms", fmt.Sprintf("must be a whole number of milliseconds from 1 to %d", maxTargetP95Ms))
	case math.IsNaN(a.MinRatePerSec) || a.MinRatePerSec < minRate || a.MinRatePerSec > maxRate:
		return invalidSetting("adaptive.minRatePerSec", rates)
	case math.IsNaN(a.MaxRatePerSec) || a.MaxRatePerSec < minRate || a.MaxRatePerSec > maxRate:
		return invalidSetting("adaptive.maxRatePerSec", rates)
	case a.MinRatePerSec > a.MaxRatePerSec:
		return invalidSetting("adaptive.minRatePerSec", "must not exceed adaptive.maxRatePerSec")
	}
	return nil
}

// Clamp puts rate within the bounds.
func (a Adaptive) Clamp(rate float64) float64 {
	return min(max(rate, a.MinRatePerSec), a.MaxRatePerSec)
}

// String is the store's spelling, "targetMs:min:max" (parsed by the store's
// scripts to clamp the rate they write): no exponent, which the embedded
// store's tonumber refuses.
func (a Adaptive) String() string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	return strconv.FormatInt(a.TargetP95Ms, 10) + ":" + f(a.MinRatePerSec) + ":" + f(a.MaxRatePerSec)
}

// ParseAdaptive reads String's spelling; "" is nil (a fixed rate).
func ParseAdaptive(s string) (*Adaptive, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return nil, fmt.Errorf("malformed adaptive setting %q", s)
	}
	var a Adaptive
	var errs [3]error
	a.TargetP95Ms, errs[0] = strconv.ParseInt(parts[0], 10, 64)
	a.MinRatePerSec, errs[1] = strconv.ParseFloat(parts[1], 64)
	a.MaxRatePerSec, errs[2] = strconv.ParseFloat(parts[2], 64)
	if errors.Join(errs[:]...) != nil {
		return nil, fmt.Errorf("malformed adaptive setting %q", s)
	}
	return &a, nil
}

// Outcome is the class of one order API call, as the controller counts it.
type Outcome uint8

const (
	OutcomeNone     Outcome = iota // no call was made: nothing to record
	OutcomeOK                      // 2xx
	OutcomeClient                  // 4xx (but 429): never recorded since issue 32 (ClassifyOrder); an older gate's counters of it are ignored
	OutcomeOverload                // 5xx and 429: the API says it cannot keep up
	OutcomeTimeout                 // no answer in time, or none at all (transport error)
	numOutcomes
)

// outcomeLetters spell the outcomes in the store's counter names.
const outcomeLetters = "-ocet"

// ClassifyOrder is the outcome of a call that answered status, or failed
// with err, as the controller counts it (issue 32). A refused order (4xx
// but 429, or any other answer that is neither 2xx nor the API's overload)
// is the order's fault and answers at once: counted, it would make the
// API look faster and busier than it is, so it weighs in no measure
// (OutcomeNone). Neither does a call the caller hung up on (its context
// canceled): that says nothing of the API. The gate's own timeout and a
// transport error are the API's.
func ClassifyOrder(status int, err error) Outcome {
	switch {
	case errors.Is(err, context.Canceled):
		return OutcomeNone
	case err != nil:
		return OutcomeTimeout
	case status >= 200 && status <= 299:
		return OutcomeOK
	case status >= 500 || status == 429:
		return OutcomeOverload
	default:
		return OutcomeNone
	}
}

// Failed: an overload answer or a timeout, which the store counts once per
// token holder (unlock.lua).
func (o Outcome) Failed() bool { return o == OutcomeOverload || o == OutcomeTimeout }

// DownstreamCall is one measured order API call: the gate's latency around
// it and its outcome. The zero value records nothing.
type DownstreamCall struct {
	Latency time.Duration
	Outcome Outcome
}

// Latency buckets are log-scale, bucketsPerOctave to a doubling (a bucket
// is 4.4% wide), from 1 ms to 2^20 ms (17 minutes, beyond any order
// timeout): a room's counters are a fixed set, whatever the traffic.
const (
	bucketsPerOctave = 16
	latencyBuckets   = 20 * bucketsPerOctave
)

func latencyBucket(d time.Duration) int {
	ms := float64(d) / float64(time.Millisecond)
	if ms <= 1 {
		return 0
	}
	return min(latencyBuckets-1, int(math.Log2(ms)*bucketsPerOctave))
}

// bucketLatency is a bucket's geometric middle.
func bucketLatency(b int) time.Duration { return bucketAt(b, 0.5) }

// Field is the store's counter of c: outcome letter and latency bucket ("o123").
func (c DownstreamCall) Field() string {
	if c.Outcome == OutcomeNone || c.Outcome >= numOutcomes {
		return ""
	}
	return string(outcomeLetters[c.Outcome]) + strconv.Itoa(latencyBucket(c.Latency))
}

// Histogram counts a window's calls by outcome and latency bucket.
type Histogram struct {
	counts [numOutcomes][latencyBuckets]int64
	calls  int64
}

// AddField adds n calls of a store counter (Field's spelling); false for a
// name that is not one.
func (h *Histogram) AddField(field string, n int64) bool {
	if len(field) < 2 || n < 0 {
		return false
	}
	o := Outcome(0)
	for i := 1; i < len(outcomeLetters); i++ {
		if field[0] == outcomeLetters[i] {
			o = Outcome(i)
		}
	}
	b, err := strconv.Atoi(field[1:])
	if o == OutcomeNone || err != nil || b < 0 || b >= latencyBuckets {
		return false
	}
	if o == OutcomeClient { // an older gate's refused orders: no measure (ClassifyOrder)
		return true
	}
	h.counts[o][b] += n
	h.calls += n
	return true
}

// Add counts one call.
func (h *Histogram) Add(c DownstreamCall) { h.AddField(c.Field(), 1) }

// Calls is the number of calls counted.
func (h *Histogram) Calls() int64 { return h.calls }

// Count is the number of calls of one outcome.
func (h *Histogram) Count(o Outcome) int64 {
	var n int64
	for _, c := range h.counts[o] {
		n += c
	}
	return n
}

// ErrorRate is the share of calls that were overload answers or timeouts.
func (h *Histogram) ErrorRate() float64 {
	if h.calls == 0 {
		return 0
	}
	return float64(h.Count(OutcomeOverload)+h.Count(OutcomeTimeout)) / float64(h.calls)
}

// Quantile is the latency below which share q of the calls (every outcome)
// finished, interpolated within its bucket (log-linearly, by rank): a p95
// that moves by less than a bucket's width moves too, instead of jumping
// from one bucket's middle to the next. 0 without calls.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.calls == 0 {
		return 0
	}
	rank := max(math.Ceil(q*float64(h.calls)), 1)
	var seen int64
	for b := 0; b < latencyBuckets; b++ {
		var in int64
		for o := range h.counts {
			in += h.counts[o][b]
		}
		if in > 0 && float64(seen+in) >= rank {
			return bucketAt(b, (rank-float64(seen)-0.5)/float64(in))
		}
		seen += in
	}
	return bucketLatency(latencyBuckets - 1)
}

// bucketAt is the latency at share f (0 to 1) of bucket b's width.
func bucketAt(b int, f float64) time.Duration {
	return time.Duration(math.Exp2((float64(b)+f)/bucketsPerOctave) * float64(time.Millisecond))
}

// Mean is the calls' mean latency, from the buckets' middles.
func (h *Histogram) Mean() time.Duration {
	if h.calls == 0 {
		return 0
	}
	var sum float64
	for o := range h.counts {
		for b, c := range h.counts[o] {
			sum += float64(c) * float64(bucketLatency(b))
		}
	}
	return time.Duration(sum / float64(h.calls))
}

// StdDev is the calls' standard deviation of latency, from the buckets' middles.
func (h *Histogram) StdDev() time.Duration { return h.stdDev(h.Mean()) }

// stdDev is StdDev around the calls' mean, already known.
func (h *Histogram) stdDev(m time.Duration) time.Duration {
	if h.calls == 0 {
		return 0
	}
	mean := float64(m)
	var sum float64
	for o := range h.counts {
		for b, c := range h.counts[o] {
			d := float64(bucketLatency(b)) - mean
			sum += float64(c) * d * d
		}
	}
	return time.Duration(math.Sqrt(sum / float64(h.calls)))
}

// AdaptWindow is the control window: the gate's measurements of one room
// are handed to the admitter, and the room's effective rate decided, once
// per window (by the store's clock).
const AdaptWindow = time.Second

// The control law's constants (docs/design.md, "Adaptive admission").
const (
	// baseSpan is how long the unloaded latency (base) remembers a window:
	// a slower API is the new base within this span of its last fast window.
	baseSpan = 5 * time.Second
	// capSpan is how long a saturated window's throughput stands for the
	// API's capacity (the capacity known), the level probing climbs back
	// to quickly and holds just under.
	capSpan = 30 * time.Second
	// Queueing is told by a window's p95 over the base p95 (the least of
	// the recent windows'): above queueHigh calls wait for the API; below
	// queueLow the API serves them as fast as it can, and the rate may rise.
	queueLow, queueHigh = 0.02, 0.05
	// queueCalls is the least queue (calls waiting, on average) that is
	// one: below it a few calls' noise in a window's mean looks like one.
	queueCalls = 0.5
	// errorShare of overload answers and timeouts halves the rate.
	errorShare = 0.05
	// minSamples: fewer calls in a window say nothing about latency.
	minSamples = 5
	// Probing raises the rate by probeStep more for every calm window in a
	// row (1%, 2%, … up to maxProbe): gentle next to the capacity it was
	// cut at, quick to find a capacity that has grown.
	probeStep, maxProbe = 0.01, 0.25
	// fastProbe climbs back towards a known capacity, up to nearCap of it.
	fastProbe, nearCap = 1.25, 0.9
	// probeUse: the rate rises only while the API completes at least this
	// share of it. Visitors learn of their admission at their next poll, so
	// a raised rate reaches the API seconds later; probing on before it has
	// would run the rate far past the API's capacity unseen (a hidden line
	// of admitted visitors that floods the API at its next slowdown).
	// Probing is thus clocked by the visitors' own arrivals, as TCP's window
	// is by its acknowledgements; climbing back towards a capacity measured
	// within capSpan (after errors, say) is not: that capacity is known.
	probeUse = 0.9
	// maxCut bounds one window's cut for latency, as a share of the rate:
	// a latency spike of one window must not throw the rate away.
	maxCut = 0.5
	// keepCap: saturation (a queue lasting two windows) sets the rate to
	// this share of what the API completed, just under its capacity. The queue it holds is drained
	// by a pause (Decision.Debt), not by a lower rate.
	keepCap = 0.95
	// errorCut bounds the cut of a window of refusals: an outage says
	// nothing of the capacity after it, and the line's turns are reckoned
	// at the rate (a deep cut, climbed back from, makes them all late).
	errorCut = 0.8
	// minPause: a pause shorter than this share of a window leaves the
	// next window's calls about as many as the rate.
	minPause = 0.25
	// fasterBase: a base this much below the last one is an API that got
	// faster (its capacity known grows in proportion), not noise.
	fasterBase = 0.8
	// holdCap: below a capacity known, probing creeps (probeStep a window)
	// up to this share of it and holds there: the model's frontier
	// (docs/design.md) puts both targets at about 96-98 % of the capacity.
	holdCap = 0.97
)

// Window is one control window's measurements, as the store hands it over.
type Window struct {
	End      time.Time     // the store's clock at the hand-over
	Duration time.Duration // since the previous hand-over
	Calls    Histogram
	// Backlog: someone waited at the hand-over, so the rate, not demand,
	// bounded admission: only then does a calm API say the rate can rise.
	Backlog bool
}

// ControlState is what the law remembers between windows, kept in the
// store (invocations come and go; several admitters may overlap).
type ControlState struct {
	// Bases are recent windows' mean and p95 latencies (ms): their
	// minima are the API's unloaded latency, the base.
	Bases []Sample `json:"b,omitempty"`
	// Caps is the latest saturated window's completion rate (per second)
	// within capSpan: the API's known capacity.
	Caps []Sample `json:"c,omitempty"`
	// Calm counts the windows in a row that let the rate rise.
	Calm int `json:"n,omitempty"`
	// Paused: the last decision owed a pause (Decision.Debt), so the next
	// window's calls are fewer than the rate for want of admissions (a
	// window of refusals after it says nothing new of the capacity).
	Paused bool `json:"p,omitempty"`
	// Queued is the last window's throughput (calls a second) if it saw a
	// queue at the API, else 0.
	Queued float64 `json:"q,omitempty"`
}

// Sample is one window's value (and p95, for bases) and its end (Unix ms).
type Sample struct {
	At  int64   `json:"t"`
	V   float64 `json:"v"`
	P95 float64 `json:"p,omitempty"`
	// Base, for a capacity: the base mean (ms) it was measured at.
	Base float64 `json:"m,omitempty"`
}

// EncodeControl and DecodeControl are the store's spelling of the state;
// a state that does not decode (none yet, or another version's) is empty.
func EncodeControl(s ControlState) string {
	b, _ := json.Marshal(s) // of plain numbers: cannot fail
	return string(b)
}

func DecodeControl(text string) ControlState {
	var s ControlState
	if json.Unmarshal([]byte(text), &s) != nil {
		return ControlState{}
	}
	return s
}

// Decision is the law's answer for one window.
type Decision struct {
	Rate      float64       // the next effective rate
	P95       time.Duration // the window's p95; 0 without calls
	ErrorRate float64
	Reason    string // for logs and tests: errors, queueing, probe, hold
	// Debt: admit nobody until this many visitors would have been admitted
	// at Rate (the room's budget starts again at -Debt): a pause that
	// drains the API's queue without a lower rate. 0: none.
	Debt float64
}

// Summary is what the law reads of one window, computed once from its
// histogram (a quantile and the moments each walk every bucket).
type Summary struct {
	End        int64   // the hand-over, Unix ms
	Seconds    float64 // the window's length
	Calls      int64
	Served     int64 // calls that were neither overload answers nor timeouts
	ErrorRate  float64
	P95        time.Duration // 0 without calls
	MeanMs     float64
	StdDevMs   float64
	Throughput float64 // calls completed a second
	Backlog    bool    // Window.Backlog
}

// Summary reads the window once.
func (w Window) Summary() Summary {
	s := Summary{End: w.End.UnixMilli(), Seconds: w.Duration.Seconds(), Calls: w.Calls.Calls(), Backlog: w.Backlog}
	if s.Calls == 0 {
		return s
	}
	failed := w.Calls.Count(OutcomeOverload) + w.Calls.Count(OutcomeTimeout)
	mean := w.Calls.Mean()
	s.Served, s.ErrorRate, s.P95 = s.Calls-failed, float64(failed)/float64(s.Calls), w.Calls.Quantile(0.95)
	s.MeanMs, s.StdDevMs = millis(mean), millis(w.Calls.stdDev(mean))
	if s.Seconds > 0 {
		s.Throughput = float64(s.Calls) / s.Seconds
	}
	return s
}

// Next is the law: the effective rate after window w, from the current
// rate, and the state to keep. A pure function of its arguments.
func (a Adaptive) Next(rate float64, w Window, st ControlState) (Decision, ControlState) {
	return a.next(rate, w.Summary(), st)
}

// next is the law on a window's summary.
func (a Adaptive) next(rate float64, w Summary, st ControlState) (Decision, ControlState) {
	d := Decision{Rate: rate, P95: w.P95, ErrorRate: w.ErrorRate, Reason: "hold"}
	st.Bases = recent(st.Bases, w.End, baseSpan)
	st.Caps = recent(st.Caps, w.End, capSpan)
	if w.Calls == 0 || w.Seconds <= 0 {
		return d, st
	}
	r := st.read(w)
	calm, queued := 0, 0.0
	switch {
	case w.ErrorRate > errorShare:
		d = refused(d, w, st.Paused)
	case w.Calls < minSamples:
	case r.queue > queueCalls && (r.excess > queueHigh || r.excess > queueLow && millis(d.P95) > float64(a.TargetP95Ms)):
		d, queued = st.queueing(d, w, r), w.Throughput
	case (r.excess < queueLow || r.queue < queueCalls/2) && w.Backlog && (w.Throughput >= probeUse*rate || rate < nearCap*r.known):
		calm = st.Calm + 1
		d = probe(d, calm, r.known)
	}
	d.Rate = a.Clamp(d.Rate)
	// The floor (issue 32, docs/API.md): a pause withholds at most what the
	// next window would admit beyond minRatePerSec, so admission never stops.
	// A queue bigger than that is still there at the next window, which
	// pauses again (as saturation); refusals pause a window at a time anyway.
	d.Debt = min(d.Debt, (d.Rate-a.MinRatePerSec)*AdaptWindow.Seconds())
	st.Calm, st.Queued, st.Paused = calm, queued, d.Debt >= minPause*d.Rate*w.Seconds
	return d, st
}

// reading is a window read against what the law remembers.
type reading struct {
	base, baseP95 float64 // the API's unloaded mean and p95 (ms): the bases' least
	excess        float64 // the window's p95 over the base p95, less 1
	queue         float64 // calls waiting at the API, on average
	known         float64 // the capacity known (calls a second), 0 if none
}

// read remembers the window's latency as a base (when it says something
// of the service time) and reads the window against the bases.
func (st *ControlState) read(w Summary) reading {
	if w.Calls >= minSamples && w.ErrorRate <= errorShare { // fast refusals say nothing of the service time
		st.Bases = append(st.Bases, Sample{At: w.End, V: w.MeanMs, P95: millis(w.P95)})
	}
	var r reading
	r.base, r.baseP95 = lowest(st.Bases)
	for i := range st.Caps { // the base it was measured at: a slower API's is the base within baseSpan
		st.Caps[i].Base = max(st.Caps[i].Base, r.base)
	}
	// Vegas: the queue at the API in calls (Little: throughput × the time
	// over base), and as a share of the unloaded latency. The queue counts
	// only beyond two standard errors of the window's mean: a few dozen
	// calls' noise against a base that is the least of several windows'
	// must not read as one.
	noise := 2 * w.StdDevMs / math.Sqrt(float64(w.Calls))
	r.excess, r.queue = millis(w.P95)/r.baseP95-1, w.Throughput*(w.MeanMs-r.base-noise)/1000
	r.known = known(st.Caps, r.base)
	return r
}

// refused: the API refuses. Admit nobody in the next window (visitors
// admitted now would only retry against it). The first window of refusals
// lowers the rate to what the API still served (a load-shedding API's
// capacity), by errorCut at most.
func refused(d Decision, w Summary, paused bool) Decision {
	rate := d.Rate
	d.Debt, d.Reason = rate*w.Seconds, "errors"
	if !paused {
		served := float64(w.Served) / w.Seconds
		d.Rate = min(rate, max(served*keepCap, rate*errorCut))
	}
	return d
}

// queueing: calls wait for the API. The queue is drained by a pause as
// long as it takes to admit as many visitors as it holds, not by a lower
// rate: the line's turns, reckoned at a cut rate, would be late once it
// climbed back, and the visitors reach the API together (docs/design.md).
// One window of it may be a hiccup of the API (a garbage collector's
// pause), which completes fewer calls for a moment whatever its capacity:
// the rate holds. A queue that lasts into the next window is saturation:
// the API's capacity is what it completed, the more of the two windows (a
// pause in the first idles the API in the second), and the rate goes just
// under it. (A p95 above the target with no queue is the API's own pace:
// cutting cannot help; next does not come here.)
func (st *ControlState) queueing(d Decision, w Summary, r reading) Decision {
	rate := d.Rate
	if st.Queued > 0 {
		capacity := max(w.Throughput, st.Queued)
		st.Caps = []Sample{{At: w.End, V: capacity, Base: r.base}} // the latest: the API may have slowed
		d.Rate = min(rate, max(capacity*keepCap, rate*maxCut))
	}
	d.Debt, d.Reason = r.queue, "queueing"
	return d
}

// probe raises the rate after calm windows in a row: by probeStep more for
// each, or, below a capacity known c, back quickly to nearCap of it, then
// creeping up to holdCap of it, and holding there.
func probe(d Decision, calm int, c float64) Decision {
	rate := d.Rate
	d.Rate, d.Reason = rate*(1+min(maxProbe, probeStep*float64(calm))), "probe"
	if c > 0 && rate < c {
		d.Rate = max(rate, min(rate*fastProbe, nearCap*c), min(rate*(1+probeStep), holdCap*c))
	}
	if d.Rate == rate {
		d.Reason = "hold"
	}
	return d
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// recent keeps the samples within span of now.
func recent(s []Sample, now int64, span time.Duration) []Sample {
	out := s[:0:0]
	for _, x := range s {
		if now-x.At < span.Milliseconds() && x.At <= now {
			out = append(out, x)
		}
	}
	return out
}

// lowest is the samples' least mean and least p95.
func lowest(s []Sample) (mean, p95 float64) {
	for i, x := range s {
		if i == 0 || x.V < mean {
			mean = x.V
		}
		if i == 0 || x.P95 < p95 {
			p95 = x.P95
		}
	}
	return mean, p95
}

// known is the capacity known: the latest saturated window's throughput,
// grown in the ratio of the service times if the API got faster since (by
// Little's law, as many connections serve more calls a second).
func known(caps []Sample, base float64) float64 {
	c := 0.0
	for _, x := range caps {
		v := x.V
		if base > 0 && base < fasterBase*x.Base {
			v *= x.Base / base
		}
		c = max(c, v)
	}
	return c
}
