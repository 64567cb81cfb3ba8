package main

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// The managed policies the API's behaviours use (CloudFront Developer
// Guide, "Use managed cache policies" and "Use managed origin request
// policies"): no caching; every viewer header but Host (API Gateway routes
// by Host, and Authorization cannot be listed in a policy of one's own)
// plus CloudFront's own headers, CloudFront-Viewer-Address among them,
// whose value CloudFront sets.
const (
	cachingDisabled     = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"
	allViewerExceptHost = "b689b0a8-53d0-40ab-baf2-68738e2966ac"
)

// distribution is the page's distribution config.
func (s *synth) distribution(t *testing.T) map[string]any {
	t.Helper()
	ds := s.resources("AWS::CloudFront::Distribution")
	return props(ds[onlyKey(t, ds, "")])["DistributionConfig"].(map[string]any)
}

// behavior is the distribution's cache behaviour for path.
func behavior(t *testing.T, dc map[string]any, path string) map[string]any {
	t.Helper()
	for _, b := range asSlice(dc["CacheBehaviors"]) {
		if bm := b.(map[string]any); bm["PathPattern"] == path {
			return bm
		}
	}
	t.Fatalf("no cache behaviour for %s", path)
	return nil
}

// apiOrigin is the distribution's origin on the API's own domain.
func apiOrigin(t *testing.T, dc map[string]any) map[string]any {
	t.Helper()
	for _, o := range asSlice(dc["Origins"]) {
		if om := o.(map[string]any); om["DomainName"] == testAPIDomain {
			return om
		}
	}
	t.Fatalf("no origin on %s: %s", testAPIDomain, js(dc["Origins"]))
	return nil
}

// Behind CloudFront (the page's distribution fronts the API): CloudFront
// adds the origin secret, from its parameter at deploy, to every request it
// passes to the API and forwards the viewer's address; the visitor
// functions hold the same secret; the API answers on its own domain only,
// its execute-api endpoint disabled.
func TestCloudFrontFrontsTheAPI(t *testing.T) {
	s := synthesize(t, anonymousProps)
	dc := s.distribution(t)
	origin := apiOrigin(t, dc)
	ref := "{{resolve:ssm:" + testOriginSecretParam + "}}"
	if js(origin["OriginCustomHeaders"]) != js([]any{map[string]any{"HeaderName": "X-Origin-Secret", "HeaderValue": ref}}) {
		t.Errorf("API origin's custom headers: %s, want X-Origin-Secret = %s", js(origin["OriginCustomHeaders"]), ref)
	}
	for _, path := range []string{"/queue/*", "/orders"} {
		b := behavior(t, dc, path)
		if b["TargetOriginId"] != origin["Id"] || b["CachePolicyId"] != cachingDisabled || b["OriginRequestPolicyId"] != allViewerExceptHost {
			t.Errorf("%s: %s; want the API origin, no caching, every viewer header but Host with CloudFront-Viewer-Address", path, js(b))
		}
	}
	for _, fn := range Functions {
		if got := s.env(t, fn)["ORIGIN_SECRET"]; servesVisitors(fn) != (got == ref) || !servesVisitors(fn) && got != nil {
			t.Errorf("%s ORIGIN_SECRET = %v", fn, got)
		}
	}
	// The value is CloudFormation's to resolve: only the name is in the
	// template, in the three functions and the origin.
	if n := strings.Count(js(s.json), "resolve:ssm:"+testOriginSecretParam); n != 4 {
		t.Errorf("the origin secret's reference appears %d times, want 4", n)
	}
	apis := s.resources("AWS::ApiGatewayV2::Api")
	api := props(apis[onlyKey(t, apis, "")])
	if api["DisableExecuteApiEndpoint"] != true {
		t.Errorf("execute-api endpoint not disabled: %s", js(api))
	}
	domains := s.resources("AWS::ApiGatewayV2::DomainName")
	domain := props(domains[onlyKey(t, domains, "")])
	if domain["DomainName"] != testAPIDomain || js(domain["DomainNameConfigurations"]) !=
		js([]any{map[string]any{"CertificateArn": testAPICertificate, "EndpointType": "REGIONAL", "SecurityPolicy": "TLS_1_2"}}) {
		t.Errorf("the API's domain: %s", js(domain))
	}
	mappings := s.resources("AWS::ApiGatewayV2::ApiMapping")
	mapping := js(props(mappings[onlyKey(t, mappings, "")]))
	if !strings.Contains(mapping, `"ApiId":{"Ref":"`+onlyKey(t, apis, "")+`"}`) || !strings.Contains(mapping, `"Stage":`) {
		t.Errorf("the domain's mapping: %s", mapping)
	}
	s.tpl.HasOutput(jsii.String("ApiUrl"), map[string]any{"Value": "https://" + testAPIDomain + "/"})
	s.tpl.HasOutput(jsii.String("ApiDomainTarget"), map[string]any{})
}

// The JWKS is CloudFront's to cache, as its Cache-Control (public,
// max-age=300) says and never longer: one key per path, nothing of the
// viewer's, so that every shop's fetch within the five minutes is served
// at the edge.
func TestCloudFrontCachesTheJWKS(t *testing.T) {
	s := synthesize(t, anonymousProps)
	dc := s.distribution(t)
	b := behavior(t, dc, JWKSPath)
	if b["TargetOriginId"] != apiOrigin(t, dc)["Id"] || b["OriginRequestPolicyId"] != nil || js(b["AllowedMethods"]) != `["GET","HEAD"]` ||
		b["ViewerProtocolPolicy"] != "https-only" {
		t.Errorf("JWKS behaviour: %s", js(b))
	}
	cfg := s.cachePolicy(t, b)
	key := cfg["ParametersInCacheKeyAndForwardedToOrigin"].(map[string]any)
	if cfg["MinTTL"] != float64(0) || cfg["DefaultTTL"] != float64(0) || cfg["MaxTTL"] != float64(300) ||
		key["HeadersConfig"].(map[string]any)["HeaderBehavior"] != "none" || key["CookiesConfig"].(map[string]any)["CookieBehavior"] != "none" ||
		key["QueryStringsConfig"].(map[string]any)["QueryStringBehavior"] != "none" {
		t.Errorf("JWKS cache policy: %s; want the origin's max-age, at most 300 s, nothing of the viewer's in the key", js(cfg))
	}
}

// cachePolicy is the config of the stack's own cache policy a behaviour names.
func (s *synth) cachePolicy(t *testing.T, b map[string]any) map[string]any {
	t.Helper()
	for id, r := range s.resources("AWS::CloudFront::CachePolicy") {
		if js(b["CachePolicyId"]) == js(map[string]any{"Ref": id}) {
			return props(r)["CachePolicyConfig"].(map[string]any)
		}
	}
	t.Fatalf("behaviour %s: cache policy %s is not the stack's", b["PathPattern"], js(b["CachePolicyId"]))
	return nil
}

// The room's line (issue 36) is CloudFront's to share: one copy per room
// (the query string room is the whole key: no header, no cookie, no other
// parameter), kept for the origin's max-age=1, never longer than 2 s; the
// origin is asked for the room alone, with its secret (on the origin, as
// for every API path) and nothing of the viewer's. Every other API path is
// still uncached (TestPageSendsAPIPathsToTheHTTPAPI).
func TestCloudFrontCachesTheLinePerRoom(t *testing.T) {
	s := synthesize(t, anonymousProps)
	dc := s.distribution(t)
	b := behavior(t, dc, LinePath)
	if b["TargetOriginId"] != apiOrigin(t, dc)["Id"] || js(b["AllowedMethods"]) != `["GET","HEAD"]` || b["ViewerProtocolPolicy"] != "https-only" ||
		b["Compress"] != true {
		t.Errorf("line behaviour: %s; want the API origin, GET and HEAD, HTTPS, compressed", js(b))
	}
	cfg := s.cachePolicy(t, b)
	key := cfg["ParametersInCacheKeyAndForwardedToOrigin"].(map[string]any)
	if cfg["MinTTL"] != float64(0) || cfg["DefaultTTL"] != float64(1) || cfg["MaxTTL"] != float64(2) {
		t.Errorf("line TTLs min %v, default %v, max %v; want 0, 1, 2", cfg["MinTTL"], cfg["DefaultTTL"], cfg["MaxTTL"])
	}
	if js(key["QueryStringsConfig"]) != js(map[string]any{"QueryStringBehavior": "whitelist", "QueryStrings": []any{"room"}}) ||
		js(key["HeadersConfig"]) != js(map[string]any{"HeaderBehavior": "none"}) || js(key["CookiesConfig"]) != js(map[string]any{"CookieBehavior": "none"}) {
		t.Errorf("line cache key: %s; want the query string room alone", js(key))
	}
	if key["EnableAcceptEncodingGzip"] != true || key["EnableAcceptEncodingBrotli"] != true {
		t.Errorf("line answers not compressed: %s", js(key))
	}
	var orp map[string]any
	for id, r := range s.resources("AWS::CloudFront::OriginRequestPolicy") {
		if js(b["OriginRequestPolicyId"]) == js(map[string]any{"Ref": id}) {
			orp = props(r)["OriginRequestPolicyConfig"].(map[string]any)
		}
	}
	if orp == nil || js(orp["QueryStringsConfig"]) != js(map[string]any{"QueryStringBehavior": "whitelist", "QueryStrings": []any{"room"}}) ||
		js(orp["HeadersConfig"]) != js(map[string]any{"HeaderBehavior": "none"}) || js(orp["CookiesConfig"]) != js(map[string]any{"CookieBehavior": "none"}) {
		t.Errorf("line origin request policy %s (behaviour names %s); want the query string room alone", js(orp), js(b["OriginRequestPolicyId"]))
	}
	// CloudFront would keep the line's 404 room_not_found and its 503 ten
	// seconds (its default error caching minimum, above max-age=1 and
	// no-store alike): the distribution keeps them a second, the origin's
	// own answer passed on (no error page).
	want := []any{map[string]any{"ErrorCachingMinTTL": float64(1), "ErrorCode": float64(404)},
		map[string]any{"ErrorCachingMinTTL": float64(1), "ErrorCode": float64(503)}}
	if js(dc["CustomErrorResponses"]) != js(want) {
		t.Errorf("error caching %s, want %s", js(dc["CustomErrorResponses"]), js(want))
	}
}

// Without the page nothing fronts the API: its execute-api endpoint stays
// (the JWT authorizer or the operator's proxy stand before it), and no
// function waits for an origin secret.
func TestNoOriginSecretWithoutThePage(t *testing.T) {
	s := def(t)
	apis := s.resources("AWS::ApiGatewayV2::Api")
	if v := props(apis[onlyKey(t, apis, "")])["DisableExecuteApiEndpoint"]; v == true {
		t.Error("execute-api disabled without CloudFront in front")
	}
	s.tpl.ResourceCountIs(jsii.String("AWS::ApiGatewayV2::DomainName"), jsii.Number(0))
	if strings.Contains(js(s.json), "ORIGIN_SECRET") {
		t.Error("a stack without the page holds ORIGIN_SECRET")
	}
}

// Synthesis refuses the page without the origin secret's parameter or the
// API's domain, naming the key to set; and those keys without the page.
func TestPageNeedsTheOriginSecretAndTheAPIDomain(t *testing.T) {
	for name, c := range map[string]struct {
		mutate  func(*WaitroomProps)
		setting string
	}{
		"no origin secret":        {func(p *WaitroomProps) { anonymousProps(p); p.OriginSecretSSMParameter = "" }, "originSecretSsmParameter"},
		"origin secret not named": {func(p *WaitroomProps) { anonymousProps(p); p.OriginSecretSSMParameter = "a b" }, "originSecretSsmParameter"},
		"no API domain":           {func(p *WaitroomProps) { anonymousProps(p); p.APIDomainName = "" }, "apiDomainName"},
		"API domain not a name":   {func(p *WaitroomProps) { anonymousProps(p); p.APIDomainName = "https://api.example" }, "apiDomainName"},
		"no certificate":          {func(p *WaitroomProps) { anonymousProps(p); p.APICertificateArn = "" }, "apiCertificateArn"},
		"certificate not ACM's":   {func(p *WaitroomProps) { anonymousProps(p); p.APICertificateArn = "arn:aws:iam::1:server-certificate/x" }, "apiCertificateArn"},
		"origin secret alone":     {func(p *WaitroomProps) { p.OriginSecretSSMParameter = testOriginSecretParam }, "anonymousVisitors"},
		"API domain alone":        {func(p *WaitroomProps) { p.APIDomainName, p.APICertificateArn = testAPIDomain, testAPICertificate }, "anonymousVisitors"},
	} {
		p := baseProps()
		c.mutate(&p)
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
		if _, err := NewWaitroomStack(app, "Waitroom", p); err == nil || !strings.Contains(err.Error(), c.setting) {
			t.Errorf("%s: %v, want an error naming %s", name, err, c.setting)
		}
	}
	got := mustProps(t, map[string]any{CtxOriginSecret: testOriginSecretParam, CtxAPIDomainName: testAPIDomain, CtxAPICertificate: testAPICertificate})
	if got.OriginSecretSSMParameter != testOriginSecretParam || got.APIDomainName != testAPIDomain || got.APICertificateArn != testAPICertificate {
		t.Errorf("props from context: %+v", got)
	}
}
