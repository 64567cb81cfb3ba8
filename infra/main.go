// Command infra is the Waitroom CDK app: `go run .` synthesizes the stack
// into cdk.out (or $CDK_OUTDIR when the cdk CLI runs it). Configuration comes
// from CDK context (-c key=value, cdk.json, or CDK_CONTEXT_JSON); see
// README.md, "Deploy to AWS".
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/infra/configs"
)

// Context keys read by the app (infra/README.md, "Context keys").
const (
	CtxStackName            = configs.StackNameKey
	CtxAssetDir             = "assetDir"
	CtxJwtIssuer            = "jwtIssuer"
	CtxJwtAudience          = "jwtAudience"
	CtxTrustUserHeader      = "trustUserHeader"
	CtxProxySecret          = "proxySecretSsmParameter"
	CtxAnonymous            = "anonymousVisitors"
	CtxChallenge            = "challenge"
	CtxChallengeBits        = "challengeBits"
	CtxOriginSecret         = "originSecretSsmParameter"
	CtxAPIDomainName        = "apiDomainName"
	CtxAPICertificate       = "apiCertificateArn"
	CtxOpenRooms            = "openRooms"
	CtxOrderRooms           = "orderRooms"
	CtxInstantAdmit         = "instantAdmit"
	CtxIntake               = "intake"
	CtxTicketSecret         = "ticketSecretSsmParameter"
	CtxEntryTokenKeys       = "entryTokenKeysSsmParameter"
	CtxEntryTokenPublicKeys = "entryTokenPublicKeysSsmParameter"
	CtxEntryTokenIssuer     = "entryTokenIssuer"
	CtxTicketTTL            = "ticketTtlSeconds"
	CtxContinueURL          = "continueUrl"
	CtxForwardHeaders       = "orderForwardHeaders"
	CtxPageImageOrigins     = "pageImageOrigins"
	CtxAdmitRate            = "admitRatePerSec"
	CtxAdmitInterval        = "admitIntervalMs"
	CtxTokenTTL             = "entryTokenTtlSeconds"
	CtxQueueCapacity        = "queueCapacity"
	CtxOrderAPIURL          = "orderApiUrl"
	CtxOrderTimeout         = "orderTimeoutMs"
	CtxOrderFailOpen        = "orderGateFailOpen"
	CtxPollTiers            = "pollTiers"
	CtxOrderGateEgress      = "orderGateEgress"
	CtxOrderAPICidr         = "orderApiCidr"
	CtxOrderAPIPrefixList   = "orderApiPrefixList"
	CtxOrderAPIRoute        = "orderApiRouteTarget"
	CtxOrderAPIPrivateDNS   = "orderApiPrivateDns"
	CtxCacheMode            = "cacheMode"
	CtxCacheNodeType        = "cacheNodeType"
	CtxCacheMaxStorage      = "cacheMaxStorageGb"
	CtxCacheMaxECPU         = "cacheMaxEcpuPerSecond"
	CtxSnapshotRetention    = "cacheSnapshotRetentionDays"
	CtxSnapshotTime         = "cacheSnapshotTime"
	CtxCorsOrigins          = "corsOrigins"
	CtxEnterRate            = "enterRateLimit"
	CtxPositionRate         = "positionRateLimit"
	CtxOrdersRate           = "ordersRateLimit"
	CtxAdmitReserved        = "admitReservedConcurrency"
	CtxOrderGateCap         = "orderGateConcurrency"
	CtxLogRetentionDays     = "logRetentionDays"
	CtxAlarmTopicArn        = "alarmTopicArn"
	CtxAlarmEmail           = "alarmEmail"
	CtxBudget               = "budgetMonthlyUsd"
	CtxNamePrefix           = "namePrefix"
)

func main() {
	err := run()
	jsii.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	if path := os.Getenv(EnvConfigurations); path != "" {
		return synthConfigurations(path, os.Getenv("CDK_OUTDIR")) // make templates
	}
	appProps := &awscdk.AppProps{}
	if os.Getenv("CDK_OUTDIR") == "" {
		// Run directly (`go run .`, `make synth`): write where cdk would.
		appProps.Outdir = jsii.String("cdk.out")
	}
	app := awscdk.NewApp(appProps)

	ctx := contextReader{app: app}
	id := ctx.str(CtxStackName, "Waitroom")
	props, err := propsFromContext(ctx)
	if err != nil {
		return err
	}
	// No Env: the template is environment-agnostic (no look-ups, so it
	// synthesizes offline); `cdk deploy` deploys it to the account and
	// region of the caller's AWS credentials.
	if _, err := NewWaitroomStack(app, id, props); err != nil {
		return err
	}
	app.Synth(nil)
	return nil
}

// propsFromContext reads WaitroomProps from CDK context.
func propsFromContext(ctx contextGetter) (WaitroomProps, error) {
	r := ctxReader{ctx: ctx}
	p := WaitroomProps{
		AssetDir:                         r.str(CtxAssetDir),
		JwtIssuer:                        r.str(CtxJwtIssuer),
		JwtAudience:                      splitList(r.str(CtxJwtAudience)),
		TrustUserHeaderFromProxy:         r.boolean(CtxTrustUserHeader),
		ProxySecretSSMParameter:          r.str(CtxProxySecret),
		AnonymousVisitors:                r.boolean(CtxAnonymous),
		Challenge:                        waitroom.ChallengeMode(r.str(CtxChallenge)),
		ChallengeBits:                    r.integer(CtxChallengeBits),
		OriginSecretSSMParameter:         r.str(CtxOriginSecret),
		APIDomainName:                    r.str(CtxAPIDomainName),
		APICertificateArn:                r.str(CtxAPICertificate),
		OpenRooms:                        r.boolean(CtxOpenRooms),
		OrderRooms:                       splitList(r.str(CtxOrderRooms)),
		NoInstantAdmit:                   !r.booleanOr(CtxInstantAdmit, true),
		Intake:                           waitroom.Intake(r.str(CtxIntake)),
		TicketSecretSSMParameter:         r.str(CtxTicketSecret),
		EntryTokenKeysSSMParameter:       r.str(CtxEntryTokenKeys),
		EntryTokenPublicKeysSSMParameter: r.str(CtxEntryTokenPublicKeys),
		EntryTokenIssuer:                 r.str(CtxEntryTokenIssuer),
		TicketTTLSeconds:                 r.integer(CtxTicketTTL),
		ContinueURL:                      r.str(CtxContinueURL),
		OrderForwardHeaders:              splitList(r.str(CtxForwardHeaders)),
		PageImageOrigins:                 splitList(r.str(CtxPageImageOrigins)),
		AdmitRatePerSec:                  r.float(CtxAdmitRate),
		AdmitIntervalMs:                  r.integer(CtxAdmitInterval),
		EntryTokenTTLSeconds:             r.integer(CtxTokenTTL),
		QueueCapacity:                    r.integer(CtxQueueCapacity),
		OrderAPIURL:                      r.str(CtxOrderAPIURL),
		OrderTimeoutMs:                   r.integer(CtxOrderTimeout),
		OrderGateFailOpen:                r.boolean(CtxOrderFailOpen),
		PollTiers:                        r.str(CtxPollTiers),
		EdgeRateLimit:                    r.integer(CtxEdgeRateLimit),
		Egress: Egress{
			Mode: EgressMode(r.str(CtxOrderGateEgress)), OrderAPICidr: r.str(CtxOrderAPICidr),
			OrderAPIPrefixList: r.str(CtxOrderAPIPrefixList), OrderAPIRouteTarget: r.str(CtxOrderAPIRoute),
			OrderAPIPrivateDNS: r.boolean(CtxOrderAPIPrivateDNS),
		},
		CacheMode:                  CacheMode(r.str(CtxCacheMode)),
		CacheNodeType:              r.str(CtxCacheNodeType),
		CacheMaxStorageGB:          r.integer(CtxCacheMaxStorage),
		CacheMaxECPUPerSecond:      r.integer(CtxCacheMaxECPU),
		CacheSnapshotRetentionDays: r.orNone(CtxSnapshotRetention),
		CacheSnapshotTime:          r.str(CtxSnapshotTime),
		EnterRateLimit:             r.integer(CtxEnterRate),
		PositionRateLimit:          r.integer(CtxPositionRate),
		OrdersRateLimit:            r.integer(CtxOrdersRate),
		AdmitReservedConcurrency:   r.orNone(CtxAdmitReserved),
		OrderGateConcurrency:       r.orNone(CtxOrderGateCap),
		AlarmTopicArn:              r.str(CtxAlarmTopicArn),
		AlarmEmail:                 r.str(CtxAlarmEmail),
		BudgetMonthlyUSD:           r.integer(CtxBudget),
		NamePrefix:                 r.str(CtxNamePrefix),
	}
	if p.AssetDir == "" {
		p.AssetDir = "../build"
	}
	if origins := r.str(CtxCorsOrigins); origins == "none" {
		p.NoCors = true
	} else {
		p.CorsAllowOrigins = splitList(origins)
	}
	if days := r.integer(CtxLogRetentionDays); days != 0 && r.err == nil {
		ret, ok := retentionDays[days]
		if !ok {
			return p, fmt.Errorf("context %s=%d: not a CloudWatch Logs retention (1, 3, 5, 7, 14, 30, 60, 90, 180, 365, ...)", CtxLogRetentionDays, days)
		}
		p.LogRetention = ret
	}
	return p, r.err
}

var retentionDays = map[int]awslogs.RetentionDays{
	1: awslogs.RetentionDays_ONE_DAY, 3: awslogs.RetentionDays_THREE_DAYS, 5: awslogs.RetentionDays_FIVE_DAYS,
	7: awslogs.RetentionDays_ONE_WEEK, 14: awslogs.RetentionDays_TWO_WEEKS, 30: awslogs.RetentionDays_ONE_MONTH,
	60: awslogs.RetentionDays_TWO_MONTHS, 90: awslogs.RetentionDays_THREE_MONTHS, 180: awslogs.RetentionDays_SIX_MONTHS,
	365: awslogs.RetentionDays_ONE_YEAR, 731: awslogs.RetentionDays_TWO_YEARS, 1827: awslogs.RetentionDays_FIVE_YEARS,
	3653: awslogs.RetentionDays_TEN_YEARS,
}

// ctxReader reads typed context values and keeps the first error, which
// names the key.
type ctxReader struct {
	ctx contextGetter
	err error
}

func (r *ctxReader) str(key string) string { return ctxString(r.ctx, key) }

func (r *ctxReader) fail(key, s, want string) {
	if r.err == nil {
		r.err = fmt.Errorf("context %s=%q: want %s", key, s, want)
	}
}

func (r *ctxReader) integer(key string) int {
	s := r.str(key)
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		r.fail(key, s, "an integer")
	}
	return n
}

// orNone reads an integer where 0 means "none" (NoLimit).
func (r *ctxReader) orNone(key string) int {
	if s := r.str(key); s == "0" || s == "none" {
		return NoLimit
	}
	return r.integer(key)
}

func (r *ctxReader) float(key string) float64 {
	s := r.str(key)
	if s == "" {
		return 0
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		r.fail(key, s, "a number")
	}
	return f
}

func (r *ctxReader) boolean(key string) bool {
	return r.booleanOr(key, false)
}

// booleanOr is boolean with def when the key is not given.
func (r *ctxReader) booleanOr(key string, def bool) bool {
	s := r.str(key)
	if s == "" {
		return def
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		r.fail(key, s, "true or false")
	}
	return b
}

// contextGetter is the part of the CDK app the props reader needs.
type contextGetter interface {
	get(key string) interface{}
}

type contextReader struct{ app awscdk.App }

func (c contextReader) get(key string) interface{} {
	return c.app.Node().TryGetContext(jsii.String(key))
}

func (c contextReader) str(key, def string) string {
	if s := ctxString(c, key); s != "" {
		return s
	}
	return def
}

// ctxString renders a context value (a string from -c, or any JSON value
// from cdk.json) as a string; "" when unset.
func ctxString(ctx contextGetter, key string) string {
	v := ctx.get(key)
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return strings.TrimSpace(t)
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case []interface{}:
		parts := make([]string, 0, len(t))
		for _, e := range t {
			parts = append(parts, fmt.Sprint(e))
		}
		return strings.Join(parts, ",")
	default:
		return fmt.Sprint(t)
	}
}

// splitList splits a comma-separated context value.
func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
