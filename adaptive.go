package waitroom

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

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
