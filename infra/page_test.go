package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/jsii-runtime-go"

	"github.com/waitroom/waitroom/web"
)

// pageStack builds the page alone beside a bare HTTP API: the construct
// must not depend on the rest of the stack.
func pageStack(t *testing.T, p PageProps) (awscdk.Stack, VisitorEnv, assertions.Template) {
	t.Helper()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	stack := awscdk.NewStack(app, jsii.String("PageOnly"), nil)
	env := newVisitorEnv(stack, p)
	p.API = awsapigatewayv2.NewHttpApi(stack, jsii.String("Api"), nil)
	if pg := newPage(stack, p); pg.URL == nil {
		t.Fatal("no page URL")
	}
	return stack, env, assertions.Template_FromStack(stack, nil)
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

// /queue/* and /orders reach the HTTP API through the same distribution:
// every method, no caching, viewer headers and cookies passed on.
func TestPageSendsAPIPathsToTheHTTPAPI(t *testing.T) {
	_, _, tpl := pageStack(t, PageProps{})
	raw, _ := json.Marshal(tpl.ToJSON())
	var doc struct {
		Resources map[string]struct {
			Type       string
			Properties struct {
				DistributionConfig struct {
					CacheBehaviors []struct {
						PathPattern           string
						AllowedMethods        []string
						ViewerProtocolPolicy  string
						CachePolicyId         string
						OriginRequestPolicyId string
						TargetOriginId        string
					}
					Origins []struct {
						Id         string
						DomainName any
					}
				}
			}
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	paths := map[string]bool{}
	for _, r := range doc.Resources {
		if r.Type != "AWS::CloudFront::Distribution" {
			continue
		}
		dc := r.Properties.DistributionConfig
		apiOrigins := map[string]bool{}
		for _, o := range dc.Origins {
			if d, _ := json.Marshal(o.DomainName); strings.Contains(string(d), "ApiEndpoint") || strings.Contains(string(d), "execute-api") || strings.Contains(string(d), "Fn::Split") {
				apiOrigins[o.Id] = true
			}
		}
		for _, b := range dc.CacheBehaviors {
			paths[b.PathPattern] = true
			const cachingDisabled, allViewerExceptHost = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad", "b689b0a8-53d0-40ab-baf2-68738e2966ac"
			if !apiOrigins[b.TargetOriginId] || !strings.Contains(strings.Join(b.AllowedMethods, ","), "POST") || b.ViewerProtocolPolicy != "https-only" ||
				b.CachePolicyId != cachingDisabled || b.OriginRequestPolicyId != allViewerExceptHost {
				t.Errorf("behavior %s: %+v (API origins %v)", b.PathPattern, b, apiOrigins)
			}
		}
	}
	if !paths["/queue/*"] || !paths["/orders"] || len(paths) != 2 {
		t.Errorf("API paths behind the distribution: %v; want /queue/* and /orders", paths)
	}
}

// With anonymous visitors the ticket key is generated in Secrets Manager and
// resolved into the functions' environment at deploy time: no interface
// endpoint, no call per cold start. Without, there is no key at all.
func TestPageTicketKey(t *testing.T) {
	stack, v, tpl := pageStack(t, PageProps{AnonymousVisitors: true, TicketTTLSeconds: 1800, ForwardHeaders: []string{"X-Shop-Session"}})
	tpl.HasResourceProperties(jsii.String("AWS::SecretsManager::Secret"), map[string]any{
		"GenerateSecretString": assertions.Match_ObjectLike(&map[string]any{"PasswordLength": 64, "ExcludePunctuation": true}),
	})
	tpl.ResourceCountIs(jsii.String("AWS::EC2::VPCEndpoint"), jsii.Number(0))
	resolved, _ := json.Marshal(stack.Resolve(v.Env["TICKET_SECRET"]))
	if !strings.Contains(string(resolved), "{{resolve:secretsmanager:") {
		t.Errorf("TICKET_SECRET is %s; want a dynamic reference resolved at deploy time", resolved)
	}
	for name, want := range map[string]string{"ANONYMOUS_VISITORS": "true", "TICKET_TTL_SECONDS": "1800", "ORDER_FORWARD_HEADERS": "X-Shop-Session"} {
		if got := v.Env[name]; got == nil || *got != want {
			t.Errorf("%s = %v, want %s", name, got, want)
		}
	}

	_, signedIn, tpl := pageStack(t, PageProps{})
	tpl.ResourceCountIs(jsii.String("AWS::SecretsManager::Secret"), jsii.Number(0))
	if signedIn.TicketSecret != nil || *signedIn.Env["ANONYMOUS_VISITORS"] != "false" || signedIn.Env["TICKET_SECRET"] != nil {
		t.Errorf("without anonymous visitors: env %v", signedIn.Env)
	}
}
