package main

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"

	"github.com/waitroom/waitroom"
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

// OrderGateEgress chooses how the order gate reaches ORDER_API_URL.
type OrderGateEgress string

const (
	// EgressNone keeps every function in private isolated subnets (no route
	// to the internet, no NAT gateway). ORDER_API_URL must then be reachable
	// privately: an address inside the VPC, a PrivateLink interface endpoint
	// the operator adds, VPC peering or a transit gateway. The default.
	EgressNone OrderGateEgress = "none"
	// EgressNAT adds public subnets, one NAT gateway and private subnets with
	// egress; only the order gate is placed there. Costs a NAT gateway.
	EgressNAT OrderGateEgress = "nat"
)

// The four functions, named as their directories under build/.
const (
	FnEnter     = "enter"
	FnPosition  = "position"
	FnAdmit     = "admit"
	FnOrderGate = "order-gate"
)

// Functions lists the function names in a fixed order.
var Functions = []string{FnEnter, FnPosition, FnAdmit, FnOrderGate}

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

// WaitroomProps configures NewWaitroomStack. Zero values take the defaults of
// API.md; WithDefaults shows them.
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
	// must be set.
	TrustUserHeaderFromProxy bool

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
	// OrderGateFailOpen sets ORDER_GATE_FAIL_OPEN=true: while the store is
	// unreachable the gate forwards orders unguarded (BRIEF.md, failure
	// policy). Off by default: the gate answers 503.
	OrderGateFailOpen bool

	CacheMode     CacheMode // default CacheServerless
	CacheNodeType string    // replication group only, default cache.r7g.large
	// CacheAccessString is the ACL of the functions' cache user.
	CacheAccessString string

	OrderGateEgress OrderGateEgress // default EgressNone

	CorsAllowOrigins []string // default ["*"]
	ApiRateLimit     float64  // steady requests per second for the stage, default 5000
	ApiBurstLimit    float64  // burst for the stage, default 10000

	LogRetention awslogs.RetentionDays // default one month

	// AlarmTopicArn, when set, receives every alarm's ALARM and OK
	// notifications. AlarmEmail, when set, creates a topic with that e-mail
	// subscription instead.
	AlarmTopicArn string
	AlarmEmail    string

	// NamePrefix names the cache, its users, the dashboard and the alarms
	// (lower case letters, digits and hyphens). Default: the stack id in
	// lower case.
	NamePrefix string
}

var (
	namePrefixRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,27}$`)
	// ErrNoAuthorizer is returned when the stack has no identity source.
	ErrNoAuthorizer = errors.New("waitroom: refusing to synthesize an API without an authorizer: " +
		"set JwtIssuer and JwtAudience (context jwtIssuer, jwtAudience), or, only behind a proxy you " +
		"control that sets X-User-Id, opt in with TrustUserHeaderFromProxy (context trustUserHeader=true)")
)

// DefaultNamePrefix turns a stack id into a name prefix.
func DefaultNamePrefix(stackID string) string {
	s := strings.ToLower(stackID)
	s = regexp.MustCompile(`[^a-z0-9-]+`).ReplaceAllString(s, "-")
	s = strings.Trim(s, "-")
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		s = "wr-" + s
	}
	if len(s) > 28 {
		s = strings.TrimRight(s[:28], "-")
	}
	return s
}

// WithDefaults returns a copy of p with every zero value replaced by its default.
func (p WaitroomProps) WithDefaults(stackID string) WaitroomProps {
	if p.AdmitRatePerSec == 0 {
		p.AdmitRatePerSec = waitroom.DefaultAdmitRatePerSec
	}
	if p.AdmitIntervalMs == 0 {
		p.AdmitIntervalMs = waitroom.DefaultAdmitIntervalMs
	}
	if p.EntryTokenTTLSeconds == 0 {
		p.EntryTokenTTLSeconds = waitroom.DefaultEntryTokenTTLSeconds
	}
	if p.QueueCapacity == 0 {
		p.QueueCapacity = waitroom.DefaultQueueCapacity
	}
	if p.OrderTimeoutMs == 0 {
		p.OrderTimeoutMs = waitroom.DefaultOrderTimeoutMs
	}
	if p.PollTiers == "" {
		p.PollTiers = waitroom.DefaultPollTiers
	}
	if p.CacheMode == "" {
		p.CacheMode = CacheServerless
	}
	if p.CacheNodeType == "" {
		p.CacheNodeType = "cache.r7g.large"
	}
	if p.CacheAccessString == "" {
		// Every command but the dangerous ones (FLUSHALL, KEYS, CONFIG, ...).
		p.CacheAccessString = "on ~* +@all -@dangerous"
	}
	if p.OrderGateEgress == "" {
		p.OrderGateEgress = EgressNone
	}
	if len(p.CorsAllowOrigins) == 0 {
		p.CorsAllowOrigins = []string{"*"}
	}
	if p.ApiRateLimit == 0 {
		p.ApiRateLimit = 5000
	}
	if p.ApiBurstLimit == 0 {
		p.ApiBurstLimit = 10000
	}
	if p.LogRetention == "" {
		p.LogRetention = awslogs.RetentionDays_ONE_MONTH
	}
	if p.NamePrefix == "" {
		p.NamePrefix = DefaultNamePrefix(stackID)
	}
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

// OrderGateTimeoutSeconds leaves the order gate time to answer 504 itself
// after ORDER_TIMEOUT_MS and to release its lock.
func (p WaitroomProps) OrderGateTimeoutSeconds() int {
	return (p.OrderTimeoutMs+999)/1000 + 5
}

// Validate reports the first problem with (defaulted) props.
func (p WaitroomProps) Validate() error {
	for _, check := range []func() error{p.validateIdentity, p.validateConfig, p.validateDeployment} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateIdentity: exactly one identity source, and a usable one.
func (p WaitroomProps) validateIdentity() error {
	if p.JwtIssuer == "" && !p.TrustUserHeaderFromProxy {
		return ErrNoAuthorizer
	}
	if p.JwtIssuer != "" && p.TrustUserHeaderFromProxy {
		return errors.New("waitroom: JwtIssuer and TrustUserHeaderFromProxy are exclusive: choose the JWT authorizer or the fronting proxy")
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

// validateConfig checks the functions' environment with the bounds the
// functions themselves apply at start, so that a bad value fails here and
// not at the first cold start.
func (p WaitroomProps) validateConfig() error {
	if p.OrderAPIURL == "" {
		return errors.New("waitroom: OrderAPIURL is required (context orderApiUrl): the base URL of the order API the gate protects")
	}
	if u, err := url.Parse(p.OrderAPIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
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
		return fmt.Errorf("waitroom: OrderTimeoutMs must be within 100..23000 (API Gateway waits 30 s at most), got %d", p.OrderTimeoutMs)
	}
	if _, err := waitroom.ParsePollTiers(p.PollTiers); err != nil {
		return fmt.Errorf("waitroom: PollTiers (context pollTiers) %q: %w", p.PollTiers, err)
	}
	return nil
}

// validateDeployment checks the AWS side: cache, network, names, limits.
func (p WaitroomProps) validateDeployment() error {
	if p.AssetDir == "" {
		return errors.New("waitroom: AssetDir is required (the build/ directory of `make build`)")
	}
	switch p.CacheMode {
	case CacheServerless, CacheReplicationGroup:
	default:
		return fmt.Errorf("waitroom: CacheMode %q: want %q or %q", p.CacheMode, CacheServerless, CacheReplicationGroup)
	}
	switch p.OrderGateEgress {
	case EgressNone, EgressNAT:
	default:
		return fmt.Errorf("waitroom: OrderGateEgress %q: want %q or %q", p.OrderGateEgress, EgressNone, EgressNAT)
	}
	if !namePrefixRE.MatchString(p.NamePrefix) {
		return fmt.Errorf("waitroom: NamePrefix %q must match %s", p.NamePrefix, namePrefixRE)
	}
	if p.ApiRateLimit < 1 || p.ApiBurstLimit < 1 {
		return errors.New("waitroom: ApiRateLimit and ApiBurstLimit must be positive")
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
