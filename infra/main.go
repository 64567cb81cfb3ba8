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
)

// Context keys read by the app.
const (
	CtxStackName        = "stackName"
	CtxAssetDir         = "assetDir"
	CtxJwtIssuer        = "jwtIssuer"
	CtxJwtAudience      = "jwtAudience"
	CtxTrustUserHeader  = "trustUserHeader"
	CtxAdmitRate        = "admitRatePerSec"
	CtxAdmitInterval    = "admitIntervalMs"
	CtxTokenTTL         = "entryTokenTtlSeconds"
	CtxQueueCapacity    = "queueCapacity"
	CtxOrderAPIURL      = "orderApiUrl"
	CtxOrderTimeout     = "orderTimeoutMs"
	CtxOrderFailOpen    = "orderGateFailOpen"
	CtxCacheMode        = "cacheMode"
	CtxCacheNodeType    = "cacheNodeType"
	CtxOrderGateEgress  = "orderGateEgress"
	CtxCorsOrigins      = "corsOrigins"
	CtxApiRateLimit     = "apiRateLimit"
	CtxApiBurstLimit    = "apiBurstLimit"
	CtxLogRetentionDays = "logRetentionDays"
	CtxAlarmTopicArn    = "alarmTopicArn"
	CtxAlarmEmail       = "alarmEmail"
	CtxNamePrefix       = "namePrefix"
	CtxPollTiers        = "pollTiers"
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
	var p WaitroomProps
	var err error
	num := func(key string, dst *int) {
		if err != nil {
			return
		}
		if s := ctxString(ctx, key); s != "" {
			n, e := strconv.Atoi(s)
			if e != nil {
				err = fmt.Errorf("context %s=%q: want an integer", key, s)
				return
			}
			*dst = n
		}
	}
	p.AssetDir = ctxString(ctx, CtxAssetDir)
	if p.AssetDir == "" {
		p.AssetDir = "../build"
	}
	p.JwtIssuer = ctxString(ctx, CtxJwtIssuer)
	p.JwtAudience = splitList(ctxString(ctx, CtxJwtAudience))
	if s := ctxString(ctx, CtxTrustUserHeader); s != "" {
		b, e := strconv.ParseBool(s)
		if e != nil {
			return p, fmt.Errorf("context %s=%q: want true or false", CtxTrustUserHeader, s)
		}
		p.TrustUserHeaderFromProxy = b
	}
	if s := ctxString(ctx, CtxOrderFailOpen); s != "" {
		b, e := strconv.ParseBool(s)
		if e != nil {
			return p, fmt.Errorf("context %s=%q: want true or false", CtxOrderFailOpen, s)
		}
		p.OrderGateFailOpen = b
	}
	if s := ctxString(ctx, CtxAdmitRate); s != "" {
		r, e := strconv.ParseFloat(s, 64)
		if e != nil {
			return p, fmt.Errorf("context %s=%q: want a number", CtxAdmitRate, s)
		}
		p.AdmitRatePerSec = r
	}
	num(CtxAdmitInterval, &p.AdmitIntervalMs)
	num(CtxTokenTTL, &p.EntryTokenTTLSeconds)
	num(CtxQueueCapacity, &p.QueueCapacity)
	num(CtxOrderTimeout, &p.OrderTimeoutMs)
	var rate, burst, retention int
	num(CtxApiRateLimit, &rate)
	num(CtxApiBurstLimit, &burst)
	num(CtxLogRetentionDays, &retention)
	if err != nil {
		return p, err
	}
	p.ApiRateLimit, p.ApiBurstLimit = float64(rate), float64(burst)
	if retention != 0 {
		r, ok := retentionDays[retention]
		if !ok {
			return p, fmt.Errorf("context %s=%d: not a CloudWatch Logs retention (1, 3, 5, 7, 14, 30, 60, 90, 180, 365, ...)", CtxLogRetentionDays, retention)
		}
		p.LogRetention = r
	}
	p.OrderAPIURL = ctxString(ctx, CtxOrderAPIURL)
	p.CacheMode = CacheMode(ctxString(ctx, CtxCacheMode))
	p.CacheNodeType = ctxString(ctx, CtxCacheNodeType)
	p.OrderGateEgress = OrderGateEgress(ctxString(ctx, CtxOrderGateEgress))
	p.CorsAllowOrigins = splitList(ctxString(ctx, CtxCorsOrigins))
	p.AlarmTopicArn = ctxString(ctx, CtxAlarmTopicArn)
	p.AlarmEmail = ctxString(ctx, CtxAlarmEmail)
	p.NamePrefix = ctxString(ctx, CtxNamePrefix)
	p.PollTiers = ctxString(ctx, CtxPollTiers)
	return p, nil
}

var retentionDays = map[int]awslogs.RetentionDays{
	1: awslogs.RetentionDays_ONE_DAY, 3: awslogs.RetentionDays_THREE_DAYS, 5: awslogs.RetentionDays_FIVE_DAYS,
	7: awslogs.RetentionDays_ONE_WEEK, 14: awslogs.RetentionDays_TWO_WEEKS, 30: awslogs.RetentionDays_ONE_MONTH,
	60: awslogs.RetentionDays_TWO_MONTHS, 90: awslogs.RetentionDays_THREE_MONTHS, 180: awslogs.RetentionDays_SIX_MONTHS,
	365: awslogs.RetentionDays_ONE_YEAR, 731: awslogs.RetentionDays_TWO_YEARS, 1827: awslogs.RetentionDays_FIVE_YEARS,
	3653: awslogs.RetentionDays_TEN_YEARS,
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
