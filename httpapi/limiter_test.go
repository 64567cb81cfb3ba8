package httpapi_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/metrics"
)

func withSource(ip string, req eventReq) eventReq {
	req.RequestContext.HTTP.SourceIP = ip
	return req
}

// Over the limit: 429 rate_limited with Retry-After, counted, on enter,
// position and orders; the downstream is not called.
func TestRateLimitedAnswers(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine, func(c *waitroom.Config) {
			c.Trust.Limits = waitroom.Limits{ClientRatePerSec: 0.001, ClientBurst: 2, IPRatePerSec: 1000, IPBurst: 1000}
		})
		var rec bytes.Buffer
		h.api.Metrics = metrics.NewRecorder(&rec)
		tokens := h.admitted(t, "u") // enter: one token of u's two
		h.position("u")              // the second
		for _, r := range []eventResp{
			h.call(withSource("192.0.2.1", request("POST", "/queue/enter", "u", nil))),
			h.call(withSource("192.0.2.1", request("GET", "/queue/position", "u", nil))),
			h.order("u", tokens["u"], "", "{}"),
		} {
			wantError(t, r, 429, "rate_limited")
			if r.Headers["Retry-After"] == "" {
				t.Fatalf("no Retry-After: %v", r.Headers)
			}
		}
		if h.down.calls.Load() != 0 {
			t.Fatal("a limited order reached the downstream")
		}
		if n := strings.Count(rec.String(), `"`+metrics.RateLimited+`":1`); n != 3 {
			t.Fatalf("%d %s records, want 3", n, metrics.RateLimited)
		}
	})
}

// The one place the limiter lets calls through unchecked: the broker's
// accept while the store does not answer (the broker is there so that an
// outage loses no newcomer). Each is counted, logged at most once a minute.
func TestLimiterFailOpenIsCountedAndLoggedOnce(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newIntakeHarness(t, engine, waitroom.IntakeBroker, 30)
		var logs bytes.Buffer
		rec := &lockedBuffer{}
		h.api.Metrics = metrics.NewRecorder(rec)
		h.api.Log = slog.New(slog.NewJSONHandler(&logs, nil))
		h.redis.Stop()
		for i := 0; i < 3; i++ {
			if r := h.call(withSource("192.0.2.9", request("POST", "/queue/enter", "u", nil))); r.StatusCode != 202 {
				t.Fatalf("accept %d with the store down: %d %s", i, r.StatusCode, r.Body)
			}
		}
		if n := rec.count(metrics.LimiterFailOpen); n != 3 {
			t.Fatalf("%d %s records, want 3", n, metrics.LimiterFailOpen)
		}
		if n := strings.Count(logs.String(), "abuse limiter could not run"); n > 1 {
			t.Fatalf("%d fail-open log lines within a minute, want at most 1", n)
		}
	})
}

type (
	eventReq  = events.APIGatewayV2HTTPRequest
	eventResp = events.APIGatewayV2HTTPResponse
)
