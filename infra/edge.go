package main

import (
	"fmt"
	"math"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awswafv2"
	"github.com/aws/jsii-runtime-go"

	"github.com/waitroom/waitroom"
)

// CtxEdgeRateLimit is the per-client rate rule at the edge: requests a
// client address may send through CloudFront in 5 minutes (issue 32).
const CtxEdgeRateLimit = "edgeRateLimit"

// The rate rule's window and AWS WAF's bounds of its limit.
const (
	edgeWindowSeconds = 300
	edgeLimitMax      = 2_000_000_000
	// edgeVisitorExtra is what a visitor sends in a window besides its
	// tier polls: the page's files and a reload or two, its enter, the
	// poll at its turn, its orders.
	edgeVisitorExtra = 50
	// edgeRetryAfter is the Retry-After of a blocked request: AWS WAF
	// re-counts an address about every 10 s and lets it through once its
	// last 5 minutes are under the limit again.
	edgeRetryAfter = 60
)

// minEdgeRateLimit is the least edgeRateLimit: one visitor polling at the
// fastest tier (its poll time 20 % early, POLL_TIERS' spread) for the
// whole window, and edgeVisitorExtra, so that a visitor alone behind its
// address is never blocked. The page fetches the line at the same pace
// (the farthest tier while paused or stalled) and asks its position only at
// its turn (cost.WalkPage; TestEdgeRateLimitLetsAPageThrough).
func minEdgeRateLimit(p WaitroomProps) int {
	tiers, err := waitroom.ParsePollTiers(p.PollTiersEnv())
	fastest := int64(math.MaxInt64)
	for _, t := range tiers {
		fastest = min(fastest, t.PollMs)
	}
	if err != nil || fastest <= 0 {
		return edgeLimitMax // validateConfig refuses the tiers first
	}
	return int(math.Ceil(edgeWindowSeconds*1000/(0.8*float64(fastest)))) + edgeVisitorExtra
}

// validateEdge: the rule sits on the page's CloudFront distribution,
// which fronts the API only with anonymous visitors (AWS WAF cannot be
// attached to an API Gateway HTTP API); a web ACL for CloudFront is
// created in us-east-1 only; the limit lets one visitor through.
func (p WaitroomProps) validateEdge() error {
	switch {
	case p.EdgeRateLimit == 0:
		return nil
	case !p.AnonymousVisitors:
		return fmt.Errorf("waitroom: edgeRateLimit needs CloudFront in front of the API, which the stack puts there with anonymousVisitors=true " +
			"(AWS WAF cannot be attached to an API Gateway HTTP API); behind your own proxy or CDN, limit there")
	case p.EdgeRateLimit < minEdgeRateLimit(p) || p.EdgeRateLimit > edgeLimitMax:
		return fmt.Errorf("waitroom: edgeRateLimit %d: want requests per client address in 5 minutes, from %d (one visitor polling at the "+
			"fastest of pollTiers, and the page) to %d", p.EdgeRateLimit, minEdgeRateLimit(p), edgeLimitMax)
	}
	if r := p.StackProps.Env; r != nil && r.Region != nil && !*awscdk.Token_IsUnresolved(r.Region) && *r.Region != "us-east-1" {
		return fmt.Errorf("waitroom: edgeRateLimit: AWS WAF for CloudFront lives in us-east-1, and this stack's region is %s: "+
			"deploy the stack in us-east-1, or leave edgeRateLimit out and attach a web ACL of your own to the distribution", *r.Region)
	}
	return nil
}

// newEdgeRateRule is the web ACL of the page's distribution with
// edgeRateLimit, its ARN (nil without the flag): a client address past the
// limit in 5 minutes gets the API's own 429 rate_limited with Retry-After
// until its count falls under it; every other request goes on to
// CloudFront. CloudFront gives AWS WAF the viewer's own address (not an
// edge's), which no header can change. A CLOUDFRONT-scoped web ACL exists
// in us-east-1 only: the template's rule refuses a deploy elsewhere before
// anything is created, where synthesis could not know the region.
func newEdgeRateRule(stack awscdk.Stack, p WaitroomProps) *string {
	if p.EdgeRateLimit == 0 {
		return nil
	}
	awscdk.NewCfnRule(stack, jsii.String("EdgeRateRuleRegion"), &awscdk.CfnRuleProps{
		Assertions: &[]*awscdk.CfnRuleAssertion{{
			Assert: awscdk.Fn_ConditionEquals(awscdk.Aws_REGION(), jsii.String("us-east-1")),
			AssertDescription: jsii.String("edgeRateLimit: AWS WAF for CloudFront lives in us-east-1; deploy this stack there, " +
				"or deploy without edgeRateLimit"),
		}},
	})
	visibility := func(name string) *awswafv2.CfnWebACL_VisibilityConfigProperty {
		return &awswafv2.CfnWebACL_VisibilityConfigProperty{
			CloudWatchMetricsEnabled: jsii.Bool(true), SampledRequestsEnabled: jsii.Bool(true), MetricName: jsii.String(p.NamePrefix + "-" + name),
		}
	}
	acl := awswafv2.NewCfnWebACL(stack, jsii.String("EdgeRateRule"), &awswafv2.CfnWebACLProps{
		Description:      jsii.String(fmt.Sprintf("Waitroom: at most %d requests per client address in 5 minutes, edgeRateLimit", p.EdgeRateLimit)), // cfn-lint E3031: no parentheses
		Scope:            jsii.String("CLOUDFRONT"),
		DefaultAction:    &awswafv2.CfnWebACL_DefaultActionProperty{Allow: &awswafv2.CfnWebACL_AllowActionProperty{}},
		VisibilityConfig: visibility("edge"),
		CustomResponseBodies: map[string]any{"rate_limited": &awswafv2.CfnWebACL_CustomResponseBodyProperty{
			ContentType: jsii.String("APPLICATION_JSON"),
			Content:     jsii.String(`{"error":"rate_limited","message":"too many requests from your address; retry after the time in Retry-After"}`),
		}},
		Rules: &[]any{&awswafv2.CfnWebACL_RuleProperty{
			Name:     jsii.String("per-client-rate"),
			Priority: jsii.Number(0),
			Statement: &awswafv2.CfnWebACL_StatementProperty{RateBasedStatement: &awswafv2.CfnWebACL_RateBasedStatementProperty{
				Limit: jsii.Number(float64(p.EdgeRateLimit)), AggregateKeyType: jsii.String("IP"), EvaluationWindowSec: jsii.Number(edgeWindowSeconds),
			}},
			Action: &awswafv2.CfnWebACL_RuleActionProperty{Block: &awswafv2.CfnWebACL_BlockActionProperty{
				CustomResponse: &awswafv2.CfnWebACL_CustomResponseProperty{
					ResponseCode:          jsii.Number(429),
					CustomResponseBodyKey: jsii.String("rate_limited"),
					ResponseHeaders: &[]any{&awswafv2.CfnWebACL_CustomHTTPHeaderProperty{
						Name: jsii.String("Retry-After"), Value: jsii.String(strconv.Itoa(edgeRetryAfter)),
					}},
				},
			}},
			VisibilityConfig: visibility("edge-rate"),
		}},
	})
	return acl.AttrArn()
}
