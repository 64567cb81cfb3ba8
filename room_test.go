package waitroom

import (
	"math"
	"strings"
	"testing"
	"time"
)

// settingsNow is when the changes below are made: the day before the
// opening they name.
var settingsNow = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func TestApplySettingsJSON(t *testing.T) {
	base := Settings{RatePerSec: 100, Capacity: 10, EntryTokenTTLSeconds: 300}
	s, err := ApplySettingsJSON(base, []byte(`{"ratePerSec": 0.25, "opensAt": "2026-11-27T01:00:00+01:00", "maxActive": 5}`), settingsNow)
	if err != nil || s.RatePerSec != 0.25 || s.Capacity != 10 || s.MaxActive != 5 || !s.OpensAt.Equal(time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("%+v %v", s, err)
	}
	if s, err = ApplySettingsJSON(s, []byte(`{"opensAt": null, "paused": true}`), settingsNow); err != nil || s.OpensAt != nil || !s.Paused {
		t.Fatalf("null opensAt opens: %+v %v", s, err)
	}
	if _, err := ApplySettingsJSON(base, []byte(`{"capacity": 1e10}`), settingsNow); ErrorCode(err) != EInvalidSettings {
		t.Fatalf("out of range: %v", err)
	}
	base.InstantAdmit = true
	if s, err = ApplySettingsJSON(base, []byte(`{"instantAdmit": false}`), settingsNow); err != nil || s.InstantAdmit {
		t.Fatalf("instantAdmit off: %+v %v", s, err)
	}
	for _, bad := range []string{`{"instantAdmit": "no"}`, `{"instantAdmit": null}`} {
		if _, err := ApplySettingsJSON(base, []byte(bad), settingsNow); ErrorCode(err) != EInvalidSettings || !strings.Contains(err.Error(), "instantAdmit") {
			t.Errorf("%s: %v, want invalid_settings naming instantAdmit", bad, err)
		}
	}
}

// Issue 34: reopening a sold-out room clears the closing message (the fresh
// line would read "Sold out" beside "It's your turn") unless the reopening
// gives a new one; closing, or any other change, keeps the message.
func TestReopenClearsTheClosingMessage(t *testing.T) {
	sold := Settings{RatePerSec: 100, Capacity: 10, EntryTokenTTLSeconds: 300, Closed: true, Message: "Sold out: all 500 TVs are gone."}
	for _, c := range []struct {
		from Settings
		body string
		want string
	}{
		{sold, `{"closed": false}`, ""},
		{sold, `{"closed": false, "message": "Restocked: 200 more."}`, "Restocked: 200 more."},
		{sold, `{"message": "Sold out. Thank you!"}`, "Sold out. Thank you!"},
		{sold, `{"closed": true}`, sold.Message},
		{sold, `{"ratePerSec": 50}`, sold.Message},
		{Settings{RatePerSec: 100, Capacity: 10, EntryTokenTTLSeconds: 300, Message: "Sizes 40-44 are gone."}, `{"closed": false}`, "Sizes 40-44 are gone."},
	} {
		s, err := ApplySettingsJSON(c.from, []byte(c.body), settingsNow)
		if err != nil || s.Message != c.want {
			t.Errorf("closed %v, %s: message %q (%v), want %q", c.from.Closed, c.body, s.Message, err, c.want)
		}
	}
}

func TestPollingWhenNothingMoves(t *testing.T) {
	tiers, err := ParsePollTiers("60:10000,10:5000,0:2000")
	if err != nil {
		t.Fatal(err)
	}
	c := Config{AdmitRatePerSec: 100, AdmitInterval: 100 * time.Millisecond, PollTiers: tiers}
	if ms := c.FarPollMs(0.5); ms != 10_000 {
		t.Fatalf("far tier %d", ms)
	}
	for u, want := range map[float64]int64{0: 60_100, 0.999: 65_095} { // spread: half the far tier, 5 s
		if got := c.PreQueuePollMs(time.Minute, u); got != want {
			t.Errorf("pre-queue poll at u=%g: %d, want %d", u, got, want)
		}
	}
	if got := c.PreQueuePollMs(24*time.Hour, 0); got != 300_000 {
		t.Errorf("a far opening: %d", got)
	}
	if got := c.PreQueuePollMs(-time.Second, 0); got != 100 {
		t.Errorf("an opening just passed: %d", got)
	}
	c.PollTiers = nil // the default, one tier of 60 s: the spread stays 5 s
	if got := c.PreQueuePollMs(time.Minute, 0.999); got != 65_095 {
		t.Errorf("spread with the default tiers: %d", got)
	}
	c.PollTiers = PollTiers{{MinWaitSeconds: 0, PollMs: 2000}} // half the far tier is shorter: 1 s
	if got := c.PreQueuePollMs(time.Minute, 0.999); got != 61_099 {
		t.Errorf("spread with a 2 s far tier: %d", got)
	}
}

// Past FarHorizon the answer is the far tier whatever happens, which is why
// the store may skip the stall check there.
func TestFarHorizonAnswersTheFarTier(t *testing.T) {
	for _, rate := range []float64{0.01, 0.5, 10, 100, 5000} {
		c := Config{AdmitRatePerSec: rate, AdmitInterval: 100 * time.Millisecond}
		first := int64(math.Ceil(c.FarHorizon().Seconds() * rate))
		for _, p := range []int64{first, first + 1, 3 * first} {
			for _, u := range []float64{0, 0.25, 0.5, 0.999} {
				if got, far := c.PollAfterMs(p, u), c.FarPollMs(u); got != far {
					t.Fatalf("rate %g, position %d, u %g: %d ms, far tier %d ms", rate, p, u, got, far)
				}
			}
		}
	}
}

// adaptive is null or all three fields, patched like the other settings;
// a bad one is refused naming the field.
func TestApplySettingsJSONAdaptive(t *testing.T) {
	base := Settings{RatePerSec: 100, Capacity: 10, EntryTokenTTLSeconds: 300}
	s, err := ApplySettingsJSON(base, []byte(`{"adaptive": {"targetP95Ms": 250, "minRatePerSec": 10, "maxRatePerSec": 200}}`), settingsNow)
	if err != nil || s.Adaptive == nil || *s.Adaptive != (Adaptive{250, 10, 200}) || s.RatePerSec != 100 {
		t.Fatalf("%+v %v", s, err)
	}
	if s, err = ApplySettingsJSON(s, []byte(`{"paused": true}`), settingsNow); err != nil || s.Adaptive == nil {
		t.Fatalf("a patch of another field keeps adaptive: %+v %v", s, err)
	}
	if s, err = ApplySettingsJSON(s, []byte(`{"adaptive": null}`), settingsNow); err != nil || s.Adaptive != nil {
		t.Fatalf("null turns it off: %+v %v", s, err)
	}
	for body, field := range map[string]string{
		`{"adaptive": {"targetP95Ms": 0, "minRatePerSec": 10, "maxRatePerSec": 200}}`:       "adaptive.targetP95Ms",
		`{"adaptive": {"targetP95Ms": 250, "minRatePerSec": 300, "maxRatePerSec": 200}}`:    "adaptive.minRatePerSec",
		`{"adaptive": {"targetP95Ms": 250, "minRatePerSec": 10, "maxRatePerSec": 2000000}}`: "adaptive.maxRatePerSec",
		`{"adaptive": {"targetP95Ms": 250, "minRatePerSec": 10}}`:                           "adaptive has the wrong type",
		`{"adaptive": {"targetP95Ms": 250, "minRatePerSec": 10, "maxRate": 200}}`:           "adaptive has the wrong type",
		`{"adaptive": {"targetP95Ms": 2.5, "minRatePerSec": 10, "maxRatePerSec": 200}}`:     "adaptive has the wrong type",
		`{"adaptive": true}`: "adaptive has the wrong type",
	} {
		_, err := ApplySettingsJSON(base, []byte(body), settingsNow)
		if ErrorCode(err) != EInvalidSettings || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v, want %q", body, err, field)
		}
	}
}

// Issue 37: every limit of a room's settings to the unit: the edge is
// accepted, one past it refused with invalid_settings.
func TestSettingsEdges(t *testing.T) {
	base := Settings{RatePerSec: 100, Capacity: 10, EntryTokenTTLSeconds: 300}
	for name, c := range map[string]struct {
		set func(*Settings)
		ok  bool
	}{
		"the least rate":           {func(s *Settings) { s.RatePerSec = minRate }, true},
		"below the least rate":     {func(s *Settings) { s.RatePerSec = math.Nextafter(minRate, 0) }, false},
		"the most rate":            {func(s *Settings) { s.RatePerSec = maxRate }, true},
		"above the most rate":      {func(s *Settings) { s.RatePerSec = math.Nextafter(maxRate, math.Inf(1)) }, false},
		"capacity 1":               {func(s *Settings) { s.Capacity = 1 }, true},
		"capacity 0":               {func(s *Settings) { s.Capacity = 0 }, false},
		"the most capacity":        {func(s *Settings) { s.Capacity = maxCapacity }, true},
		"above the most capacity":  {func(s *Settings) { s.Capacity = maxCapacity + 1 }, false},
		"the shortest token TTL":   {func(s *Settings) { s.EntryTokenTTLSeconds = minTokenTTL }, true},
		"a token TTL of 0":         {func(s *Settings) { s.EntryTokenTTLSeconds = minTokenTTL - 1 }, false},
		"the longest token TTL":    {func(s *Settings) { s.EntryTokenTTLSeconds = maxTokenTTL }, true},
		"above the longest TTL":    {func(s *Settings) { s.EntryTokenTTLSeconds = maxTokenTTL + 1 }, false},
		"maxActive 0 (no cap)":     {func(s *Settings) { s.MaxActive = 0 }, true},
		"maxActive -1":             {func(s *Settings) { s.MaxActive = -1 }, false},
		"the most maxActive":       {func(s *Settings) { s.MaxActive = maxCapacity }, true},
		"above the most maxActive": {func(s *Settings) { s.MaxActive = maxCapacity + 1 }, false},
		// In characters, not bytes: each of these is three bytes.
		"the longest title":   {func(s *Settings) { s.Title = strings.Repeat("가", MaxTitleLen) }, true},
		"a title too long":    {func(s *Settings) { s.Title = strings.Repeat("가", MaxTitleLen+1) }, false},
		"the longest message": {func(s *Settings) { s.Message = strings.Repeat("가", MaxMessageLen) }, true},
		"a message too long":  {func(s *Settings) { s.Message = strings.Repeat("가", MaxMessageLen+1) }, false},
	} {
		s := base
		c.set(&s)
		if err := s.Validate(); (err == nil) != c.ok || (err != nil && ErrorCode(err) != EInvalidSettings) {
			t.Errorf("%s: %v; want accepted %v", name, err, c.ok)
		}
	}
}
