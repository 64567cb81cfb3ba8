package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfront"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfrontorigins"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3deployment"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/web"
)

// DefaultWebDir is where the page's files are, seen from infra/ (the
// directory `cdk` and `go test` run in): the same files the local runner
// embeds.
const DefaultWebDir = "../web/static"

// PageProps configure the waiting page and visitors in AWS.
type PageProps struct {
	// APIDomain is where /queue/*, /orders and the JWKS go: the HTTP API's
	// own domain (its execute-api endpoint is disabled). Page and API share
	// one origin, so the browser needs no CORS and the ticket cookie is
	// first-party. Only newPage needs it.
	APIDomain string
	// OriginSecretSSMParameter names the SSM String parameter holding
	// ORIGIN_SECRET, which CloudFront adds to every request it passes to the
	// API and the visitor functions require.
	OriginSecretSSMParameter string
	// ContinueURL is CONTINUE_URL, written into the page's config.json.
	ContinueURL string
	// AnonymousVisitors is ANONYMOUS_VISITORS: an enter without identity
	// creates a visitor with a ticket. It needs TicketSecretSSMParameter.
	AnonymousVisitors bool
	// TicketSecretSSMParameter names an SSM Parameter Store String parameter
	// (optionally name:version) holding TICKET_SECRET, as PROXY_SECRET is
	// kept: the functions get the dynamic reference {{resolve:ssm:…}}, so the
	// key is never in the template, and nothing is called at run time.
	TicketSecretSSMParameter string
	// Receipts: enter signs receipts and position checks them (INTAKE
	// broker or fallback), which needs TICKET_SECRET without anonymous visitors too.
	Receipts bool
	// TicketTTLSeconds is TICKET_TTL_SECONDS; 0 keeps the functions' default.
	TicketTTLSeconds int
	// ForwardHeaders is ORDER_FORWARD_HEADERS.
	ForwardHeaders []string
	// ImageOrigins are PAGE_IMAGE_ORIGINS: the page's CSP img-src names them.
	ImageOrigins []string
	// WebDir holds the page's files; "" means DefaultWebDir.
	WebDir string
	// WebACLArn is the distribution's AWS WAF web ACL (edgeRateLimit,
	// edge.go); nil for none.
	WebACLArn *string
}

// Page is the waiting page's share of the stack.
type Page struct {
	Bucket       awss3.Bucket
	Distribution awscloudfront.Distribution
	// URL is the page's address, https://<distribution>/.
	URL *string
}

// visitorEnv is what enter, position and order-gate (not admit: it has no
// use for the keys) add to their environment: the ticket key and, with the
// page on CloudFront, the origin secret. Each is resolved by
// CloudFormation at deploy time into the functions' environment (encrypted
// at rest by Lambda): no call per cold start, hence no interface endpoint,
// no secret to pay for, nothing on the request path. Rotating it is
// `put-parameter` with "new,old", then a deploy naming the new version
// (name:version), which is what makes CloudFormation update the functions.
func visitorEnv(p PageProps) (map[string]*string, error) {
	env := map[string]*string{"ANONYMOUS_VISITORS": jsii.String(strconv.FormatBool(p.AnonymousVisitors))}
	if p.TicketTTLSeconds > 0 {
		env["TICKET_TTL_SECONDS"] = jsii.String(strconv.Itoa(p.TicketTTLSeconds))
	}
	if len(p.ForwardHeaders) > 0 {
		env["ORDER_FORWARD_HEADERS"] = jsii.String(strings.Join(p.ForwardHeaders, ","))
	}
	if p.AnonymousVisitors && ssmNameRE.MatchString(p.OriginSecretSSMParameter) {
		env["ORIGIN_SECRET"] = jsii.String("{{resolve:ssm:" + p.OriginSecretSSMParameter + "}}")
	}
	switch {
	case (p.AnonymousVisitors || p.Receipts) && !ssmNameRE.MatchString(p.TicketSecretSSMParameter):
		return nil, fmt.Errorf("waitroom: anonymousVisitors=true or intake=broker|fallback needs ticketSecretSsmParameter, the name of an SSM String "+
			"parameter (optionally name:version) holding TICKET_SECRET, e.g. created with `aws ssm put-parameter --type String "+
			"--name /waitroom/ticket-secret --value \"$(openssl rand -base64 48)\"`; got %q", p.TicketSecretSSMParameter)
	case p.AnonymousVisitors || p.Receipts:
		env["TICKET_SECRET"] = jsii.String("{{resolve:ssm:" + p.TicketSecretSSMParameter + "}}")
	}
	return env, nil
}

// challengeEnv is what enter, the one function that makes visitors (with
// INTAKE=broker or fallback too: enter checks the solution before it
// accepts an entry; the consumer makes none), adds with CHALLENGE=pow: the
// mode and its difficulty. The solutions are signed with the ticket key
// visitorEnv already gives it. Nothing with CHALLENGE off, the functions'
// default.
func challengeEnv(p WaitroomProps) map[string]*string {
	if p.Challenge != waitroom.ChallengePoW {
		return nil
	}
	return map[string]*string{
		"CHALLENGE":      jsii.String(string(p.Challenge)),
		"CHALLENGE_BITS": jsii.String(strconv.Itoa(p.ChallengeBits)),
	}
}

// newPage serves the page from S3 through CloudFront, with the HTTP API
// behind the same distribution. The page polls here: HTTP APIs do not stream.
func newPage(scope constructs.Construct, p PageProps) *Page {
	pg := &Page{}
	pg.Bucket = awss3.NewBucket(scope, jsii.String("PageBucket"), &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		RemovalPolicy:     awscdk.RemovalPolicy_DESTROY,
		AutoDeleteObjects: jsii.Bool(true),
	})
	pg.Distribution = awscloudfront.NewDistribution(scope, jsii.String("PageDistribution"), &awscloudfront.DistributionProps{
		Comment:           jsii.String("Waitroom: the waiting page and, on the same origin, the API"),
		DefaultRootObject: jsii.String("index.html"),
		// Price class 200 serves from edge locations in Asia (Korea, Japan)
		// too, where the sale this was designed for takes place.
		PriceClass:  awscloudfront.PriceClass_PRICE_CLASS_200,
		HttpVersion: awscloudfront.HttpVersion_HTTP2_AND_3,
		DefaultBehavior: &awscloudfront.BehaviorOptions{
			Origin:                awscloudfrontorigins.S3BucketOrigin_WithOriginAccessControl(pg.Bucket, nil),
			ViewerProtocolPolicy:  awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
			CachePolicy:           awscloudfront.CachePolicy_CACHING_OPTIMIZED(),
			ResponseHeadersPolicy: pageHeaders(scope, p.ImageOrigins),
		},
		ErrorResponses: lineErrorResponses(),
		WebAclId:       p.WebACLArn,
	})
	// CloudFront matches path patterns in the order listed: /queue/line
	// before /queue/*, which would otherwise take it.
	for _, b := range apiBehaviors(scope, p) {
		pg.Distribution.AddBehavior(jsii.String(b.path), b.origin, b.opts)
	}
	pg.URL = awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String("https://"), pg.Distribution.DistributionDomainName(), jsii.String("/")})

	awss3deployment.NewBucketDeployment(scope, jsii.String("PageFiles"), &awss3deployment.BucketDeploymentProps{
		Sources: &[]awss3deployment.ISource{
			awss3deployment.Source_Asset(jsii.String(webDir(p)), nil),
			awss3deployment.Source_JsonData(jsii.String("waitroom/config.json"), web.Settings{ContinueURL: p.ContinueURL, Stream: false}, nil),
		},
		DestinationBucket: pg.Bucket,
		Distribution:      pg.Distribution,
		DistributionPaths: jsii.Strings("/*"),
	})
	return pg
}

// pageHeaders are the page's security headers: the very CSP the local
// runner sends (img-src with the rooms' logo origins), no framing, no
// sniffing, no referrer, HTTPS only.
func pageHeaders(scope constructs.Construct, imageOrigins []string) awscloudfront.ResponseHeadersPolicy {
	return awscloudfront.NewResponseHeadersPolicy(scope, jsii.String("PageHeaders"), &awscloudfront.ResponseHeadersPolicyProps{
		Comment: jsii.String("Waitroom page: strict Content-Security-Policy and friends"),
		SecurityHeadersBehavior: &awscloudfront.ResponseSecurityHeadersBehavior{
			ContentSecurityPolicy: &awscloudfront.ResponseHeadersContentSecurityPolicy{ContentSecurityPolicy: jsii.String(web.CSPFor(imageOrigins)), Override: jsii.Bool(true)},
			ContentTypeOptions:    &awscloudfront.ResponseHeadersContentTypeOptions{Override: jsii.Bool(true)},
			FrameOptions:          &awscloudfront.ResponseHeadersFrameOptions{FrameOption: awscloudfront.HeadersFrameOption_DENY, Override: jsii.Bool(true)},
			ReferrerPolicy:        &awscloudfront.ResponseHeadersReferrerPolicy{ReferrerPolicy: awscloudfront.HeadersReferrerPolicy_NO_REFERRER, Override: jsii.Bool(true)},
			StrictTransportSecurity: &awscloudfront.ResponseHeadersStrictTransportSecurity{
				AccessControlMaxAge: awscdk.Duration_Days(jsii.Number(365)), IncludeSubdomains: jsii.Bool(true), Override: jsii.Bool(true),
			},
		},
	})
}

// apiBehavior is one of the API's cache behaviours, in CloudFront's order.
type apiBehavior struct {
	path   string
	origin awscloudfront.IOrigin
	opts   *awscloudfront.AddBehaviorOptions
}

// apiBehaviors send the API's paths to the HTTP API on its own domain,
// with X-Origin-Secret (the value CloudFormation resolves at deploy: a
// custom header CloudFront adds to every origin request, replacing any a
// viewer sent, whatever the behaviour's origin request policy). /queue/*
// and /orders are uncached, with every viewer header (Authorization,
// X-Queue-Ticket, X-Queue-Place), cookie (wr_ticket, wr_place) and query
// string but Host, which must name the API's domain, and CloudFront's own
// headers, CloudFront-Viewer-Address among them: the managed
// AllViewerExceptHostHeader policy. No policy of one's own can do it: one
// may not list Authorization, and "all viewer headers" includes Host. The
// room's line (lineBehavior) and the JWKS (jwksBehavior) are cached; the
// line comes first, or /queue/* would take it.
func apiBehaviors(scope constructs.Construct, p PageProps) []apiBehavior {
	origin := awscloudfrontorigins.NewHttpOrigin(jsii.String(p.APIDomain), &awscloudfrontorigins.HttpOriginProps{
		ProtocolPolicy: awscloudfront.OriginProtocolPolicy_HTTPS_ONLY,
		CustomHeaders:  &map[string]*string{OriginSecretHeader: jsii.String("{{resolve:ssm:" + p.OriginSecretSSMParameter + "}}")},
	})
	uncached := &awscloudfront.AddBehaviorOptions{
		ViewerProtocolPolicy: awscloudfront.ViewerProtocolPolicy_HTTPS_ONLY,
		AllowedMethods:       awscloudfront.AllowedMethods_ALLOW_ALL(),
		CachePolicy:          awscloudfront.CachePolicy_CACHING_DISABLED(),
		OriginRequestPolicy:  awscloudfront.OriginRequestPolicy_ALL_VIEWER_EXCEPT_HOST_HEADER(),
	}
	return []apiBehavior{
		{LinePath, origin, lineBehavior(scope)},
		{"/queue/*", origin, uncached},
		{"/orders", origin, uncached},
		{JWKSPath, origin, jwksBehavior(scope)},
	}
}

// The line's cache TTLs: the origin says max-age=1 (docs/API.md, GET
// /queue/line); without a Cache-Control CloudFront keeps it LineDefaultTTL,
// and never longer than LineMaxTTL, so that a closed room or a moved front
// reaches every page within two seconds.
const (
	LineMaxAgeSeconds     = 1 // the origin's Cache-Control: public, max-age=1
	LineDefaultTTLSeconds = LineMaxAgeSeconds
	LineMaxTTLSeconds     = 2
	// LineRoomParam is the line's one query string, its room.
	LineRoomParam = "room"
)

// lineErrorResponses: CloudFront keeps an error at least its error caching
// minimum TTL, 10 s unless set, whatever the origin's max-age says, and
// keeps a 503 that long though it says no-store (it honours no-store only
// for 404, 410, 414 and 501: CloudFront Developer Guide, "Control how long
// CloudFront caches errors"). The line's 404 room_not_found (max-age=1) and
// its 503 (store unavailable) are kept a second, as its answers are: a room
// made a moment ago is seen within a second, and an outage's end too, while
// each edge still asks the origin at most once a second. The setting is
// the distribution's: the page's files and the uncached API paths keep
// such errors no longer than a second either. No error page: the answer
// is the origin's own.
func lineErrorResponses() *[]*awscloudfront.ErrorResponse {
	var out []*awscloudfront.ErrorResponse
	for _, status := range []float64{404, 503} {
		out = append(out, &awscloudfront.ErrorResponse{HttpStatus: jsii.Number(status), Ttl: awscdk.Duration_Seconds(jsii.Number(LineMaxAgeSeconds))})
	}
	return &out
}

// lineBehavior caches GET /queue/line at the edge: one copy per room (the
// query string room is the whole cache key: no header, no cookie, no other
// parameter, so a visitor's cache-busting parameter or cookie cannot split
// it), for the origin's max-age of a second. The origin is asked only for
// that room, with nothing of the viewer's: the line answers every visitor
// of a room with the same bytes, and needs no identity (the route is
// public). X-Origin-Secret rides on the origin as for every API path.
// Compressed: the body is JSON.
func lineBehavior(scope constructs.Construct) *awscloudfront.AddBehaviorOptions {
	return &awscloudfront.AddBehaviorOptions{
		ViewerProtocolPolicy: awscloudfront.ViewerProtocolPolicy_HTTPS_ONLY,
		AllowedMethods:       awscloudfront.AllowedMethods_ALLOW_GET_HEAD(),
		CachePolicy: awscloudfront.NewCachePolicy(scope, jsii.String("LineCache"), &awscloudfront.CachePolicyProps{
			Comment:                    jsii.String("Waitroom line: one copy per room, the origin's max-age of 1 s, at most 2 s"),
			MinTtl:                     awscdk.Duration_Seconds(jsii.Number(0)),
			DefaultTtl:                 awscdk.Duration_Seconds(jsii.Number(LineDefaultTTLSeconds)),
			MaxTtl:                     awscdk.Duration_Seconds(jsii.Number(LineMaxTTLSeconds)),
			HeaderBehavior:             awscloudfront.CacheHeaderBehavior_None(),
			CookieBehavior:             awscloudfront.CacheCookieBehavior_None(),
			QueryStringBehavior:        awscloudfront.CacheQueryStringBehavior_AllowList(jsii.String(LineRoomParam)),
			EnableAcceptEncodingGzip:   jsii.Bool(true),
			EnableAcceptEncodingBrotli: jsii.Bool(true),
		}),
		OriginRequestPolicy: awscloudfront.NewOriginRequestPolicy(scope, jsii.String("LineOriginRequest"), &awscloudfront.OriginRequestPolicyProps{
			Comment:             jsii.String("Waitroom line: the room alone, nothing of the viewer's"),
			HeaderBehavior:      awscloudfront.OriginRequestHeaderBehavior_None(),
			CookieBehavior:      awscloudfront.OriginRequestCookieBehavior_None(),
			QueryStringBehavior: awscloudfront.OriginRequestQueryStringBehavior_AllowList(jsii.String(LineRoomParam)),
		}),
	}
}

// OriginSecretHeader carries ORIGIN_SECRET from CloudFront to the functions.
const OriginSecretHeader = "X-Origin-Secret"

// JWKSMaxAgeSeconds is the longest CloudFront keeps the JWKS: its
// Cache-Control says 300 s, and a rotation keeps the previous key
// published one token life plus those 300 s (docs/security.md).
const JWKSMaxAgeSeconds = 300

// jwksBehavior caches GET /.well-known/jwks.json at the edge for as long as
// its Cache-Control allows, at most JWKSMaxAgeSeconds, one copy for every
// viewer (nothing of the request in the key), so that every shop verifier's
// fetch within five minutes is answered by CloudFront, not the position
// function. A 404 (no keys) is kept a second (lineErrorResponses).
func jwksBehavior(scope constructs.Construct) *awscloudfront.AddBehaviorOptions {
	return &awscloudfront.AddBehaviorOptions{
		ViewerProtocolPolicy: awscloudfront.ViewerProtocolPolicy_HTTPS_ONLY,
		AllowedMethods:       awscloudfront.AllowedMethods_ALLOW_GET_HEAD(),
		CachePolicy: awscloudfront.NewCachePolicy(scope, jsii.String("JwksCache"), &awscloudfront.CachePolicyProps{
			Comment:                    jsii.String("Waitroom JWKS: the origin's Cache-Control, at most 5 minutes"),
			MinTtl:                     awscdk.Duration_Seconds(jsii.Number(0)),
			DefaultTtl:                 awscdk.Duration_Seconds(jsii.Number(0)),
			MaxTtl:                     awscdk.Duration_Seconds(jsii.Number(JWKSMaxAgeSeconds)),
			HeaderBehavior:             awscloudfront.CacheHeaderBehavior_None(),
			CookieBehavior:             awscloudfront.CacheCookieBehavior_None(),
			QueryStringBehavior:        awscloudfront.CacheQueryStringBehavior_None(),
			EnableAcceptEncodingGzip:   jsii.Bool(true),
			EnableAcceptEncodingBrotli: jsii.Bool(true),
		}),
	}
}

func webDir(p PageProps) string {
	if p.WebDir != "" {
		return p.WebDir
	}
	return DefaultWebDir
}
