package awslambda_test

import (
	"bytes"
	"context"
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

// A limiter that cannot run lets requests through, counts each, and logs
// at most once a minute.
func TestLimiterFailOpenIsCountedAndLoggedOnce(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine, func(c *waitroom.Config) {
			c.Trust.Limits = waitroom.Limits{ClientRatePerSec: 1, ClientBurst: 1, IPRatePerSec: 1, IPBurst: 1}
		})
		var rec, logs bytes.Buffer
		h.api.Metrics = metrics.NewRecorder(&rec)
		h.api.Log = slog.New(slog.NewJSONHandler(&logs, nil))
		h.redis.Client().Set(context.Background(), "wr:{default}:rl:ip:192.0.2.9", "not a hash", 0)
		for i := 0; i < 3; i++ {
			if r := h.call(withSource("192.0.2.9", request("GET", "/queue/position", "u", nil))); r.StatusCode != 200 {
				t.Fatalf("fail-open poll %d: %d %s", i, r.StatusCode, r.Body)
			}
		}
		if n := strings.Count(rec.String(), `"`+metrics.LimiterFailOpen+`":1`); n != 3 {
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
