package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/envconfig"
)

// CacheMode chooses how the Redis-compatible store is provisioned.
type CacheMode string

const (
	// CacheServerless is ElastiCache Serverless for Valkey: cluster-mode, TLS
	// always on, scales by itself. The default.
	CacheServerless CacheMode = "serverless"
	// CacheReplicationGroup is a provisioned Valkey replication group (one
	// primary, one replica, Multi-AZ, cluster mode disabled).
	CacheReplicationGroup CacheMode = "replication-group"
)

// The four functions, named as their directories under build/.
const (
	FnEnter     = "enter"
	FnPosition  = "position"
	FnAdmit     = "admit"
	FnOrderGate = "order-gate"
)

// Functions lists the function names in a fixed order; FunctionNames adds
// the intake consumer when the props have one.
var Functions = []string{FnEnter, FnPosition, FnAdmit, FnOrderGate, FnAdmin}

// FunctionNames are the functions the stack builds, in a fixed order: every
// name that reaches Waitroom.Functions in alarms, dashboard and outputs.
func (p WaitroomProps) FunctionNames() []string {
	if p.Intake == waitroom.IntakeDirect || p.Intake == "" {
		return Functions
	}
	return append(append([]string{}, Functions...), FnIntakeConsumer)
}

// ScheduleSeconds is how often EventBridge invokes admit (its finest rate).
const ScheduleSeconds = 60

// admitOverlapSeconds is how long each admit invocation runs past the next
// scheduled one. EventBridge delivers a scheduled event a few seconds after
// the minute, not to the second; running 10 s longer turns that jitter into a
// harmless overlap (the Redis rate budget is shared) instead of a gap, which
// would lose admissions.
const admitOverlapSeconds = 10

// admitTimeoutSlackSeconds is added to the longest possible run for admit's timeout.
const admitTimeoutSlackSeconds = 10

// NoLimit, as a concurrency or a snapshot retention, turns the setting off
// (context value 0).
const NoLimit = -1

// WaitroomProps configures NewWaitroomStack. Zero values take the defaults;
// WithDefaults shows them.
type WaitroomProps struct {
	awscdk.StackProps

	// AssetDir holds one directory per function (enter, position, admit,
	// order-gate), each with a linux/arm64 executable named bootstrap, as
	// `make build` lays them out in build/. Required.
	AssetDir string

	// JwtIssuer and JwtAudience configure the API's JWT authorizer (the
	// identity source in AWS: the user id is the token's sub claim).
	JwtIssuer   string
	JwtAudience []string
	// TrustUserHeaderFromProxy opts in to running without an authorizer,
	// trusting the X-User-Id header set by a fronting proxy the operator
	// controls (TRUST_USER_HEADER=true). Exactly one of JwtIssuer and this
	// must be set, and this one needs ProxySecretSSMParameter.
	TrustUserHeaderFromProxy bool
	// ProxySecretSSMParameter names an SSM Parameter Store String parameter
	// (optionally name:version) holding the secret the proxy sends as
	// X-Proxy-Secret. The functions get PROXY_SECRET as the CloudFormation
	// dynamic reference {{resolve:ssm:…}}, so the value is never in the template.
	ProxySecretSSMParameter string

	// AnonymousVisitors is ANONYMOUS_VISITORS: visitors without an account
	// join with a signed queue ticket, and the stack serves the waiting page
	// (page.go) through CloudFront. A third identity mode: it excludes
	// JwtIssuer (docs/security.md, "Anonymous visitors in AWS") and may be
	// combined with TrustUserHeaderFromProxy.
	AnonymousVisitors bool
	// Challenge is CHALLENGE (default off): with waitroom.ChallengePoW an
	// enter that would make a new anonymous visitor must carry a solved
	// proof of work (waitroom.ChallengeHeader), signed with the ticket key.
	// Only with AnonymousVisitors. ChallengeBits is CHALLENGE_BITS, its
	// difficulty (default waitroom.DefaultChallengeBits), only with pow.
	// Both go to enter alone, the one function that makes visitors.
	Challenge     waitroom.ChallengeMode
	ChallengeBits int
	// OriginSecretSSMParameter names the SSM String parameter (optionally
	// name:version) holding ORIGIN_SECRET: CloudFront adds it to every
	// request it passes to the API (X-Origin-Secret), and the visitor
	// functions refuse requests without it. Required with AnonymousVisitors
	// (the page on CloudFront fronts the API).
	OriginSecretSSMParameter string
	// APIDomainName and APICertificateArn are the HTTP API's own custom
	// domain (a regional ACM certificate of the stack's region covering it),
	// required with AnonymousVisitors: the stack disables the execute-api
	// endpoint when CloudFront fronts the API, and API Gateway then answers
	// on a custom domain only, which is CloudFront's origin and the
	// operators' address for the admin routes.
	APIDomainName, APICertificateArn string
	// OpenRooms is OPEN_ROOMS: any valid room name works. Off by default:
	// only rooms an operator created (waitroomctl --aws) exist, so nobody can
	// make the admitters walk thousands of throwaway rooms.
	OpenRooms bool
	// OrderRooms is the order gate's ORDER_ROOMS (context orderRooms): the
	// rooms whose tokens buy. Empty: the rooms an operator created; ["*"]:
	// every room, refused with OpenRooms (orderrooms.go).
	OrderRooms []string
	// NoInstantAdmit is INSTANT_ADMIT=false: rooms queue every enter by
	// default, even when nobody waits (an operator turns instantAdmit on
	// per room). Off by default: an idle room admits at once.
	NoInstantAdmit bool
	// TicketSecretSSMParameter names the SSM String parameter (optionally
	// name:version) holding TICKET_SECRET. Required with AnonymousVisitors.
	TicketSecretSSMParameter string
	// EntryTokenKeysSSMParameter names the SSM String parameter (optionally
	// name:version) holding ENTRY_TOKEN_KEYS, the Ed25519 seed(s) that sign
	// entry tokens (docs/security.md, "Entry-token keys"). Empty: opaque
	// entry tokens, and GET /.well-known/jwks.json answers 404.
	EntryTokenKeysSSMParameter string
	// EntryTokenPublicKeysSSMParameter names the SSM String parameter
	// (optionally name:version) holding ENTRY_TOKEN_PUBLIC_KEYS, the public
	// keys of those seeds (cmd/entrytoken-keys prints both): the order gate
	// verifies with them and never holds a key that signs.
	EntryTokenPublicKeysSSMParameter string
	// EntryTokenIssuer is ENTRY_TOKEN_ISSUER, the tokens' iss (empty: the functions' default).
	EntryTokenIssuer string
	// Intake is INTAKE (default direct): broker and fallback add the intake
	// queue and its consumer (intake.go) and need TicketSecretSSMParameter,
	// whose key signs the receipts.
	Intake waitroom.Intake
	// TicketTTLSeconds is TICKET_TTL_SECONDS (0: the functions' default).
	TicketTTLSeconds int
	// ContinueURL is where the page's Continue button leads (CONTINUE_URL).
	ContinueURL string
	// OrderForwardHeaders is ORDER_FORWARD_HEADERS.
	OrderForwardHeaders []string
	// PageImageOrigins are the https origins rooms' logos may come from
	// (PAGE_IMAGE_ORIGINS of the admin function, which checks logoUrl), also
	// written into the page's Content-Security-Policy img-src.
	PageImageOrigins []string

	// The functions' configuration (docs/API.md); zero values take the
	// root package's defaults (waitroom.Default*).
	AdmitRatePerSec      float64 // ADMIT_RATE_PER_SEC
	AdmitIntervalMs      int     // ADMIT_INTERVAL_MS
	EntryTokenTTLSeconds int     // ENTRY_TOKEN_TTL_SECONDS
	QueueCapacity        int     // QUEUE_CAPACITY
	OrderAPIURL          string  // ORDER_API_URL
	OrderTimeoutMs       int     // ORDER_TIMEOUT_MS
	// PollTiers is POLL_TIERS, "minWaitSeconds:pollMs,…"; checked with
	// waitroom.ParsePollTiers at synthesis so a bad table never deploys.
	PollTiers string
	// EdgeRateLimit is the per-client rate rule at the edge (edge.go):
	// requests a client address may send through CloudFront in 5
	// minutes; 0 for none.
	EdgeRateLimit int
	// OrderGateFailOpen sets ORDER_GATE_FAIL_OPEN=true: while the store is
	// unreachable the gate forwards orders unguarded, and while the order
	// record (DynamoDB) is, it lets them through guarded by the store alone
	// (docs/design.md, failure policy, "The order record"). Off by default:
	// the gate answers 503.
	OrderGateFailOpen bool

	// Egress is how the order gate reaches ORDER_API_URL (egress.go).
	Egress Egress

	CacheMode     CacheMode // default CacheServerless
	CacheNodeType string    // replication group only, default cache.r7g.large
	// CacheMaxStorageGB and CacheMaxECPUPerSecond are the serverless cache's
	// CacheUsageLimits: the most it may grow to, and so cost.
	CacheMaxStorageGB     int
	CacheMaxECPUPerSecond int
	// CacheSnapshotRetentionDays daily snapshots are kept (NoLimit: none);
	// CacheSnapshotTime is when they start, "HH:MM" UTC.
	CacheSnapshotRetentionDays int
	CacheSnapshotTime          string

	// CorsAllowOrigins are the waiting page's origins. Required unless
	// NoCors says the page is served from the API's own origin (or no
	// browser calls it), in which case the API answers no CORS preflight.
	CorsAllowOrigins []string
	NoCors           bool
	// Throttling per route, requests per second (burst: twice the rate).
	// Defaults follow the load the configuration generates (api.go).
	EnterRateLimit, PositionRateLimit, OrdersRateLimit int

	// AdmitReservedConcurrency is reserved for admit so that nothing else
	// can starve admission; OrderGateConcurrency caps (and reserves) the
	// order gate so that a slow order API cannot take the account's
	// concurrency. NoLimit leaves either unset.
	AdmitReservedConcurrency int
	OrderGateConcurrency     int

	LogRetention awslogs.RetentionDays // default one month

	// AlarmTopicArn, when set, receives every alarm's ALARM and OK
	// notifications. AlarmEmail, when set, creates a topic with that e-mail
	// subscription instead.
	AlarmTopicArn string
	AlarmEmail    string
	// BudgetMonthlyUSD is the amount of the monthly cost budget.
	BudgetMonthlyUSD int

	// NamePrefix names the cache, its users, the dashboard and the alarms
	// (lower case letters, digits and hyphens). Default: the stack id in
	// lower case.
	NamePrefix string
}

var (
	namePrefixRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,27}$`) // maxNamePrefix
	ssmNameRE    = regexp.MustCompile(`^[a-zA-Z0-9_.\-/]+(:[0-9]+)?$`)
	hhmmRE       = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9]$`)
	// domainNameRE is a lower-case DNS name of two labels or more.
	domainNameRE     = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$`)
	acmCertificateRE = regexp.MustCompile(`^arn:aws[a-z-]*:acm:[a-z0-9-]+:[0-9]{12}:certificate/[A-Za-z0-9-]+$`)
	// ErrNoAuthorizer is returned when the stack has no identity source.
	ErrNoAuthorizer = errors.New("waitroom: refusing to synthesize an API without an authorizer: " +
		"set JwtIssuer and JwtAudience (context jwtIssuer, jwtAudience), or, only behind a proxy you " +
		"control that sets X-User-Id, opt in with TrustUserHeaderFromProxy (context trustUserHeader=true), " +
		"or let visitors in without an account with signed queue tickets (context anonymousVisitors=true)")
	// ErrAnonymousWithJWT: an HTTP API JWT authorizer refuses every request
	// without a token, so it cannot sit on routes that anonymous visitors
	// use, and the functions (no route to the issuer's keys) cannot verify a
	// token themselves.
	ErrAnonymousWithJWT = errors.New("waitroom: anonymousVisitors=true and jwtIssuer are exclusive: API Gateway's JWT " +
		"authorizer refuses requests without a token, and without it no token would be verified; deploy one stack per " +
		"mode, or identify signed-in users through your proxy (trustUserHeader=true) beside anonymous visitors")
)

// maxNamePrefix is the longest name prefix: the cache's users append
// "-default" and ElastiCache ids take 40 characters at most.
const maxNamePrefix = 28

// DefaultNamePrefix turns a stack id into a name prefix. A longer id is
// cut, and ends with 8 hex digits of its digest: two stacks whose ids
// differ only past the cut must not share their names in one account.
func DefaultNamePrefix(stackID string) string {
	s := strings.ToLower(stackID)
	s = regexp.MustCompile(`[^a-z0-9-]+`).ReplaceAllString(s, "-")
	s = strings.Trim(s, "-")
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		s = "wr-" + s
	}
	if len(s) > maxNamePrefix {
		sum := sha256.Sum256([]byte(stackID))
		s = strings.TrimRight(s[:maxNamePrefix-9], "-") + "-" + hex.EncodeToString(sum[:])[:8]
	}
	return s
}

// setDefault replaces a zero *v with def.
func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// WithDefaults returns a copy of p with every zero value replaced by its default.
func (p WaitroomProps) WithDefaults(stackID string) WaitroomProps {
	setDefault(&p.AdmitRatePerSec, waitroom.DefaultAdmitRatePerSec)
	setDefault(&p.AdmitIntervalMs, waitroom.DefaultAdmitIntervalMs)
	setDefault(&p.EntryTokenTTLSeconds, waitroom.DefaultEntryTokenTTLSeconds)
	setDefault(&p.QueueCapacity, waitroom.DefaultQueueCapacity)
	setDefault(&p.OrderTimeoutMs, waitroom.DefaultOrderTimeoutMs)
	setDefault(&p.PollTiers, waitroom.DefaultPollTiers)
	setDefault(&p.Intake, waitroom.DefaultIntake)
	setDefault(&p.Challenge, waitroom.ChallengeOff)
	if p.Challenge == waitroom.ChallengePoW {
		setDefault(&p.ChallengeBits, waitroom.DefaultChallengeBits)
	}
	setDefault(&p.CacheMode, CacheServerless)
	setDefault(&p.CacheNodeType, "cache.r7g.large")
	setDefault(&p.CacheMaxStorageGB, 2)
	setDefault(&p.CacheMaxECPUPerSecond, 100_000)
	setDefault(&p.CacheSnapshotRetentionDays, 7)
	setDefault(&p.CacheSnapshotTime, "03:00")
	setDefault(&p.AdmitReservedConcurrency, 3)
	setDefault(&p.OrderGateConcurrency, max(10, int(math.Ceil(2*p.AdmitRatePerSec))))
	setDefault(&p.LogRetention, awslogs.RetentionDays_ONE_MONTH)
	setDefault(&p.BudgetMonthlyUSD, 50)
	setDefault(&p.NamePrefix, DefaultNamePrefix(stackID))
	p.setThrottleDefaults()
	return p
}

// AdmitBatches is ADMIT_BATCHES. One admit invocation covers ADMIT_BATCHES
// × ADMIT_INTERVAL_MS of time whatever its jitter (the core shortens gaps and
// runs extra batches rather than lengthening the run), so covering
// ScheduleSeconds + admitOverlapSeconds (70 s: 700 batches of 100 ms) makes
// the per-minute invocations chain into continuous admission.
func (p WaitroomProps) AdmitBatches() int {
	return int(math.Ceil(float64((ScheduleSeconds+admitOverlapSeconds)*1000) / float64(p.AdmitIntervalMs)))
}

// AdmitTimeoutSeconds is the admit function's timeout: the time an
// invocation covers plus slack.
func (p WaitroomProps) AdmitTimeoutSeconds() int {
	covered := math.Ceil(float64(p.AdmitBatches()) * float64(p.AdmitIntervalMs) / 1000)
	return int(covered) + admitTimeoutSlackSeconds
}

// OrderGateTimeoutSeconds covers the gate's worst path (waitroom.OrderGateBudget):
// the token check, ORDER_TIMEOUT_MS downstream, then the commit's retries,
// so that an order the downstream took is recorded or its lock kept.
func (p WaitroomProps) OrderGateTimeoutSeconds() int {
	budget := waitroom.OrderGateBudget(time.Duration(p.OrderTimeoutMs) * time.Millisecond)
	return int(math.Ceil(budget.Seconds()))
}

// Validate reports the first problem with (defaulted) props.
func (p WaitroomProps) Validate() error {
	for _, check := range []func() error{p.validateImageOrigins, p.validateIdentity, p.validateVisitors, p.validateChallenge, p.validateFront, p.validateEntryTokens, p.validateConfig,
		p.Egress.validate(p.OrderAPIURL), p.validateCache, p.validateAPI, p.validateEdge, p.validateOrderRooms} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateIdentity: exactly one identity source, and a usable one; the
// trusted-proxy mode only with a proxy secret.
func (p WaitroomProps) validateIdentity() error {
	if p.JwtIssuer == "" && !p.TrustUserHeaderFromProxy && !p.AnonymousVisitors {
		return ErrNoAuthorizer
	}
	if p.JwtIssuer != "" && p.AnonymousVisitors {
		return ErrAnonymousWithJWT
	}
	if p.JwtIssuer != "" && p.TrustUserHeaderFromProxy {
		return errors.New("waitroom: JwtIssuer and TrustUserHeaderFromProxy are exclusive: choose the JWT authorizer or the fronting proxy")
	}
	if p.TrustUserHeaderFromProxy && p.ProxySecretSSMParameter == "" {
		return errors.New("waitroom: trustUserHeader=true needs proxySecretSsmParameter: the name of an SSM String parameter " +
			"holding the secret your proxy sends as X-Proxy-Secret (otherwise anyone calling the API directly could send X-User-Id)")
	}
	if p.ProxySecretSSMParameter != "" && (!p.TrustUserHeaderFromProxy || !ssmNameRE.MatchString(p.ProxySecretSSMParameter)) {
		return fmt.Errorf("waitroom: proxySecretSsmParameter %q: want an SSM parameter name (optionally name:version), and only with trustUserHeader=true",
			p.ProxySecretSSMParameter)
	}
	if p.JwtIssuer != "" {
		u, err := url.Parse(p.JwtIssuer)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("waitroom: JwtIssuer %q must be an https URL", p.JwtIssuer)
		}
		if len(p.JwtAudience) == 0 {
			return errors.New("waitroom: JwtAudience needs at least one audience with JwtIssuer")
		}
	}
	return nil
}

// validateImageOrigins: each of PageImageOrigins is an https origin, as the
// admin function reads PAGE_IMAGE_ORIGINS at start.
func (p WaitroomProps) validateImageOrigins() error {
	for _, o := range p.PageImageOrigins {
		origin, err := waitroom.ImageOrigin(o)
		if err != nil || !strings.EqualFold(origin, strings.TrimSuffix(o, "/")) {
			return fmt.Errorf("waitroom: %s %q: want https origins (https://host or https://host:port), comma-separated", CtxPageImageOrigins, o)
		}
	}
	return nil
}

// PageProps are the visitor settings the page and the functions share.
func (p WaitroomProps) PageProps() PageProps {
	return PageProps{ContinueURL: p.ContinueURL, AnonymousVisitors: p.AnonymousVisitors,
		TicketSecretSSMParameter: p.TicketSecretSSMParameter, OriginSecretSSMParameter: p.OriginSecretSSMParameter, TicketTTLSeconds: p.TicketTTLSeconds,
		ForwardHeaders: p.OrderForwardHeaders, Receipts: p.Intake != waitroom.IntakeDirect, ImageOrigins: p.PageImageOrigins}
}

// validateFront: the page's CloudFront fronts the API (anonymous visitors)
// only with the origin secret it adds and the API's own domain, on which
// the API answers once its execute-api endpoint is disabled; without the
// page, neither.
func (p WaitroomProps) validateFront() error {
	if !p.AnonymousVisitors {
		if p.OriginSecretSSMParameter != "" || p.APIDomainName != "" || p.APICertificateArn != "" {
			return fmt.Errorf("waitroom: %s, %s and %s are for the page on CloudFront in front of the API: only with anonymousVisitors=true",
				CtxOriginSecret, CtxAPIDomainName, CtxAPICertificate)
		}
		return nil
	}
	switch {
	case !ssmNameRE.MatchString(p.OriginSecretSSMParameter):
		return fmt.Errorf("waitroom: anonymousVisitors=true puts CloudFront in front of the API, which then takes only requests carrying "+
			"CloudFront's X-Origin-Secret: set %s, the name of an SSM String parameter (optionally name:version) holding ORIGIN_SECRET "+
			"(16 to 512 visible ASCII characters), e.g. made with `aws ssm put-parameter --type String --name /waitroom/origin-secret "+
			"--value \"$(openssl rand -hex 32)\"`; got %q", CtxOriginSecret, p.OriginSecretSSMParameter)
	case len(p.APIDomainName) > 253 || !domainNameRE.MatchString(p.APIDomainName):
		return fmt.Errorf("waitroom: anonymousVisitors=true disables the API's execute-api endpoint (CloudFront fronts it), and API Gateway "+
			"then answers on a custom domain only: set %s to a domain name of yours for the API (e.g. api.queue.shop.example), "+
			"and %s to its certificate; got %q", CtxAPIDomainName, CtxAPICertificate, p.APIDomainName)
	case !acmCertificateRE.MatchString(p.APICertificateArn):
		return fmt.Errorf("waitroom: %s %q: want the ARN of an ACM certificate for %s in the stack's region (aws acm request-certificate "+
			"--domain-name %s --validation-method DNS)", CtxAPICertificate, p.APICertificateArn, p.APIDomainName, p.APIDomainName)
	}
	return nil
}

// validateEntryTokens checks the parameters of the seeds and of their
// public keys: both or neither (the gate verifies with the public keys, and
// without them would refuse every signed token), each a parameter name.
func (p WaitroomProps) validateEntryTokens() error {
	seeds, public := p.EntryTokenKeysSSMParameter, p.EntryTokenPublicKeysSSMParameter
	switch {
	case seeds != "" && !ssmNameRE.MatchString(seeds):
		return fmt.Errorf("waitroom: entryTokenKeysSsmParameter %q: want an SSM parameter name (optionally name:version)", seeds)
	case public != "" && !ssmNameRE.MatchString(public):
		return fmt.Errorf("waitroom: entryTokenPublicKeysSsmParameter %q: want an SSM parameter name (optionally name:version)", public)
	case seeds != "" && public == "":
		return errors.New("waitroom: entryTokenKeysSsmParameter needs entryTokenPublicKeysSsmParameter, the parameter holding its seeds' " +
			"public keys (ENTRY_TOKEN_PUBLIC_KEYS), which the order gate verifies with: `go run ./cmd/entrytoken-keys` prints both values, " +
			"`-public` those of an existing parameter's value (infra/README.md, \"Signed entry tokens\")")
	case public != "" && seeds == "":
		return errors.New("waitroom: entryTokenPublicKeysSsmParameter is set but entryTokenKeysSsmParameter is not: nothing would sign the tokens it verifies")
	case p.EntryTokenIssuer != "" && seeds == "":
		return errors.New("waitroom: entryTokenIssuer is set but entryTokenKeysSsmParameter is not: tokens would not be signed")
	}
	return nil
}

// validateVisitors checks the visitor variables with the functions' own
// reader (envconfig.Load: TTL bounds, CONTINUE_URL, the headers the gate
// may not forward). TICKET_SECRET is left out: the template holds only the
// parameter's name, its value exists at deploy time.
func (p WaitroomProps) validateVisitors() error {
	env, err := visitorEnv(p.PageProps())
	if err != nil {
		return err
	}
	if p.TicketSecretSSMParameter != "" && !p.AnonymousVisitors && p.Intake == waitroom.IntakeDirect {
		return errors.New("waitroom: ticketSecretSsmParameter is set but anonymousVisitors is not true and intake is direct: no ticket or receipt would be issued")
	}
	if p.ContinueURL != "" {
		env["CONTINUE_URL"] = &p.ContinueURL
	}
	delete(env, "TICKET_SECRET")
	delete(env, "ORIGIN_SECRET")
	lookup := func(name string) (string, bool) {
		v, ok := env[name]
		if !ok {
			return "", false
		}
		return *v, true
	}
	if _, err := envconfig.Load(lookup, envconfig.Defaults{GenerateTicketSecret: true}); err != nil {
		return fmt.Errorf("waitroom: visitor settings (context %s, %s, %s): %w", CtxTicketTTL, CtxContinueURL, CtxForwardHeaders, err)
	}
	return nil
}

// validateChallenge: CHALLENGE is off or pow, pow only with anonymous
// visitors (only a new anonymous visitor solves one), CHALLENGE_BITS only
// with pow and within the functions' own bounds (envconfig.Load, so
// they are defined once), so that enter never fails its first cold start.
func (p WaitroomProps) validateChallenge() error {
	switch {
	case p.Challenge != waitroom.ChallengeOff && p.Challenge != waitroom.ChallengePoW:
		return fmt.Errorf("waitroom: context %s=%q: want %s or %s", CtxChallenge, p.Challenge, waitroom.ChallengeOff, waitroom.ChallengePoW)
	case p.Challenge == waitroom.ChallengePoW && !p.AnonymousVisitors:
		return fmt.Errorf("waitroom: context %s=%s needs %s=true: only a new anonymous visitor solves a challenge, it would guard nothing",
			CtxChallenge, waitroom.ChallengePoW, CtxAnonymous)
	case p.Challenge != waitroom.ChallengePoW && p.ChallengeBits != 0:
		return fmt.Errorf("waitroom: context %s=%d is set but %s is not %s: no challenge would be asked", CtxChallengeBits, p.ChallengeBits,
			CtxChallenge, waitroom.ChallengePoW)
	case p.Challenge == waitroom.ChallengeOff:
		return nil
	}
	env := merge(map[string]*string{"ANONYMOUS_VISITORS": jsii.String("true")}, challengeEnv(p))
	lookup := func(name string) (string, bool) {
		v, ok := env[name]
		if !ok {
			return "", false
		}
		return *v, true
	}
	if _, err := envconfig.Load(lookup, envconfig.Defaults{GenerateTicketSecret: true}); err != nil {
		return fmt.Errorf("waitroom: context %s=%d: %w", CtxChallengeBits, p.ChallengeBits, err)
	}
	return nil
}

// validateConfig checks the functions' environment with the bounds the
// functions themselves apply at start, so that a bad value fails here and
// not at the first cold start.
func (p WaitroomProps) validateConfig() error {
	if p.AssetDir == "" {
		return errors.New("waitroom: AssetDir is required (the build/ directory of `make build`)")
	}
	if p.OrderAPIURL == "" {
		return errors.New("waitroom: OrderAPIURL is required (context orderApiUrl): the base URL of the order API the gate protects")
	}
	if u, err := url.Parse(p.OrderAPIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return fmt.Errorf("waitroom: OrderAPIURL %q must be an http(s) URL", p.OrderAPIURL)
	}
	if p.AdmitRatePerSec < 0.001 || p.AdmitRatePerSec > 1e6 {
		return fmt.Errorf("waitroom: AdmitRatePerSec must be within 0.001..1000000, got %g", p.AdmitRatePerSec)
	}
	if p.AdmitIntervalMs < 10 || p.AdmitIntervalMs > 10000 {
		return fmt.Errorf("waitroom: AdmitIntervalMs must be within 10..10000, got %d", p.AdmitIntervalMs)
	}
	if p.EntryTokenTTLSeconds < 30 {
		return fmt.Errorf("waitroom: EntryTokenTTLSeconds must be at least 30, got %d", p.EntryTokenTTLSeconds)
	}
	if p.QueueCapacity < 1 {
		return fmt.Errorf("waitroom: QueueCapacity must be at least 1, got %d", p.QueueCapacity)
	}
	// API Gateway HTTP APIs give an integration at most 30 s.
	if p.OrderTimeoutMs < 100 || p.OrderGateTimeoutSeconds() > 29 {
		return fmt.Errorf("waitroom: OrderTimeoutMs must be within 100..20000 (the gate's worst path, token check + order + commit retries, within API Gateway waits 30 s at most), got %d", p.OrderTimeoutMs)
	}
	if _, err := waitroom.ParsePollTiers(p.PollTiers); err != nil {
		return fmt.Errorf("waitroom: PollTiers (context pollTiers) %q: %w", p.PollTiers, err)
	}
	if p.AdmitReservedConcurrency != NoLimit && p.AdmitReservedConcurrency < 2 {
		return fmt.Errorf("waitroom: admitReservedConcurrency must be 0 (none) or at least 2 (two invocations overlap), got %d", p.AdmitReservedConcurrency)
	}
	if p.OrderGateConcurrency != NoLimit && p.OrderGateConcurrency < 1 {
		return fmt.Errorf("waitroom: orderGateConcurrency must be 0 (no cap) or positive, got %d", p.OrderGateConcurrency)
	}
	switch p.Intake {
	case waitroom.IntakeDirect, waitroom.IntakeBroker, waitroom.IntakeFallback:
	default:
		return fmt.Errorf("waitroom: intake %q: want direct, broker or fallback", p.Intake)
	}
	return nil
}

// validateCache checks the store's settings and the names derived from the prefix.
func (p WaitroomProps) validateCache() error {
	switch p.CacheMode {
	case CacheServerless, CacheReplicationGroup:
	default:
		return fmt.Errorf("waitroom: CacheMode %q: want %q or %q", p.CacheMode, CacheServerless, CacheReplicationGroup)
	}
	if !namePrefixRE.MatchString(p.NamePrefix) {
		return fmt.Errorf("waitroom: NamePrefix %q must match %s", p.NamePrefix, namePrefixRE)
	}
	if p.CacheMaxStorageGB < 1 || p.CacheMaxStorageGB > 5000 {
		return fmt.Errorf("waitroom: cacheMaxStorageGb must be within 1..5000, got %d", p.CacheMaxStorageGB)
	}
	if p.CacheMaxECPUPerSecond < 1000 || p.CacheMaxECPUPerSecond > 15_000_000 {
		return fmt.Errorf("waitroom: cacheMaxEcpuPerSecond must be within 1000..15000000, got %d", p.CacheMaxECPUPerSecond)
	}
	if p.CacheSnapshotRetentionDays != NoLimit && (p.CacheSnapshotRetentionDays < 1 || p.CacheSnapshotRetentionDays > 35) {
		return fmt.Errorf("waitroom: cacheSnapshotRetentionDays must be 0 (no snapshots) or within 1..35, got %d", p.CacheSnapshotRetentionDays)
	}
	if !hhmmRE.MatchString(p.CacheSnapshotTime) {
		return fmt.Errorf("waitroom: cacheSnapshotTime %q: want HH:MM (UTC)", p.CacheSnapshotTime)
	}
	return nil
}

// validateAPI checks CORS, throttling and the budget.
func (p WaitroomProps) validateAPI() error {
	if p.NoCors && len(p.CorsAllowOrigins) > 0 {
		return errors.New("waitroom: corsOrigins=none and a list of origins are exclusive")
	}
	if !p.NoCors && len(p.CorsAllowOrigins) == 0 {
		return errors.New("waitroom: corsOrigins is required: the origins of your waiting page (https://shop.example.com,...), " +
			"or corsOrigins=none when the page is served from the API's own origin or no browser calls the API")
	}
	for _, o := range p.CorsAllowOrigins {
		u, err := url.Parse(o)
		if o == "*" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.Trim(u.Path, "/") != "" {
			return fmt.Errorf("waitroom: corsOrigins %q: want origins such as https://shop.example.com (no wildcard)", o)
		}
	}
	if p.EnterRateLimit < 1 || p.PositionRateLimit < 1 || p.OrdersRateLimit < 1 {
		return errors.New("waitroom: enterRateLimit, positionRateLimit and ordersRateLimit must be positive")
	}
	if p.BudgetMonthlyUSD < 1 {
		return fmt.Errorf("waitroom: budgetMonthlyUsd must be positive, got %d", p.BudgetMonthlyUSD)
	}
	return nil
}

// PollTiersEnv is POLL_TIERS as the functions get it: the validated table
// in its canonical spelling (farthest tier first).
func (p WaitroomProps) PollTiersEnv() string {
	t, err := waitroom.ParsePollTiers(p.PollTiers)
	if err != nil {
		return p.PollTiers
	}
	return t.String()
}
