package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscertificatemanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"github.com/waitroom/waitroom"
)

// AccountRpsQuota is API Gateway's default throttle quota per account and
// Region, shared by every API in it (Service Quotas: "Throttle quota per
// account, per Region across HTTP APIs, REST APIs, WebSocket APIs").
const AccountRpsQuota = 10_000

// pollJitterHeadroom: pollAfterMs is spread by ±20%, so the fastest pollers
// ask 1/0.8 = 1.25 times as often as the tier says.
const pollJitterHeadroom = 1.25

// route is one public route and the function behind it.
type route struct {
	method awsapigatewayv2.HttpMethod
	path   string
	fn     string
	// public routes take no identity (no JWT authorizer); rate, when set,
	// is the route's own throttle instead of its function's.
	public bool
	rate   int
}

func (r route) key() string { return string(r.method) + " " + r.path }

var routes = []route{
	{method: awsapigatewayv2.HttpMethod_POST, path: "/queue/enter", fn: FnEnter},
	{method: awsapigatewayv2.HttpMethod_GET, path: "/queue/position", fn: FnPosition},
	{method: awsapigatewayv2.HttpMethod_POST, path: "/orders", fn: FnOrderGate},
	// The entry tokens' public keys, for origins that verify tokens
	// themselves; served by the position function (no store call). Origins
	// cache it for 5 minutes, so a few requests a second is plenty.
	{method: awsapigatewayv2.HttpMethod_GET, path: JWKSPath, fn: FnPosition, public: true, rate: JWKSRateLimit},
	// The room's line (front, state, rate; the same bytes for every
	// visitor), which the waiting page follows instead of polling its own
	// position: served by the position function from its view of the room,
	// no identity and no limiter, and cached by the page's CloudFront for
	// about a second (page.go, lineBehavior).
	{method: awsapigatewayv2.HttpMethod_GET, path: LinePath, fn: FnPosition, public: true, rate: LineRateLimit},
}

// JWKSPath is GET /.well-known/jwks.json; JWKSRateLimit its throttle (requests/s).
const (
	JWKSPath      = "/.well-known/jwks.json"
	JWKSRateLimit = 20
)

// LinePath is GET /queue/line; LineRateLimit its throttle (requests/s).
// Behind the page's CloudFront the origin sees about one request per room
// per edge cache per second (each keeps an answer for its 1 s max-age):
// tens a second for a room whose visitors come through tens of edges. 500
// a second (burst 1,000) carries a few rooms each fetched by a couple of
// hundred edges, or a flood of made-up room names (each a miss), without
// the function scaling past it; a client that skips the CDN (no page in
// front) is told 429 and polls GET /queue/position as before.
const (
	LinePath      = "/queue/line"
	LineRateLimit = 500
)

// ExpectedPollRps is the position requests per second a full line sends:
// the sum over every place of 1000 / pollAfterMs (mean jitter), computed
// with the functions' own PollAfterMs. With the defaults (100,000 waiting,
// 100/s, tiers 0:60000) it is about 2,230.
func (p WaitroomProps) ExpectedPollRps() float64 {
	tiers, err := waitroom.ParsePollTiers(p.PollTiers)
	if err != nil {
		return 0
	}
	c := waitroom.Config{AdmitRatePerSec: p.AdmitRatePerSec, AdmitInterval: time.Duration(p.AdmitIntervalMs) * time.Millisecond, PollTiers: tiers}
	const exact = 2_000_000 // beyond this every place polls at the farthest tier
	var rps float64
	for pos := int64(1); pos <= int64(min(p.QueueCapacity, exact)); pos++ {
		rps += 1000 / float64(c.PollAfterMs(pos, 0.5))
	}
	if p.QueueCapacity > exact {
		rps += float64(p.QueueCapacity-exact) * 1000 / float64(tiers[0].PollMs)
	}
	return rps
}

// setThrottleDefaults: position at the polls of a full line with jitter
// headroom; enter at a full line arriving within a minute; orders at twice
// the admission rate (each admitted user orders about once, with retries).
func (p *WaitroomProps) setThrottleDefaults() {
	setDefault(&p.PositionRateLimit, int(math.Ceil(p.ExpectedPollRps()*pollJitterHeadroom)))
	setDefault(&p.EnterRateLimit, max(10, (p.QueueCapacity+59)/60))
	setDefault(&p.OrdersRateLimit, max(10, int(math.Ceil(2*p.AdmitRatePerSec))))
}

func (p WaitroomProps) routeRateLimit(fn string) int {
	return map[string]int{FnEnter: p.EnterRateLimit, FnPosition: p.PositionRateLimit, FnOrderGate: p.OrdersRateLimit}[fn]
}

// corsAllowHeaders are the request headers a cross-origin page may send:
// the identity and entry-token headers, the anonymous visitor's ticket, and
// the visitor headers of the root module (an account user's signed place;
// an accepted entry's receipt, INTAKE=broker or fallback; a new visitor's
// solved challenge, CHALLENGE=pow).
var corsAllowHeaders = []string{"authorization", "content-type", "x-entry-token", "idempotency-key", "x-queue-ticket",
	strings.ToLower(waitroom.PlaceHeader), strings.ToLower(waitroom.ReceiptHeader), strings.ToLower(waitroom.ChallengeHeader)}

// newAPI builds the HTTP API with its three routes and its stage, and,
// when CloudFront fronts it, its own domain (apiDomain).
func newAPI(stack awscdk.Stack, p WaitroomProps, fns map[string]awslambda.Function) (awsapigatewayv2.HttpApi, awsapigatewayv2.DomainName) {
	props := &awsapigatewayv2.HttpApiProps{
		ApiName:     jsii.String(p.NamePrefix),
		Description: jsii.String("Waitroom: virtual waiting room in front of the order API"),
	}
	domain := apiDomain(stack, p)
	if domain != nil {
		props.DisableExecuteApiEndpoint = jsii.Bool(true)
		props.DefaultDomainMapping = &awsapigatewayv2.DomainMappingOptions{DomainName: domain}
	}
	if !p.NoCors {
		props.CorsPreflight = &awsapigatewayv2.CorsPreflightOptions{
			AllowOrigins: jsii.Strings(p.CorsAllowOrigins...),
			AllowMethods: &[]awsapigatewayv2.CorsHttpMethod{
				awsapigatewayv2.CorsHttpMethod_GET, awsapigatewayv2.CorsHttpMethod_POST, awsapigatewayv2.CorsHttpMethod_OPTIONS,
			},
			AllowHeaders:  jsii.Strings(corsAllowHeaders...),
			ExposeHeaders: jsii.Strings("retry-after"),
			MaxAge:        awscdk.Duration_Minutes(jsii.Number(10)),
		}
	}
	api := awsapigatewayv2.NewHttpApi(stack, jsii.String("Api"), props)
	var authorizer awsapigatewayv2.IHttpRouteAuthorizer
	if p.JwtIssuer != "" {
		authorizer = awsapigatewayv2authorizers.NewHttpJwtAuthorizer(jsii.String("JwtAuthorizer"), jsii.String(p.JwtIssuer),
			&awsapigatewayv2authorizers.HttpJwtAuthorizerProps{
				AuthorizerName: jsii.String("jwt"),
				JwtAudience:    jsii.Strings(p.JwtAudience...),
			})
	}
	stage := api.DefaultStage().Node().DefaultChild().(awsapigatewayv2.CfnStage)
	integrations := map[string]awsapigatewayv2.HttpRouteIntegration{} // one per function, shared by its routes
	for _, r := range routes {
		if integrations[r.fn] == nil {
			integrations[r.fn] = awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String(logicalName(r.fn)+"Integration"), fns[r.fn], nil)
		}
	}
	for _, r := range routes {
		opts := &awsapigatewayv2.AddRoutesOptions{
			Path:        jsii.String(r.path),
			Methods:     &[]awsapigatewayv2.HttpMethod{r.method},
			Integration: integrations[r.fn],
		}
		if authorizer != nil && !r.public {
			opts.Authorizer = authorizer
		}
		for _, rt := range *api.AddRoutes(opts) {
			// RouteSettings name routes by key: they must exist first.
			stage.Node().AddDependency(rt)
		}
	}
	configureStage(stack, p, stage)
	return api, domain
}

// apiDomain is the API's own domain when the page's CloudFront fronts it
// (nil otherwise). The stack then disables the execute-api endpoint, which
// API Gateway answers with 403 whoever calls: the API is reached on this
// domain alone, by CloudFront (its origin) and by operators signing the
// admin routes (waitroomctl --aws --url https://<domain>). The domain is no
// less public than execute-api was: what turns away a request that skips
// CloudFront is ORIGIN_SECRET, checked by the functions (docs/security.md,
// "The page's origin").
func apiDomain(stack awscdk.Stack, p WaitroomProps) awsapigatewayv2.DomainName {
	if !p.AnonymousVisitors {
		return nil
	}
	return awsapigatewayv2.NewDomainName(stack, jsii.String("ApiDomain"), &awsapigatewayv2.DomainNameProps{
		DomainName:     jsii.String(p.APIDomainName),
		Certificate:    awscertificatemanager.Certificate_FromCertificateArn(stack, jsii.String("ApiCertificate"), jsii.String(p.APICertificateArn)),
		EndpointType:   awsapigatewayv2.EndpointType_REGIONAL,
		SecurityPolicy: awsapigatewayv2.SecurityPolicy_TLS_1_2,
	})
}

// configureStage: per-route throttling, per-route metrics (for the p99
// latency alarms) and JSON access logs, through the L1 stage (the L2
// default stage does not expose them).
func configureStage(stack awscdk.Stack, p WaitroomProps, stage awsapigatewayv2.CfnStage) {
	settings := map[string]interface{}{}
	total := 0
	for _, r := range routes {
		rate := p.routeRateLimit(r.fn)
		if r.rate > 0 {
			rate = r.rate
		}
		total += rate
		settings[r.key()] = map[string]interface{}{"ThrottlingRateLimit": rate, "ThrottlingBurstLimit": 2 * rate}
	}
	stage.SetRouteSettings(settings)
	stage.SetDefaultRouteSettings(&awsapigatewayv2.CfnStage_RouteSettingsProperty{
		DetailedMetricsEnabled: jsii.Bool(true),
		ThrottlingRateLimit:    jsii.Number(float64(total)),
		ThrottlingBurstLimit:   jsii.Number(float64(2 * total)),
	})
	if total > AccountRpsQuota {
		awscdk.Annotations_Of(stack).AddWarningV2(jsii.String("waitroom:account-throttle"), jsii.String(fmt.Sprintf(
			"The routes may take %d requests/s together (position %d: a full line of %d polling by POLL_TIERS), more than "+
				"API Gateway's default quota of %d per account and Region: request an increase in Service Quotas before the "+
				"event, or lower queueCapacity, or lengthen pollTiers. See infra/README.md, \"Throttling\".",
			total, p.PositionRateLimit, p.QueueCapacity, AccountRpsQuota)), nil)
	}
	accessLogs := awslogs.NewLogGroup(stack, jsii.String("ApiAccessLogs"), &awslogs.LogGroupProps{
		Retention:     p.LogRetention,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	stage.SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: accessLogs.LogGroupArn(),
		Format:         jsii.String(accessLogFormat),
	})
	// API Gateway's own 429 (throttled before any function ran) has no
	// integration status; it becomes a metric only when it happens.
	accessLogs.AddMetricFilter(jsii.String("ApiThrottledFilter"), &awslogs.MetricFilterOptions{
		FilterPattern:   awslogs.FilterPattern_Literal(jsii.String(`{ ($.status = "429") && ($.integrationStatus = "-") }`)),
		MetricNamespace: jsii.String(p.ApiThrottledNamespace()),
		MetricName:      jsii.String(ApiThrottledMetric),
		MetricValue:     jsii.String("1"),
	})
}

// ApiThrottledMetric is the access-log metric of API Gateway's own throttling.
const ApiThrottledMetric = "ThrottledByApiGateway"

// ApiThrottledNamespace is that metric's namespace, the stack's own:
// another stack in the account writing the same metric would set off this
// one's ApiThrottled alarm.
func (p WaitroomProps) ApiThrottledNamespace() string { return "Waitroom/Api/" + p.NamePrefix }

// accessLogFormat is one JSON object per request. It carries no user id.
var accessLogFormat = `{` + strings.Join([]string{
	`"requestId":"$context.requestId"`,
	`"ip":"$context.identity.sourceIp"`,
	`"requestTime":"$context.requestTime"`,
	`"routeKey":"$context.routeKey"`,
	`"status":"$context.status"`,
	`"responseLength":"$context.responseLength"`,
	`"latencyMs":"$context.responseLatency"`,
	`"integrationStatus":"$context.integrationStatus"`,
	`"integrationLatencyMs":"$context.integrationLatency"`,
	`"integrationError":"$context.integrationErrorMessage"`,
	`"authorizerError":"$context.authorizer.error"`,
	`"userAgent":"$context.identity.userAgent"`,
}, ",") + `}`
