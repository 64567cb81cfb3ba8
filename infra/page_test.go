package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/waitroom/waitroom/web"
)

// pageStack builds the page alone, in front of an API's domain: the
// construct must not depend on the rest of the stack.
func pageStack(t *testing.T, p PageProps) (awscdk.Stack, *Page, assertions.Template) {
	t.Helper()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	stack := awscdk.NewStack(app, jsii.String("PageOnly"), nil)
	p.APIDomain, p.OriginSecretSSMParameter = testAPIDomain, testOriginSecretParam
	pg := newPage(stack, p)
	return stack, pg, assertions.Template_FromStack(stack, nil)
}

func TestPageServedFromS3ThroughCloudFront(t *testing.T) {
	_, _, tpl := pageStack(t, PageProps{ContinueURL: "https://shop.example.com/checkout?t={entryToken}"})
	tpl.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]any{
		"PublicAccessBlockConfiguration": map[string]any{
			"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true,
		},
	})
	tpl.ResourceCountIs(jsii.String("AWS::CloudFront::OriginAccessControl"), jsii.Number(1))
	tpl.HasResourceProperties(jsii.String("AWS::CloudFront::Distribution"), map[string]any{
		"DistributionConfig": assertions.Match_ObjectLike(&map[string]any{
			"DefaultRootObject": "index.html",
			"PriceClass":        "PriceClass_200",
			"DefaultCacheBehavior": assertions.Match_ObjectLike(&map[string]any{
				"ViewerProtocolPolicy":    "redirect-to-https",
				"ResponseHeadersPolicyId": assertions.Match_AnyValue(),
			}),
		}),
	})
	tpl.HasResourceProperties(jsii.String("AWS::CloudFront::ResponseHeadersPolicy"), map[string]any{
		"ResponseHeadersPolicyConfig": assertions.Match_ObjectLike(&map[string]any{
			"SecurityHeadersConfig": assertions.Match_ObjectLike(&map[string]any{
				"ContentSecurityPolicy": map[string]any{"ContentSecurityPolicy": web.CSP, "Override": true},
				"FrameOptions":          map[string]any{"FrameOption": "DENY", "Override": true},
				"ReferrerPolicy":        map[string]any{"ReferrerPolicy": "no-referrer", "Override": true},
			}),
		}),
	})
	tpl.HasResourceProperties(jsii.String("Custom::CDKBucketDeployment"), map[string]any{
		"DistributionPaths": []any{"/*"},
		"Prune":             true,
	})
}

// /queue/* and /orders reach the HTTP API's domain through the same
// distribution: every method, no caching, viewer headers and cookies passed
// on; the room's line and the JWKS too, cached (TestCloudFrontCachesTheLine,
// TestCloudFrontCachesTheJWKS). CloudFront takes the first pattern that
// matches, so the line must come before /queue/*.
func TestPageSendsAPIPathsToTheHTTPAPI(t *testing.T) {
	_, _, tpl := pageStack(t, PageProps{})
	raw, _ := json.Marshal(tpl.ToJSON())
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	dc := (&synth{json: doc}).distribution(t)
	api := apiOrigin(t, dc)
	var paths []string
	for _, b := range asSlice(dc["CacheBehaviors"]) {
		bm := b.(map[string]any)
		path := bm["PathPattern"].(string)
		paths = append(paths, path)
		if bm["TargetOriginId"] != api["Id"] || bm["ViewerProtocolPolicy"] != "https-only" {
			t.Errorf("behavior %s: %s (API origin %s)", path, js(bm), api["Id"])
		}
		cached := path == JWKSPath || path == LinePath
		if !cached && (!strings.Contains(js(bm["AllowedMethods"]), "POST") ||
			bm["CachePolicyId"] != cachingDisabled || bm["OriginRequestPolicyId"] != allViewerExceptHost) {
			t.Errorf("behavior %s: %s, want every method, no caching, every viewer header but Host", path, js(bm))
		}
	}
	if want := []string{LinePath, "/queue/*", "/orders", JWKSPath}; js(paths) != js(want) {
		t.Errorf("API paths behind the distribution, in CloudFront's order: %v; want %v", paths, want)
	}
}

// With anonymous visitors the ticket key comes from an SSM parameter the
// operator made, resolved into the functions' environment at deploy time:
// no secret resource, no interface endpoint, no call at run time.
func TestVisitorEnv(t *testing.T) {
	env, err := visitorEnv(PageProps{AnonymousVisitors: true, TicketSecretSSMParameter: "/waitroom/ticket-secret:3",
		TicketTTLSeconds: 1800, ForwardHeaders: []string{"X-Shop-Session", "X-Trace"}})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"ANONYMOUS_VISITORS": "true", "TICKET_TTL_SECONDS": "1800",
		"ORDER_FORWARD_HEADERS": "X-Shop-Session,X-Trace", "TICKET_SECRET": "{{resolve:ssm:/waitroom/ticket-secret:3}}"} {
		if got := env[name]; got == nil || *got != want {
			t.Errorf("%s = %v, want %s", name, got, want)
		}
	}
	for _, bad := range []string{"", "has space", "x:y"} {
		if _, err := visitorEnv(PageProps{AnonymousVisitors: true, TicketSecretSSMParameter: bad}); err == nil || !strings.Contains(err.Error(), "ticketSecretSsmParameter") {
			t.Errorf("parameter %q: %v", bad, err)
		}
	}
	env, err = visitorEnv(PageProps{})
	if err != nil || *env["ANONYMOUS_VISITORS"] != "false" || env["TICKET_SECRET"] != nil || len(env) != 1 {
		t.Errorf("without anonymous visitors: %v, %v", env, err)
	}
	// The page adds no secret and no endpoint of its own.
	_, pg, tpl := pageStack(t, PageProps{})
	tpl.ResourceCountIs(jsii.String("AWS::SecretsManager::Secret"), jsii.Number(0))
	tpl.ResourceCountIs(jsii.String("AWS::EC2::VPCEndpoint"), jsii.Number(0))
	if pg.URL == nil {
		t.Error("no page URL")
	}
}
