package waitroom

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestClassifyOrder(t *testing.T) {
	for _, c := range []struct {
		status int
		err    error
		want   Outcome
	}{
		{201, nil, OutcomeOK}, {299, nil, OutcomeOK},
		// Refused orders and the caller's own abort weigh in no measure (issue 32).
		{409, nil, OutcomeNone}, {302, nil, OutcomeNone}, {400, nil, OutcomeNone}, {404, nil, OutcomeNone},
		{0, context.Canceled, OutcomeNone}, {0, fmt.Errorf("order: %w", &url.Error{Op: "Post", Err: context.Canceled}), OutcomeNone},
		{429, nil, OutcomeOverload}, {503, nil, OutcomeOverload}, {500, nil, OutcomeOverload},
		{0, errors.New("timeout"), OutcomeTimeout}, {0, context.DeadlineExceeded, OutcomeTimeout},
	} {
		if got := ClassifyOrder(c.status, c.err); got != c.want {
			t.Errorf("status %d err %v: %d, want %d", c.status, c.err, got, c.want)
		}
	}
}

// A call's counter names its outcome and a bucket 4.4% wide: the histogram
// read back from those names gives quantiles within a bucket.
func TestHistogramFromStoreFields(t *testing.T) {
	var h Histogram
	for i := 1; i <= 100; i++ {
		h.Add(DownstreamCall{Latency: time.Duration(i) * 10 * time.Millisecond, Outcome: OutcomeOK})
	}
	if f := (DownstreamCall{Latency: 250 * time.Millisecond, Outcome: OutcomeTimeout}).Field(); !h.AddField(f, 5) || !strings.HasPrefix(f, "t") {
		t.Fatalf("field %q", f)
	}
	for _, bad := range []string{"", "o", "x12", "o-1", "o99999", "oabc"} {
		if h.AddField(bad, 1) {
			t.Errorf("%q counted", bad)
		}
	}
	if (DownstreamCall{}).Field() != "" {
		t.Error("no call has a field")
	}
	if !h.AddField("c12", 7) { // an older gate's refused orders: read, and in no measure (issue 32)
		t.Error("c12 refused")
	}
	if h.Calls() != 105 || h.Count(OutcomeTimeout) != 5 || h.ErrorRate() != 5.0/105 {
		t.Fatalf("calls %d timeouts %d error rate %g", h.Calls(), h.Count(OutcomeTimeout), h.ErrorRate())
	}
	for q, want := range map[float64]time.Duration{0.5: 500 * time.Millisecond, 0.95: 950 * time.Millisecond} {
		got := h.Quantile(q)
		if got < want*95/100 || got > want*105/100 {
			t.Errorf("quantile %g: %v, want %v within a bucket", q, got, want)
		}
	}
	if m := h.Mean(); m < 480*time.Millisecond || m > 520*time.Millisecond {
		t.Errorf("mean %v", m)
	}
	var long Histogram
	long.Add(DownstreamCall{Latency: time.Hour, Outcome: OutcomeOK})
	if long.Quantile(1) < 15*time.Minute {
		t.Errorf("a call beyond the buckets lands in the last: %v", long.Quantile(1))
	}
}

// A p95 that moves by less than a bucket's width moves too: read at the
// buckets' middles it would stay put or jump a whole bucket (4.4%), and a
// steady API would look calm in one window and not in the next.
func TestQuantileInterpolatesWithinABucket(t *testing.T) {
	p95 := func(scale float64) time.Duration {
		var h Histogram
		for i := range 1000 { // uniform from 200 to 240 ms
			h.Add(DownstreamCall{Latency: time.Duration(scale * float64(200*time.Millisecond+time.Duration(i)*40*time.Millisecond/1000)), Outcome: OutcomeOK})
		}
		return h.Quantile(0.95)
	}
	base, got := p95(1), p95(1.015)
	if r := float64(got) / float64(base); r < 1.005 || r > 1.025 {
		t.Errorf("latencies 1.5%% longer: p95 %v against %v (× %.3f)", got, base, r)
	}
	if base < 234*time.Millisecond || base > 242*time.Millisecond {
		t.Errorf("p95 %v, want about 238ms", base)
	}
}

func window(calls int, latency time.Duration, outcome Outcome, end time.Duration) Window {
	var h Histogram
	for i := 0; i < calls; i++ {
		h.Add(DownstreamCall{Latency: latency + time.Duration(i%10)*time.Millisecond, Outcome: outcome})
	}
	return Window{End: time.Unix(1000, 0).Add(end), Duration: time.Second, Calls: h, Backlog: true}
}

func TestAdaptiveLawDirections(t *testing.T) {
	a := Adaptive{TargetP95Ms: 250, MinRatePerSec: 10, MaxRatePerSec: 200}
	var st ControlState
	var d Decision
	for i := range 5 { // a calm API: the rate rises, faster window by window
		prev := d.Rate
		d, st = a.Next(max(100, prev), window(100, 200*time.Millisecond, OutcomeOK, time.Duration(i)*time.Second), st)
		if d.Reason != "probe" || d.Rate <= max(100, prev) {
			t.Fatalf("window %d: %+v", i, d)
		}
	}
	// Calls waiting: the queue (30 calls: 100/s × 300 ms over the base) is
	// drained by a pause as long as admitting that many takes, not by a
	// lower rate; one window of it may be a hiccup of the API: the rate holds.
	calm := st
	d, st = a.Next(150, window(100, 500*time.Millisecond, OutcomeOK, 5*time.Second), st)
	if d.Reason != "queueing" || d.Rate != 150 || d.Debt < 25 || d.Debt > 35 || st.Queued != 100 {
		t.Fatalf("queueing: %+v %+v", d, st)
	}
	// A queue that lasts is saturation: the rate goes just under what the
	// API completed, the more of the two windows (the pause idled it).
	if d, st = a.Next(150, window(50, 500*time.Millisecond, OutcomeOK, 6*time.Second), st); d.Reason != "queueing" || d.Rate != 95 || d.Debt <= 0 {
		t.Fatalf("queueing again: %+v", d)
	}
	if d, st = a.Next(95, window(50, 500*time.Millisecond, OutcomeOK, 7*time.Second), st); d.Rate != 50*keepCap || len(st.Caps) != 1 || st.Caps[0].V != 50 {
		t.Fatalf("saturated: %+v %+v", d, st)
	}
	// The hiccup passed: a calm window probes on from the rate it held.
	_, hiccup := a.Next(150, window(100, 500*time.Millisecond, OutcomeOK, 5*time.Second), calm)
	if d, _ = a.Next(150, window(150, 200*time.Millisecond, OutcomeOK, 6*time.Second), hiccup); d.Reason != "probe" || d.Rate <= 150 {
		t.Fatalf("after a hiccup: %+v", d)
	}
	// Below the capacity known (50/s), the rate creeps up to holdCap of it
	// and holds there.
	var faster ControlState
	if d, faster = a.Next(47.5, window(48, 500*time.Millisecond, OutcomeOK, 10*time.Second), st); d.Reason != "probe" || d.Rate != 47.5*(1+probeStep) {
		t.Fatalf("creeping: %+v", d)
	}
	if d, _ = a.Next(48.2, window(48, 500*time.Millisecond, OutcomeOK, 10*time.Second), st); d.Reason != "probe" || d.Rate != 50*holdCap {
		t.Fatalf("creeping to holdCap: %+v", d)
	}
	if d, _ = a.Next(50*holdCap, window(48, 500*time.Millisecond, OutcomeOK, 10*time.Second), st); d.Reason != "hold" || d.Rate != 50*holdCap {
		t.Fatalf("holding under the capacity known: %+v", d)
	}
	// The API got faster (its base halved): the same connections serve
	// twice the calls, and the rate climbs back quickly towards that.
	d, faster = a.Next(48, window(48, 250*time.Millisecond, OutcomeOK, 11*time.Second), faster)
	if base, _ := lowest(faster.Bases); d.Reason != "probe" || known(faster.Caps, base) < 90 || known(faster.Caps, base) > 110 || d.Rate < 48*fastProbe*0.99 {
		t.Fatalf("a faster API: capacity %v, %+v", known(faster.Caps, base), d)
	}
	// A pause of less than a quarter of a window leaves the next window's
	// calls about as many as the rate: refusals then cut as a first window.
	var small ControlState
	for i := range 5 {
		_, small = a.Next(100, window(100, 200*time.Millisecond, OutcomeOK, time.Duration(i)*time.Second), small)
	}
	if d, small = a.Next(100, window(100, 225*time.Millisecond, OutcomeOK, 5*time.Second), small); d.Reason != "queueing" || d.Debt <= 0 || small.Paused {
		t.Fatalf("a small queue: %+v %+v", d, small)
	}
	if d, _ = a.Next(100, window(100, 5*time.Millisecond, OutcomeOverload, 6*time.Second), small); d.Reason != "errors" || d.Rate != 80 {
		t.Fatalf("errors after a short pause: %+v", d)
	}
	// Refusals pause the next window and cut the rate by a fifth at most
	// (an outage says nothing of the capacity after it); while they last,
	// the rate holds. The pause keeps admitting at minRatePerSec (10): it
	// withholds the window's admissions beyond it, 80 - 10.
	var fresh ControlState
	d, paused := a.Next(100, window(100, 5*time.Millisecond, OutcomeOverload, 6*time.Second), fresh)
	if d.Reason != "errors" || d.Rate != 80 || d.Debt != 70 {
		t.Fatalf("errors: %+v", d)
	}
	if d, _ = a.Next(80, window(100, 5*time.Millisecond, OutcomeOverload, 7*time.Second), paused); d.Rate != 80 || d.Debt != 70 {
		t.Fatalf("errors go on: %+v", d)
	}
	// A load-shedding API: the rate goes to what it served.
	var shed Histogram
	for i := range 100 {
		o := OutcomeOK
		if i%10 == 0 {
			o = OutcomeOverload
		}
		shed.Add(DownstreamCall{Latency: 200 * time.Millisecond, Outcome: o})
	}
	if d, _ = a.Next(100, Window{End: time.Unix(1006, 0), Duration: time.Second, Calls: shed, Backlog: true}, fresh); d.Rate != 90*keepCap {
		t.Fatalf("shedding: %+v", d)
	}
	if d, _ = a.Next(12, window(100, 5*time.Millisecond, OutcomeTimeout, 6*time.Second), fresh); d.Rate != 10 {
		t.Fatalf("the minimum: %+v", d)
	}
	// Nobody waiting: a calm API says nothing about a higher rate.
	w := window(100, 200*time.Millisecond, OutcomeOK, 7*time.Second)
	w.Backlog = false
	if d, _ = a.Next(100, w, st); d.Reason != "hold" || d.Rate != 100 {
		t.Fatalf("no backlog: %+v", d)
	}
	// No calls: nothing to go by.
	if d, _ = a.Next(100, window(0, 0, OutcomeOK, 8*time.Second), st); d.Rate != 100 || d.P95 != 0 {
		t.Fatalf("no calls: %+v", d)
	}
	// The maximum holds.
	if d, _ = a.Next(199, window(200, 200*time.Millisecond, OutcomeOK, 9*time.Second), st); d.Rate != 200 {
		t.Fatalf("the maximum: %+v", d)
	}
	// A calm API that completes less than probeUse of the rate has not seen
	// the last rise yet (visitors learn of it at their next poll): no probe.
	if d, _ = a.Next(130, window(100, 200*time.Millisecond, OutcomeOK, 10*time.Second), st); d.Reason != "hold" || d.Rate != 130 {
		t.Fatalf("admitted visitors not at the API yet: %+v", d)
	}
	// Well below the capacity measured 3 s ago (50/s), the rate climbs back
	// whatever the API completes yet.
	if d, _ = a.Next(30, window(20, 500*time.Millisecond, OutcomeOK, 10*time.Second), st); d.Reason != "probe" || d.Rate <= 30 {
		t.Fatalf("climbing back to a known capacity: %+v", d)
	}
}

// A few dozen calls' spread around the base is noise, not a queue: the
// base is the least of several windows' means, and a window's mean is off
// by its standard error.
func TestAdaptiveLawTellsNoiseFromAQueue(t *testing.T) {
	a := Adaptive{TargetP95Ms: 250, MinRatePerSec: 10, MaxRatePerSec: 200}
	var st ControlState
	spread := func(calls int, mean time.Duration, end time.Duration) Window {
		var h Histogram
		for i := range calls { // uniform within ±20% of mean
			h.Add(DownstreamCall{Latency: mean * time.Duration(80+40*i/calls) / 100, Outcome: OutcomeOK})
		}
		return Window{End: time.Unix(1000, 0).Add(end), Duration: time.Second, Calls: h, Backlog: true}
	}
	for i := range 5 {
		_, st = a.Next(40, spread(40, 400*time.Millisecond, time.Duration(i)*time.Second), st)
	}
	// 40 calls 5% slower on average than the base: within the noise.
	if d, _ := a.Next(40, spread(40, 420*time.Millisecond, 5*time.Second), st); d.Reason == "queueing" {
		t.Fatalf("noise read as a queue: %+v", d)
	}
	// 40 calls a quarter slower: a queue.
	if d, _ := a.Next(40, spread(40, 500*time.Millisecond, 5*time.Second), st); d.Reason != "queueing" {
		t.Fatalf("a queue missed: %+v", d)
	}
}

// The state survives the store's spelling; a foreign one is a fresh start.
func TestControlStateRoundTrip(t *testing.T) {
	st := ControlState{Bases: []Sample{{At: 5, V: 200, P95: 230}}, Caps: []Sample{{At: 5, V: 99.5}}, Calm: 3, Paused: true}
	got := DecodeControl(EncodeControl(st))
	if len(got.Bases) != 1 || got.Bases[0] != st.Bases[0] || got.Caps[0] != st.Caps[0] || got.Calm != 3 || !got.Paused {
		t.Fatalf("%+v", got)
	}
	if got := DecodeControl("not json"); got.Calm != 0 || got.Bases != nil {
		t.Fatalf("%+v", got)
	}
}

func TestAdaptiveValidateAndSpelling(t *testing.T) {
	for _, c := range []struct {
		a     Adaptive
		field string
	}{
		{Adaptive{0, 1, 2}, "adaptive.targetP95Ms"}, {Adaptive{600_001, 1, 2}, "adaptive.targetP95Ms"},
		{Adaptive{250, 0, 2}, "adaptive.minRatePerSec"}, {Adaptive{250, 1, 2e6}, "adaptive.maxRatePerSec"},
		{Adaptive{250, 20, 10}, "adaptive.minRatePerSec"},
	} {
		err := c.a.Validate()
		if ErrorCode(err) != EInvalidSettings || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%+v: %v", c.a, err)
		}
	}
	a := Adaptive{TargetP95Ms: 250, MinRatePerSec: 0.5, MaxRatePerSec: 1e6}
	if err := a.Validate(); err != nil {
		t.Fatal(err)
	}
	got, err := ParseAdaptive(a.String())
	if err != nil || *got != a || strings.Contains(a.String(), "e") {
		t.Fatalf("%q: %+v %v", a.String(), got, err)
	}
	if got, err := ParseAdaptive(""); got != nil || err != nil {
		t.Fatal("empty is off")
	}
	for _, bad := range []string{"1:2", "x:1:2", "1:y:2", "1:2:z"} {
		if _, err := ParseAdaptive(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if a.Clamp(0.1) != 0.5 || a.Clamp(2e6) != 1e6 || a.Clamp(7) != 7 {
		t.Error("clamp")
	}
}

// The rate never goes below minRatePerSec in admissions (issue 32,
// docs/API.md): whatever the window, a pause owes at most what the next
// window would admit beyond minRatePerSec.
func TestAdaptivePauseKeepsTheFloor(t *testing.T) {
	for _, a := range []Adaptive{{TargetP95Ms: 250, MinRatePerSec: 10, MaxRatePerSec: 200}, {TargetP95Ms: 250, MinRatePerSec: 60, MaxRatePerSec: 200}} {
		var st ControlState
		rate := 100.0
		for i := range 40 {
			o, lat := OutcomeOK, 200*time.Millisecond+time.Duration(i%7)*60*time.Millisecond // queues now and then
			if i%5 == 4 {
				o = OutcomeOverload
			}
			var d Decision
			d, st = a.Next(rate, window(100, lat, o, time.Duration(i)*time.Second), st)
			if admitted := d.Rate*AdaptWindow.Seconds() - d.Debt; admitted < a.MinRatePerSec*AdaptWindow.Seconds()-1e-9 {
				t.Fatalf("min %g, window %d: %+v admits %.1f in the next window", a.MinRatePerSec, i, d, admitted)
			}
			rate = d.Rate
		}
	}
}
