package waitroom

import (
	"errors"
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
		{201, nil, OutcomeOK}, {299, nil, OutcomeOK}, {409, nil, OutcomeClient}, {302, nil, OutcomeClient},
		{429, nil, OutcomeOverload}, {503, nil, OutcomeOverload}, {500, nil, OutcomeOverload},
		{0, errors.New("timeout"), OutcomeTimeout},
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
	// Calls waiting: the rate goes to what the API completed, less its queue.
	d, st = a.Next(150, window(100, 400*time.Millisecond, OutcomeOK, 5*time.Second), st)
	if d.Reason != "queueing" || d.Rate >= 100 || d.Rate < 50 {
		t.Fatalf("queueing: %+v", d)
	}
	// Errors halve it, never below the minimum.
	if d, _ = a.Next(100, window(100, 5*time.Millisecond, OutcomeOverload, 6*time.Second), st); d.Reason != "errors" || d.Rate != 50 {
		t.Fatalf("errors: %+v", d)
	}
	if d, _ = a.Next(12, window(100, 5*time.Millisecond, OutcomeTimeout, 6*time.Second), st); d.Rate != 10 {
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
	// Well below the capacity measured 5 s ago (100/s), the rate climbs back
	// whatever the API completes yet.
	if d, _ = a.Next(60, window(40, 200*time.Millisecond, OutcomeOK, 10*time.Second), st); d.Reason != "probe" || d.Rate <= 60 {
		t.Fatalf("climbing back to a known capacity: %+v", d)
	}
}

// The state survives the store's spelling; a foreign one is a fresh start.
func TestControlStateRoundTrip(t *testing.T) {
	st := ControlState{Bases: []Sample{{At: 5, V: 200, P95: 230}}, Caps: []Sample{{At: 5, V: 99.5}}, Calm: 3}
	got := DecodeControl(EncodeControl(st))
	if len(got.Bases) != 1 || got.Bases[0] != st.Bases[0] || got.Caps[0] != st.Caps[0] || got.Calm != 3 {
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
