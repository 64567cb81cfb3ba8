package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"github.com/waitroom/waitroom"
)

// fnSpec is one function: its directory under build/, what it does, its size.
type fnSpec struct {
	name, description string
	memory, timeout   int
	// reserved is its reserved concurrency (NoLimit: none).
	reserved int
}

// fnSpecs sizes the functions. Admit runs at 128 MB: it holds one batch at a
// time, and when nobody waits it returns after one batch, so its duration
// (the largest idle cost before) is small either way.
func fnSpecs(p WaitroomProps) []fnSpec {
	return []fnSpec{
		{FnEnter, "Waitroom: POST /queue/enter (join the line)", 256, 6, NoLimit},
		{FnPosition, "Waitroom: GET /queue/position (rank, estimated wait, pollAfter)", 256, 6, NoLimit},
		{FnAdmit, "Waitroom: admission, up to 70 s of batches per per-minute invocation", 128, p.AdmitTimeoutSeconds(), p.AdmitReservedConcurrency},
		{FnOrderGate, "Waitroom: POST /orders (entry-token gate in front of the order API)", 256, p.OrderGateTimeoutSeconds(), p.OrderGateConcurrency},
		{FnAdmin, "Waitroom: admin API (/admin/…, AWS_IAM)", 128, 6, NoLimit},
	}
}

// servesVisitors says whether fn answers visitors (enter, position, the
// order gate): only those get the visitor variables, the ticket key among them.
func servesVisitors(fn string) bool {
	return fn == FnEnter || fn == FnPosition || fn == FnOrderGate
}

// functionEnv is a function's environment (docs/API.md, "Configuration"):
// what every function gets, and for the three behind the visitors' routes
// the variables that say who may call and who is calling (the ticket key
// and the proxy secret among them), and the entry-token key each uses.
// Admit, admin and the consumer take no visitor's request: they get no key.
func functionEnv(p WaitroomProps, cache *Cache, fn string) map[string]*string {
	env := cache.Env(fn)
	if servesVisitors(fn) {
		// Validate ran visitorEnv on these props first and refused any error.
		visitors, _ := visitorEnv(visitorProps(p, fn))
		merge(env, visitors, callerEnv(p))
	}
	if fn == FnEnter {
		merge(env, challengeEnv(p))
	}
	merge(env, orderRoomsEnv(p, fn))
	for k, v := range map[string]string{
		"ADMIT_RATE_PER_SEC":      strconv.FormatFloat(p.AdmitRatePerSec, 'f', -1, 64),
		"ADMIT_INTERVAL_MS":       strconv.Itoa(p.AdmitIntervalMs),
		"ADMIT_BATCHES":           strconv.Itoa(p.AdmitBatches()),
		"ENTRY_TOKEN_TTL_SECONDS": strconv.Itoa(p.EntryTokenTTLSeconds),
		"QUEUE_CAPACITY":          strconv.Itoa(p.QueueCapacity),
		"ORDER_API_URL":           p.OrderAPIURL,
		"ORDER_TIMEOUT_MS":        strconv.Itoa(p.OrderTimeoutMs),
		"POLL_TIERS":              p.PollTiersEnv(),
		"OPEN_ROOMS":              strconv.FormatBool(p.OpenRooms),
	} {
		env[k] = jsii.String(v)
	}
	if p.OrderGateFailOpen {
		env["ORDER_GATE_FAIL_OPEN"] = jsii.String("true")
	}
	if p.NoInstantAdmit { // every function: the rooms' default is in every script's ARGV and in the admin API's status
		env["INSTANT_ADMIT"] = jsii.String("false")
	}
	if fn == FnAdmin && len(p.PageImageOrigins) > 0 { // the admin API checks rooms' logoUrl against them
		env["PAGE_IMAGE_ORIGINS"] = jsii.String(strings.Join(p.PageImageOrigins, ","))
	}
	return merge(env, entryTokenEnv(p, fn))
}

// visitorProps are the visitor settings of fn. Receipts are enter's and
// position's (enter signs them, position checks them): the order gate,
// the one function with a way out of the VPC, holds the ticket key only
// where it verifies tickets, with anonymous visitors (issue 32).
func visitorProps(p WaitroomProps, fn string) PageProps {
	pp := p.PageProps()
	if fn == FnOrderGate {
		pp.Receipts = false
	}
	return pp
}

// callerEnv is how the visitor functions tell who is calling: whether to
// believe X-User-Id, and the proxy's secret that alone makes it believed,
// resolved by CloudFormation at deploy time (the template and cdk.out hold
// only the parameter's name).
func callerEnv(p WaitroomProps) map[string]*string {
	env := map[string]*string{"TRUST_USER_HEADER": jsii.String(strconv.FormatBool(p.TrustUserHeaderFromProxy))}
	if p.TrustUserHeaderFromProxy {
		env["PROXY_SECRET"] = jsii.String("{{resolve:ssm:" + p.ProxySecretSSMParameter + "}}")
	}
	return env
}

// merge adds the variables of each of more to env and returns it.
func merge(env map[string]*string, more ...map[string]*string) map[string]*string {
	for _, m := range more {
		for k, v := range m {
			env[k] = v
		}
	}
	return env
}

// entryTokenEnv gives each function the entry-token keys it uses and no
// other: the seeds to enter and position, which sign (enter with
// INTAKE=broker only signs receipts, with the ticket key, and gets none);
// their public keys alone to the order gate, which verifies, and whose way
// out of the VPC would otherwise carry a key that mints tokens; nothing to
// admit, admin and the consumer. Resolved at deploy like PROXY_SECRET
// (docs/security.md, "The entry-token key in AWS").
func entryTokenEnv(p WaitroomProps, fn string) map[string]*string {
	var name, param string
	switch {
	case p.EntryTokenKeysSSMParameter == "":
		return nil
	case fn == FnPosition, fn == FnEnter && p.Intake != waitroom.IntakeBroker:
		name, param = "ENTRY_TOKEN_KEYS", p.EntryTokenKeysSSMParameter
	case fn == FnOrderGate:
		name, param = "ENTRY_TOKEN_PUBLIC_KEYS", p.EntryTokenPublicKeysSSMParameter
	default:
		return nil
	}
	env := map[string]*string{name: jsii.String("{{resolve:ssm:" + param + "}}")}
	if p.EntryTokenIssuer != "" {
		env["ENTRY_TOKEN_ISSUER"] = jsii.String(p.EntryTokenIssuer)
	}
	return env
}

// functionProps are what every function shares: its own role and log
// group, the runtime, JSON logs, and its place in the VPC (network.placement:
// the isolated subnets out to the cache only, the order gate in its own).
func functionProps(stack awscdk.Stack, p WaitroomProps, net *network, cache *Cache, keys *envKey, s fnSpec, env map[string]*string,
	more ...awsiam.PolicyStatement) *awslambda.FunctionProps {
	logGroup := awslogs.NewLogGroup(stack, jsii.String(logicalName(s.name)+"Logs"), &awslogs.LogGroupProps{
		Retention:     p.LogRetention,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	role := newFunctionRole(stack, s.name, logGroup, cache, more...)
	props := &awslambda.FunctionProps{
		Role:         role,
		Description:  jsii.String(s.description),
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: awslambda.Architecture_ARM_64(),
		Handler:      jsii.String("bootstrap"),
		Code:         awslambda.Code_FromAsset(jsii.String(filepath.Join(p.AssetDir, s.name)), nil),
		MemorySize:   jsii.Number(float64(s.memory)),
		Timeout:      awscdk.Duration_Seconds(jsii.Number(float64(s.timeout))),
		Environment:  &env,
		LogGroup:     logGroup,
		// JSON logs: the platform's START/END/REPORT lines (INFO) are
		// dropped at WARN; the functions' EMF lines carry no "level", so
		// Lambda files them as INFO and keeps them (and so the metrics).
		LoggingFormat:         awslambda.LoggingFormat_JSON,
		SystemLogLevelV2:      awslambda.SystemLogLevel_WARN,
		ApplicationLogLevelV2: awslambda.ApplicationLogLevel_INFO,
	}
	subnets, sg := net.placement(s.name)
	props.Vpc, props.VpcSubnets, props.SecurityGroups = net.vpc, subnets, &[]awsec2.ISecurityGroup{sg}
	keys.protect(props, role)
	return props
}

// newFunctions builds the four functions, each with its own role and log
// group; enter, position and admit reach only the cache, the order gate
// also the order API.
func newFunctions(stack awscdk.Stack, p WaitroomProps, net *network, cache *Cache, keys *envKey, record awsdynamodb.Table) map[string]awslambda.Function {
	cachePorts := awsec2.Port_TcpRange(jsii.Number(cachePortLow), jsii.Number(cachePortHigh))
	for _, sg := range net.securityGroups() {
		cache.SecGroup.AddIngressRule(sg, cachePorts, jsii.String("Valkey (TLS) from the functions"), nil)
		sg.AddEgressRule(cache.SecGroup, cachePorts, jsii.String("Valkey (TLS)"), nil)
	}
	fns := map[string]awslambda.Function{}
	for _, s := range fnSpecs(p) {
		var more []awsiam.PolicyStatement // the role's rights beyond every function's
		if s.name == FnOrderGate {
			more = append(more, orderRecordStatement(record))
		}
		props := functionProps(stack, p, net, cache, keys, s, functionEnv(p, cache, s.name), more...)
		if s.reserved != NoLimit {
			props.ReservedConcurrentExecutions = jsii.Number(float64(s.reserved))
		}
		switch s.name {
		case FnAdmit:
			// The next scheduled invocation replaces a failed one; a retry
			// would only overlap it.
			props.RetryAttempts = jsii.Number(0)
			props.MaxEventAge = awscdk.Duration_Seconds(jsii.Number(ScheduleSeconds))
		case FnOrderGate:
			props.Ipv6AllowedForDualStack = jsii.Bool(p.Egress.Mode == EgressIPv6)
		}
		fns[s.name] = awslambda.NewFunction(stack, jsii.String(logicalName(s.name)+"Function"), props)
	}
	return fns
}

// newFunctionRole is least privilege: write to its own log group, manage its
// VPC network interfaces, as every function runs in the VPC (these EC2
// actions take no resource scoping), log in to the cache as its own IAM user,
// and nothing else.
func newFunctionRole(stack awscdk.Stack, name string, logGroup awslogs.LogGroup, cache *Cache, more ...awsiam.PolicyStatement) awsiam.Role {
	statements := []awsiam.PolicyStatement{awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("WriteOwnLogs"),
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: jsii.Strings(*logGroup.LogGroupArn()),
	}), awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid: jsii.String("VpcNetworkInterfaces"),
		Actions: jsii.Strings("ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets",
			"ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"),
		Resources: jsii.Strings("*"),
	})}
	statements = append(statements, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ConnectToCacheWithIAM"),
		Actions:   jsii.Strings("elasticache:Connect"),
		Resources: &[]*string{cache.Arn, cache.Users[name].Arn},
	}))
	statements = append(statements, more...)
	return awsiam.NewRole(stack, jsii.String(logicalName(name)+"Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("Waitroom " + name + " function"),
		InlinePolicies: &map[string]awsiam.PolicyDocument{
			"waitroom": awsiam.NewPolicyDocument(&awsiam.PolicyDocumentProps{Statements: &statements}),
		},
	})
}

// newAdmitSchedule invokes admit once a minute; each invocation runs up to
// a minute of batches (plus the overlap), one batch when nobody waits.
func newAdmitSchedule(stack awscdk.Stack, p WaitroomProps, admit awslambda.Function) awsevents.Rule {
	return awsevents.NewRule(stack, jsii.String("AdmitSchedule"), &awsevents.RuleProps{
		Description: jsii.String(fmt.Sprintf("Waitroom: invoke admit every minute; it runs up to %d batches of %d ms",
			p.AdmitBatches(), p.AdmitIntervalMs)),
		Schedule: awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(1))),
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(admit, &awseventstargets.LambdaFunctionProps{
			RetryAttempts: jsii.Number(0),
			MaxEventAge:   awscdk.Duration_Seconds(jsii.Number(ScheduleSeconds)),
		})},
	})
}
