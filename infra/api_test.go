package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/waitroom/waitroom"
)

// The arithmetic: 100,000 users polling by the default tiers send
// about 11,000 requests/s (94,000 far ones every 10 s, 5,000 every 5 s,
// 1,000 every 2 s, the front at its own turn).
func TestExpectedPollRpsOfTheDefaults(t *testing.T) {
	p := WaitroomProps{}.WithDefaults("Waitroom")
	if p.PollTiers != waitroom.DefaultPollTiers {
		t.Fatalf("props default tiers %s, root package %s", p.PollTiers, waitroom.DefaultPollTiers)
	}
	// 0:60000: 100,000 / 60 s ≈ 1,667/s from the places polling once a
	// minute, and ≈ 660/s from the 6,000 nearest the front, each capped at
	// its own turn (infra/README.md, "Throttling").
	got := p.ExpectedPollRps()
	if got < 2_100 || got > 2_400 {
		t.Errorf("expected polls = %.0f/s, want about 2,230", got)
	}
	if want := int(math.Ceil(got * 1.25)); p.PositionRateLimit != want {
		t.Errorf("position limit = %d, want %d (polls × 1.25 for the jitter)", p.PositionRateLimit, want)
	}
	if p.EnterRateLimit != 1667 || p.OrdersRateLimit != 200 {
		t.Errorf("enter %d, orders %d; want 1667 (a full line in a minute) and 200 (twice the admission rate)", p.EnterRateLimit, p.OrdersRateLimit)
	}
}

func TestStageThrottlingPerRouteAndAccessLogs(t *testing.T) {
	s := def(t)
	stages := s.resources("AWS::ApiGatewayV2::Stage")
	id := onlyKey(t, stages, "")
	p := props(stages[id])
	rs := p["RouteSettings"].(map[string]any)
	// The public routes have their own throttles: the JWKS and the room's
	// line (CloudFront-cached, public: a throttle of its own, not the
	// position function's, bounds what a flood of made-up rooms costs).
	want := map[string]int{"POST /queue/enter": s.w.Props.EnterRateLimit, "GET /queue/position": s.w.Props.PositionRateLimit,
		"POST /orders": s.w.Props.OrdersRateLimit, "GET " + JWKSPath: JWKSRateLimit, "GET " + LinePath: LineRateLimit}
	for key, rate := range want {
		got := rs[key].(map[string]any)
		if got["ThrottlingRateLimit"] != float64(rate) || got["ThrottlingBurstLimit"] != float64(2*rate) {
			t.Errorf("%s throttling = %v, want %d/s, burst %d", key, got, rate, 2*rate)
		}
	}
	if drs := p["DefaultRouteSettings"].(map[string]any); drs["DetailedMetricsEnabled"] != true {
		t.Errorf("detailed (per-route) metrics off: %v", drs)
	}
	// RouteSettings name routes that must exist before the stage.
	deps := js(stages[id]["DependsOn"])
	for rid, r := range s.resources("AWS::ApiGatewayV2::Route") {
		if _, throttled := want[props(r)["RouteKey"].(string)]; throttled && !strings.Contains(deps, rid) {
			t.Errorf("stage does not depend on route %s", rid)
		}
	}
	als := p["AccessLogSettings"].(map[string]any)
	var format map[string]string
	if err := json.Unmarshal([]byte(als["Format"].(string)), &format); err != nil || format["status"] != "$context.status" ||
		format["integrationStatus"] != "$context.integrationStatus" {
		t.Errorf("access log format: %v %v", err, als["Format"])
	}
	s.tpl.HasResourceProperties(jsii.String("AWS::Logs::MetricFilter"), map[string]any{
		"FilterPattern":         `{ ($.status = "429") && ($.integrationStatus = "-") }`,
		"MetricTransformations": []any{map[string]any{"MetricNamespace": "Waitroom/Api/waitroom", "MetricName": ApiThrottledMetric, "MetricValue": "1"}},
	})
	// With POLL_TIERS 0:60000 the defaults stay within the account's
	// default quota: synthesis does not warn.
	assertions.Annotations_FromStack(s.w.Stack).HasNoWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("Service Quotas")))
}

// A full line polling every 2 s (50,000/s) exceeds the quota: synthesis says so.
func TestAccountWarningBeyondTheQuota(t *testing.T) {
	s := synthesize(t, func(p *WaitroomProps) { p.PollTiers = "0:2000" })
	assertions.Annotations_FromStack(s.w.Stack).HasWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("Service Quotas")))
}

func TestCORSExplicitOrNone(t *testing.T) {
	s := synthesize(t, func(p *WaitroomProps) { p.CorsAllowOrigins, p.NoCors = nil, true })
	if c := props(s.resources("AWS::ApiGatewayV2::Api")[onlyKey(t, s.resources("AWS::ApiGatewayV2::Api"), "")])["CorsConfiguration"]; c != nil {
		t.Errorf("corsOrigins=none, yet CORS %s", js(c))
	}
	for name, origins := range map[string][]string{"none given": nil, "wildcard": {"*"}, "a path": {"https://shop.example.com/page"}} {
		p := baseProps()
		p.CorsAllowOrigins = origins
		if err := p.WithDefaults("Waitroom").Validate(); err == nil || !strings.Contains(err.Error(), "corsOrigins") {
			t.Errorf("%s: %v, want an error naming corsOrigins", name, err)
		}
	}
}

func TestTrustedProxyNeedsASecretOutsideTheTemplate(t *testing.T) {
	s := synthesize(t, func(p *WaitroomProps) {
		p.JwtIssuer, p.JwtAudience = "", nil
		p.TrustUserHeaderFromProxy, p.ProxySecretSSMParameter = true, "/waitroom/proxy-secret:3"
	})
	s.tpl.ResourceCountIs(jsii.String("AWS::ApiGatewayV2::Authorizer"), jsii.Number(0))
	// The visitors' routes take the proxy's word; the operators' stay IAM.
	for rid, r := range s.resources("AWS::ApiGatewayV2::Route") {
		key, auth := props(r)["RouteKey"].(string), props(r)["AuthorizationType"]
		if admin := strings.Contains(key, " /admin/"); (admin && auth != "AWS_IAM") || (!admin && auth != "NONE") {
			t.Errorf("route %s (%s): authorization %v", rid, key, auth)
		}
	}
	// Only the functions that identify callers believe the header, and hold
	// its secret; admit and admin take no visitor's request.
	for _, name := range Functions {
		vars := s.fnProps(t, name)["Environment"].(map[string]any)["Variables"].(map[string]any)
		trust, secret := vars["TRUST_USER_HEADER"], vars["PROXY_SECRET"]
		if servesVisitors(name) && (trust != "true" || secret != "{{resolve:ssm:/waitroom/proxy-secret:3}}") ||
			!servesVisitors(name) && (trust != nil || secret != nil) {
			t.Errorf("%s TRUST_USER_HEADER=%v PROXY_SECRET=%v", name, trust, secret)
		}
	}
	if v := def(t).fnProps(t, FnEnter)["Environment"].(map[string]any)["Variables"].(map[string]any)["PROXY_SECRET"]; v != nil {
		t.Errorf("PROXY_SECRET with the JWT authorizer: %v", v)
	}
	p := baseProps()
	p.JwtIssuer, p.JwtAudience, p.TrustUserHeaderFromProxy = "", nil, true
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	if _, err := NewWaitroomStack(app, "Waitroom", p); err == nil || !strings.Contains(err.Error(), "proxySecretSsmParameter") {
		t.Errorf("trusted proxy without a secret: %v, want an error naming proxySecretSsmParameter", err)
	}
}
