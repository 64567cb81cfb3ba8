package main

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/infra/cost"
)

const testEdgeRateLimit = 1200

// Without edgeRateLimit there is no web ACL (it has a monthly fee), with
// or without the page.
func TestNoEdgeRuleByDefault(t *testing.T) {
	_, stacks := documentedConfigurations(t)
	for _, name := range []string{"default", "page"} {
		s := stacks[name]
		if n := len(s.resources("AWS::WAFv2::WebACL")); n != 0 {
			t.Errorf("%s: %d web ACLs without edgeRateLimit", name, n)
		}
		if name == "page" {
			if id := s.distribution(t)["WebACLId"]; id != nil {
				t.Errorf("page: the distribution has web ACL %s without edgeRateLimit", js(id))
			}
		}
	}
}

// edgeProps: the page on CloudFront with a per-client rate rule.
func edgeProps(p *WaitroomProps) {
	anonymousProps(p)
	p.EdgeRateLimit = testEdgeRateLimit
}

// With edgeRateLimit=N: a CloudFront-scoped web ACL on the page's
// distribution (which fronts the API: every visitor's request passes it)
// blocks a client address past N requests in 5 minutes with the API's own
// 429 rate_limited and a Retry-After, and lets everything else through;
// the template refuses to deploy outside us-east-1, where AWS WAF for
// CloudFront lives.
func TestEdgeRateRule(t *testing.T) {
	s := synthesize(t, edgeProps)
	acls := s.resources("AWS::WAFv2::WebACL")
	id := onlyKey(t, acls, "")
	acl := props(acls[id])
	if acl["Scope"] != "CLOUDFRONT" || js(acl["DefaultAction"]) != `{"Allow":{}}` {
		t.Errorf("web ACL %s", js(acl))
	}
	rules := asSlice(acl["Rules"])
	if len(rules) != 1 {
		t.Fatalf("rules %s, want the rate rule alone", js(rules))
	}
	rule := rules[0].(map[string]any)
	rate := rule["Statement"].(map[string]any)["RateBasedStatement"].(map[string]any)
	if rate["Limit"] != float64(testEdgeRateLimit) || rate["AggregateKeyType"] != "IP" || rate["EvaluationWindowSec"] != float64(300) || rate["ScopeDownStatement"] != nil {
		t.Errorf("rate statement %s, want %d requests per client address per 300 s", js(rate), testEdgeRateLimit)
	}
	block := rule["Action"].(map[string]any)["Block"].(map[string]any)["CustomResponse"].(map[string]any)
	if block["ResponseCode"] != float64(429) || !strings.Contains(js(block["ResponseHeaders"]), `"Name":"Retry-After"`) {
		t.Errorf("block answer %s, want 429 with Retry-After", js(block))
	}
	body := acl["CustomResponseBodies"].(map[string]any)[block["CustomResponseBodyKey"].(string)].(map[string]any)
	if body["ContentType"] != "APPLICATION_JSON" || !strings.Contains(body["Content"].(string), `"error":"rate_limited"`) {
		t.Errorf("block body %s, want the API's rate_limited", js(body))
	}
	if got := js(s.distribution(t)["WebACLId"]); got != getAttArn(id) {
		t.Errorf("the distribution's web ACL is %s, want %s", got, getAttArn(id))
	}
	rulesJS := js(s.json["Rules"])
	if !strings.Contains(rulesJS, `"AWS::Region"`) || !strings.Contains(rulesJS, `"us-east-1"`) || !strings.Contains(rulesJS, "edgeRateLimit") {
		t.Errorf("template rules %s, want the region asserted us-east-1 with a message naming edgeRateLimit", rulesJS)
	}
}

// The rule needs CloudFront in front of the API (AWS WAF cannot protect
// an HTTP API), a limit one visitor polling at the fastest tier stays
// under, and, when the stack's region is known, us-east-1.
func TestEdgeRateLimitValidation(t *testing.T) {
	bad := map[string]struct {
		mutate  func(*WaitroomProps)
		setting string
	}{
		"without CloudFront": {func(p *WaitroomProps) { p.EdgeRateLimit = testEdgeRateLimit }, "anonymousVisitors"},
		"below one visitor":  {func(p *WaitroomProps) { edgeProps(p); p.EdgeRateLimit = 50 }, "edgeRateLimit"},
		"negative":           {func(p *WaitroomProps) { edgeProps(p); p.EdgeRateLimit = -1 }, "edgeRateLimit"},
		"beyond AWS WAF":     {func(p *WaitroomProps) { edgeProps(p); p.EdgeRateLimit = 3_000_000_000 }, "edgeRateLimit"},
		"another region": {func(p *WaitroomProps) {
			edgeProps(p)
			p.StackProps.Env = &awscdk.Environment{Region: jsii.String("eu-west-1")}
		}, "us-east-1"},
	}
	for name, c := range bad {
		p := baseProps()
		c.mutate(&p)
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
		if _, err := NewWaitroomStack(app, "Waitroom", p); err == nil || !strings.Contains(err.Error(), c.setting) {
			t.Errorf("%s: %v, want an error naming %s", name, err, c.setting)
		}
	}
	if got := mustProps(t, map[string]any{CtxEdgeRateLimit: "600"}); got.EdgeRateLimit != 600 {
		t.Errorf("edgeRateLimit from context: %d", got.EdgeRateLimit)
	}
	if min := minEdgeRateLimit(baseProps().WithDefaults("Waitroom")); min < 30 || min > 1000 {
		t.Errorf("the least limit with the default poll tiers is %d", min)
	}
}

// TestEdgeRateLimitLetsAPageThrough: the page fetches the line at a
// poller's pace (issue 36), so the least edgeRateLimit, one visitor's polls
// at the fastest tier, still lets a page visitor through: its line fetches
// and API requests over a wait of the rule's window, and its page files
// (edgeVisitorExtra's share), stay under it for every tier table.
func TestEdgeRateLimitLetsAPageThrough(t *testing.T) {
	const pageFiles = 10 // the page's files and its config, a reload's worth
	for _, tiers := range []string{waitroom.DefaultPollTiers, "60:10000,10:5000,0:2000", "0:100"} {
		p := baseProps()
		p.PollTiers = tiers
		limit := minEdgeRateLimit(p.WithDefaults("Waitroom"))
		cfg, err := cost.ConfigFromEnv(map[string]string{"POLL_TIERS": tiers})
		if err != nil {
			t.Fatal(err)
		}
		w, err := cost.WalkPage(cfg, edgeWindowSeconds)
		if err != nil {
			t.Fatal(err)
		}
		if sent := w.ViewerRequests() + pageFiles; sent > limit {
			t.Errorf("tiers %s: a page visitor sends %d requests in %d s (%d line fetches), over the least edgeRateLimit %d",
				tiers, sent, edgeWindowSeconds, w.LineFetches, limit)
		}
	}
}
