package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

const (
	testTicketParam       = "/waitroom/ticket-secret:2"
	testOriginSecretParam = "/waitroom/origin-secret:4"
	testAPIDomain         = "api.queue.shop.example"
	testAPICertificate    = "arn:aws:acm:us-east-1:123456789012:certificate/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"
)

// anonymousProps: visitors without an account, no JWT authorizer, the page
// on CloudFront in front of the API (its secret, the API's own domain).
func anonymousProps(p *WaitroomProps) {
	p.JwtIssuer, p.JwtAudience = "", nil
	p.AnonymousVisitors = true
	p.TicketSecretSSMParameter = testTicketParam
	p.OriginSecretSSMParameter = testOriginSecretParam
	p.APIDomainName, p.APICertificateArn = testAPIDomain, testAPICertificate
	p.ContinueURL = "https://shop.example.com/checkout#entryToken={entryToken}"
	p.OrderForwardHeaders = []string{"X-Shop-Session"}
}

func (s *synth) env(t *testing.T, fn string) map[string]any {
	t.Helper()
	return s.fnProps(t, fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
}

// In anonymous mode the routes carry no authorizer (a JWT authorizer would
// refuse every visitor without a token); the functions identify callers by
// their tickets, and only enter, position and the order gate hold the key.
func TestAnonymousVisitorsStack(t *testing.T) {
	s := synthesize(t, anonymousProps)
	s.tpl.ResourceCountIs(jsii.String("AWS::ApiGatewayV2::Authorizer"), jsii.Number(0))
	routes := s.resources("AWS::ApiGatewayV2::Route")
	if len(routes) != len(wantRouteKeys)+len(adminRoutes) {
		t.Errorf("%d routes, want %d", len(routes), len(wantRouteKeys)+len(adminRoutes))
	}
	for id, r := range routes {
		if p := props(r); strings.Contains(p["RouteKey"].(string), " /admin/") {
			continue // the operators' routes stay AWS_IAM (TestStackWiresTheAdminAPI)
		} else if p["AuthorizerId"] != nil || (p["AuthorizationType"] != nil && p["AuthorizationType"] != "NONE") {
			t.Errorf("route %s (%v) has an authorizer in anonymous mode: %v %v", id, p["RouteKey"], p["AuthorizationType"], p["AuthorizerId"])
		}
	}
	ref := "{{resolve:ssm:" + testTicketParam + "}}"
	for _, fn := range []string{FnEnter, FnPosition, FnOrderGate} {
		env := s.env(t, fn)
		if env["TICKET_SECRET"] != ref || env["ANONYMOUS_VISITORS"] != "true" {
			t.Errorf("%s: TICKET_SECRET %v, ANONYMOUS_VISITORS %v; want %s and true", fn, env["TICKET_SECRET"], env["ANONYMOUS_VISITORS"], ref)
		}
	}
	if env := s.env(t, FnOrderGate); env["ORDER_FORWARD_HEADERS"] != "X-Shop-Session" {
		t.Errorf("order-gate ORDER_FORWARD_HEADERS = %v", env["ORDER_FORWARD_HEADERS"])
	}
	for _, name := range []string{"TICKET_SECRET", "ANONYMOUS_VISITORS", "ORDER_FORWARD_HEADERS"} {
		if v, ok := s.env(t, FnAdmit)[name]; ok {
			t.Errorf("admit has %s = %v", name, v)
		}
	}
	// The key's reference is in the three functions' environment and
	// nowhere else (no secret resource, no output, no parameter).
	if n := strings.Count(js(s.json), "resolve:ssm:"+testTicketParam); n != 3 {
		t.Errorf("the ticket key's reference appears %d times in the template, want 3", n)
	}
	s.tpl.ResourceCountIs(jsii.String("AWS::SecretsManager::Secret"), jsii.Number(0))
	if e := s.interfaceEndpoints(); len(e) != 0 { // DynamoDB's gateway endpoint is the order record's
		t.Errorf("interface endpoints: %s", js(e))
	}
	s.tpl.HasOutput(jsii.String("PageUrl"), map[string]any{})
}

var wantRouteKeys = []string{"POST /queue/enter", "GET /queue/position", "POST /orders", "GET " + JWKSPath, "GET " + LinePath}

// The page's distribution sends /queue/* and /orders to this stack's own
// HTTP API: the page and the API share one origin, no CORS is involved.
func TestAnonymousStackServesThePage(t *testing.T) {
	s := synthesize(t, anonymousProps)
	s.tpl.ResourceCountIs(jsii.String("AWS::CloudFront::Distribution"), jsii.Number(1))
	s.tpl.ResourceCountIs(jsii.String("AWS::S3::Bucket"), jsii.Number(1))
	s.tpl.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]any{
		"PublicAccessBlockConfiguration": map[string]any{
			"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true,
		},
	})
	behavior := func(path string) any {
		return assertions.Match_ObjectLike(&map[string]any{
			"PathPattern": path, "ViewerProtocolPolicy": "https-only",
			"CachePolicyId":         "4135ea2d-6df8-44a3-9df3-4b5a84be39ad", // CachingDisabled
			"OriginRequestPolicyId": "b689b0a8-53d0-40ab-baf2-68738e2966ac", // AllViewerExceptHostHeader
		})
	}
	for _, path := range []string{"/queue/*", "/orders"} {
		s.tpl.HasResourceProperties(jsii.String("AWS::CloudFront::Distribution"), map[string]any{
			"DistributionConfig": assertions.Match_ObjectLike(&map[string]any{
				"CacheBehaviors": assertions.Match_ArrayWith(&[]any{behavior(path)}),
			}),
		})
	}
	apiOrigin(t, s.distribution(t)) // on the API's own domain, mapped to this stack's API (TestCloudFrontFrontsTheAPI)
}

// With a JWT authorizer (the default) there is no page and no ticket key;
// the functions behind routes are told anonymous visitors are off.
func TestNoPageWithoutAnonymousVisitors(t *testing.T) {
	s := def(t)
	s.tpl.ResourceCountIs(jsii.String("AWS::CloudFront::Distribution"), jsii.Number(0))
	s.tpl.ResourceCountIs(jsii.String("AWS::S3::Bucket"), jsii.Number(0))
	if strings.Contains(js(s.json), "TICKET_SECRET") || s.w.Page != nil {
		t.Error("a JWT stack holds a ticket key or a page")
	}
	for _, fn := range []string{FnEnter, FnPosition, FnOrderGate} {
		if v := s.env(t, fn)["ANONYMOUS_VISITORS"]; v != "false" {
			t.Errorf("%s ANONYMOUS_VISITORS = %v, want false", fn, v)
		}
	}
}

// A trusted proxy may identify signed-in users beside anonymous visitors:
// both are verified inside the functions (proxy secret, ticket signature).
func TestAnonymousVisitorsBesideATrustedProxy(t *testing.T) {
	s := synthesize(t, func(p *WaitroomProps) {
		anonymousProps(p)
		p.TrustUserHeaderFromProxy, p.ProxySecretSSMParameter = true, "/waitroom/proxy-secret"
	})
	env := s.env(t, FnEnter)
	if env["TRUST_USER_HEADER"] != "true" || env["PROXY_SECRET"] == nil || env["TICKET_SECRET"] == nil {
		t.Errorf("enter env = %v", env)
	}
}

func TestVisitorValidation(t *testing.T) {
	bad := map[string]struct {
		mutate  func(*WaitroomProps)
		setting string
	}{
		"no ticket key":         {func(p *WaitroomProps) { anonymousProps(p); p.TicketSecretSSMParameter = "" }, "ticketSecretSsmParameter"},
		"key without anonymous": {func(p *WaitroomProps) { p.TicketSecretSSMParameter = testTicketParam }, "anonymousVisitors"},
		"ticket TTL":            {func(p *WaitroomProps) { anonymousProps(p); p.TicketTTLSeconds = 10 }, "TICKET_TTL_SECONDS"},
		"continue URL":          {func(p *WaitroomProps) { anonymousProps(p); p.ContinueURL = "javascript:alert(1)" }, "CONTINUE_URL"},
		"forward the user id":   {func(p *WaitroomProps) { anonymousProps(p); p.OrderForwardHeaders = []string{"x-user-id"} }, "ORDER_FORWARD_HEADERS"},
		"no identity at all":    {func(p *WaitroomProps) { p.JwtIssuer = "" }, "anonymousVisitors=true"},
		"anonymous and JWT both": {func(p *WaitroomProps) {
			anonymousProps(p)
			p.JwtIssuer, p.JwtAudience = testIssuer, []string{testAudience}
		}, "exclusive"},
	}
	for name, c := range bad {
		p := baseProps()
		c.mutate(&p)
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
		if _, err := NewWaitroomStack(app, "Waitroom", p); err == nil || !strings.Contains(err.Error(), c.setting) {
			t.Errorf("%s: %v, want an error naming %s", name, err, c.setting)
		}
	}
	p := baseProps()
	anonymousProps(&p)
	p.JwtIssuer = testIssuer
	if _, err := NewWaitroomStack(awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())}), "Waitroom", p); !errors.Is(err, ErrAnonymousWithJWT) {
		t.Errorf("anonymous with JWT: %v", err)
	}
	got := mustProps(t, map[string]any{CtxAnonymous: "true", CtxTicketSecret: testTicketParam, CtxTicketTTL: "1800",
		CtxContinueURL: "/checkout", CtxForwardHeaders: "X-Shop-Session, X-Trace"})
	if !got.AnonymousVisitors || got.TicketSecretSSMParameter != testTicketParam || got.TicketTTLSeconds != 1800 ||
		got.ContinueURL != "/checkout" || js(got.OrderForwardHeaders) != `["X-Shop-Session","X-Trace"]` {
		t.Errorf("visitor props from context: %+v", got)
	}
}
