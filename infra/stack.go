package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticache"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Ports a functions' client may use on the cache: 6379 (primary endpoint)
// and 6380 (the serverless reader endpoint).
const (
	cachePortLow  = 6379
	cachePortHigh = 6380
)

// cacheUserName is the ACL user the functions log in as.
const cacheUserName = "waitroom"

// Waitroom is the built stack with handles that tests and callers may need.
type Waitroom struct {
	awscdk.Stack
	Props     WaitroomProps
	Functions map[string]awslambda.Function
	API       awsapigatewayv2.HttpApi
	Cache     *Cache
	Schedule  awsevents.Rule
	Dashboard string
}

// Cache is the provisioned store.
type Cache struct {
	Address   *string
	Port      *string
	Cluster   bool
	Secret    awssecretsmanager.Secret
	SecGroup  awsec2.SecurityGroup
	Resource  awscdk.CfnResource
	UserGroup awselasticache.CfnUserGroup
}

// NewWaitroomStack builds the whole waiting room. It returns an error, and
// adds nothing to scope, when props are invalid (notably: no authorizer and
// no explicit opt-in to a trusted proxy).
func NewWaitroomStack(scope constructs.Construct, id string, props WaitroomProps) (*Waitroom, error) {
	p := props.WithDefaults(id)
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := checkAssets(p.AssetDir); err != nil {
		return nil, err
	}
	sp := p.StackProps
	if sp.Description == nil {
		sp.Description = jsii.String("Waitroom: a serverless virtual waiting room (API Gateway, Lambda, ElastiCache)")
	}
	stack := awscdk.NewStack(scope, jsii.String(id), &sp)
	w := &Waitroom{Stack: stack, Props: p}

	net := newNetwork(stack, p)
	w.Cache = newCache(stack, p, net)
	w.Functions = newFunctions(stack, p, net, w.Cache)
	w.Schedule = newAdmitSchedule(stack, p, w.Functions[FnAdmit])
	w.API = newAPI(stack, p, w.Functions)
	w.Dashboard = newMonitoring(stack, p, w)
	newOutputs(stack, w)
	return w, nil
}

// checkAssets makes sure `make build` ran: one bootstrap per function.
func checkAssets(dir string) error {
	for _, fn := range Functions {
		path := filepath.Join(dir, fn, "bootstrap")
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("waitroom: function asset %s missing (run `make build` at the repository root): %w", path, err)
		}
	}
	return nil
}

// network is the VPC and the security groups the functions run with.
type network struct {
	vpc      awsec2.Vpc
	isolated *awsec2.SubnetSelection
	// fnSG is every function's security group; orderGateSG is added to the
	// order gate when it has a way out.
	fnSG, orderGateSG awsec2.SecurityGroup
	orderGateSubnets  *awsec2.SubnetSelection
}

// newNetwork: private isolated subnets only; a NAT gateway only when the
// operator chooses it for the order gate.
func newNetwork(stack awscdk.Stack, p WaitroomProps) *network {
	subnets := []*awsec2.SubnetConfiguration{{
		Name: jsii.String("isolated"), SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED, CidrMask: jsii.Number(22),
	}}
	natGateways := 0
	if p.OrderGateEgress == EgressNAT {
		natGateways = 1
		subnets = append(subnets,
			&awsec2.SubnetConfiguration{Name: jsii.String("public"), SubnetType: awsec2.SubnetType_PUBLIC, CidrMask: jsii.Number(26)},
			&awsec2.SubnetConfiguration{Name: jsii.String("egress"), SubnetType: awsec2.SubnetType_PRIVATE_WITH_EGRESS, CidrMask: jsii.Number(24)},
		)
	}
	n := &network{isolated: &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED}}
	n.vpc = awsec2.NewVpc(stack, jsii.String("Vpc"), &awsec2.VpcProps{
		IpAddresses:                  awsec2.IpAddresses_Cidr(jsii.String("10.40.0.0/16")),
		MaxAzs:                       jsii.Number(2),
		NatGateways:                  jsii.Number(float64(natGateways)),
		SubnetConfiguration:          &subnets,
		RestrictDefaultSecurityGroup: jsii.Bool(false),
	})
	n.fnSG = awsec2.NewSecurityGroup(stack, jsii.String("FunctionsSecurityGroup"), &awsec2.SecurityGroupProps{
		Vpc:              n.vpc,
		Description:      jsii.String("Waitroom functions: out to the cache and the Secrets Manager endpoint only"),
		AllowAllOutbound: jsii.Bool(false),
	})
	n.orderGateSubnets = n.isolated
	if p.OrderGateEgress == EgressNAT {
		n.orderGateSG = awsec2.NewSecurityGroup(stack, jsii.String("OrderGateEgressSecurityGroup"), &awsec2.SecurityGroupProps{
			Vpc:              n.vpc,
			Description:      jsii.String("Order gate: out to ORDER_API_URL through the NAT gateway"),
			AllowAllOutbound: jsii.Bool(true),
		})
		n.orderGateSubnets = &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_WITH_EGRESS}
	}
	newSecretsEndpoint(stack, n)
	return n
}

// newSecretsEndpoint lets the functions read the cache secret without a way out.
func newSecretsEndpoint(stack awscdk.Stack, n *network) {
	endpointSG := awsec2.NewSecurityGroup(stack, jsii.String("EndpointSecurityGroup"), &awsec2.SecurityGroupProps{
		Vpc:              n.vpc,
		Description:      jsii.String("Secrets Manager interface endpoint: HTTPS from the functions only"),
		AllowAllOutbound: jsii.Bool(false),
	})
	endpointSG.AddIngressRule(n.fnSG, awsec2.Port_Tcp(jsii.Number(443)), jsii.String("HTTPS from the functions"), nil)
	n.fnSG.AddEgressRule(endpointSG, awsec2.Port_Tcp(jsii.Number(443)), jsii.String("Secrets Manager endpoint"), nil)
	n.vpc.AddInterfaceEndpoint(jsii.String("SecretsManagerEndpoint"), &awsec2.InterfaceVpcEndpointOptions{
		Service:           awsec2.InterfaceVpcEndpointAwsService_SECRETS_MANAGER(),
		Subnets:           n.isolated,
		SecurityGroups:    &[]awsec2.ISecurityGroup{endpointSG},
		PrivateDnsEnabled: jsii.Bool(true),
		Open:              jsii.Bool(false),
	})
}

// fnSpec is one function: its directory under build/, what it does, its size.
type fnSpec struct {
	name, description string
	memory, timeout   int
}

func fnSpecs(p WaitroomProps) []fnSpec {
	return []fnSpec{
		{FnEnter, "Waitroom: POST /queue/enter (join the line)", 256, 6},
		{FnPosition, "Waitroom: GET /queue/position (rank, estimated wait, pollAfter)", 256, 6},
		{FnAdmit, "Waitroom: admission, about 70 s of batches per per-minute invocation", 256, p.AdmitTimeoutSeconds()},
		{FnOrderGate, "Waitroom: POST /orders (entry-token gate in front of the order API)", 256, p.OrderGateTimeoutSeconds()},
	}
}

// functionEnv is the environment every function gets (docs/API.md, "Configuration").
func functionEnv(p WaitroomProps, cache *Cache) map[string]*string {
	env := map[string]*string{
		"REDIS_URL":               awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String("rediss://"), cache.Address, jsii.String(":"), cache.Port}),
		"REDIS_CLUSTER":           jsii.String(strconv.FormatBool(cache.Cluster)),
		"REDIS_SECRET_ARN":        cache.Secret.SecretArn(),
		"ADMIT_RATE_PER_SEC":      jsii.String(strconv.FormatFloat(p.AdmitRatePerSec, 'f', -1, 64)),
		"ADMIT_INTERVAL_MS":       jsii.String(strconv.Itoa(p.AdmitIntervalMs)),
		"ADMIT_BATCHES":           jsii.String(strconv.Itoa(p.AdmitBatches())),
		"ENTRY_TOKEN_TTL_SECONDS": jsii.String(strconv.Itoa(p.EntryTokenTTLSeconds)),
		"QUEUE_CAPACITY":          jsii.String(strconv.Itoa(p.QueueCapacity)),
		"ORDER_API_URL":           jsii.String(p.OrderAPIURL),
		"ORDER_TIMEOUT_MS":        jsii.String(strconv.Itoa(p.OrderTimeoutMs)),
		"TRUST_USER_HEADER":       jsii.String(strconv.FormatBool(p.TrustUserHeaderFromProxy)),
		"POLL_TIERS":              jsii.String(p.PollTiersEnv()),
	}
	if p.OrderGateFailOpen {
		env["ORDER_GATE_FAIL_OPEN"] = jsii.String("true")
	}
	return env
}

// newFunctions builds the four functions, each with its own role and log group.
func newFunctions(stack awscdk.Stack, p WaitroomProps, net *network, cache *Cache) map[string]awslambda.Function {
	cache.SecGroup.AddIngressRule(net.fnSG, awsec2.Port_TcpRange(jsii.Number(cachePortLow), jsii.Number(cachePortHigh)),
		jsii.String("Valkey/Redis (TLS) from the functions"), nil)
	net.fnSG.AddEgressRule(cache.SecGroup, awsec2.Port_TcpRange(jsii.Number(cachePortLow), jsii.Number(cachePortHigh)),
		jsii.String("Valkey/Redis (TLS)"), nil)
	env := functionEnv(p, cache)
	fns := map[string]awslambda.Function{}
	for _, s := range fnSpecs(p) {
		logGroup := awslogs.NewLogGroup(stack, jsii.String(logicalName(s.name)+"Logs"), &awslogs.LogGroupProps{
			Retention:     p.LogRetention,
			RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		})
		sgs := []awsec2.ISecurityGroup{net.fnSG}
		subnetSel := net.isolated
		if s.name == FnOrderGate && net.orderGateSG != nil {
			sgs = append(sgs, net.orderGateSG)
			subnetSel = net.orderGateSubnets
		}
		props := &awslambda.FunctionProps{
			Role:           newFunctionRole(stack, s.name, logGroup, cache),
			Description:    jsii.String(s.description),
			Runtime:        awslambda.Runtime_PROVIDED_AL2023(),
			Architecture:   awslambda.Architecture_ARM_64(),
			Handler:        jsii.String("bootstrap"),
			Code:           awslambda.Code_FromAsset(jsii.String(filepath.Join(p.AssetDir, s.name)), nil),
			MemorySize:     jsii.Number(float64(s.memory)),
			Timeout:        awscdk.Duration_Seconds(jsii.Number(float64(s.timeout))),
			Environment:    &env,
			LogGroup:       logGroup,
			Vpc:            net.vpc,
			VpcSubnets:     subnetSel,
			SecurityGroups: &sgs,
		}
		if s.name == FnAdmit {
			// The next scheduled invocation replaces a failed one; a retry
			// would only overlap it.
			props.RetryAttempts = jsii.Number(0)
			props.MaxEventAge = awscdk.Duration_Seconds(jsii.Number(ScheduleSeconds))
		}
		fns[s.name] = awslambda.NewFunction(stack, jsii.String(logicalName(s.name)+"Function"), props)
	}
	return fns
}

// newFunctionRole is least privilege: write to its own log group, manage its
// VPC network interfaces (these EC2 actions take no resource scoping), read
// the cache credentials, and nothing else.
func newFunctionRole(stack awscdk.Stack, name string, logGroup awslogs.LogGroup, cache *Cache) awsiam.Role {
	return awsiam.NewRole(stack, jsii.String(logicalName(name)+"Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("Waitroom " + name + " function"),
		InlinePolicies: &map[string]awsiam.PolicyDocument{
			"waitroom": awsiam.NewPolicyDocument(&awsiam.PolicyDocumentProps{Statements: &[]awsiam.PolicyStatement{
				awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
					Sid:       jsii.String("WriteOwnLogs"),
					Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
					Resources: jsii.Strings(*logGroup.LogGroupArn()),
				}),
				awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
					Sid: jsii.String("VpcNetworkInterfaces"),
					Actions: jsii.Strings("ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets",
						"ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"),
					Resources: jsii.Strings("*"),
				}),
				awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
					Sid:       jsii.String("ReadCacheCredentials"),
					Actions:   jsii.Strings("secretsmanager:GetSecretValue"),
					Resources: jsii.Strings(*cache.Secret.SecretArn()),
				}),
			}}),
		},
	})
}

// newAdmitSchedule invokes admit once a minute; each invocation runs a
// minute of batches (plus the overlap).
func newAdmitSchedule(stack awscdk.Stack, p WaitroomProps, admit awslambda.Function) awsevents.Rule {
	return awsevents.NewRule(stack, jsii.String("AdmitSchedule"), &awsevents.RuleProps{
		Description: jsii.String(fmt.Sprintf("Waitroom: invoke admit every minute; it runs %d batches of %d ms",
			p.AdmitBatches(), p.AdmitIntervalMs)),
		Schedule: awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(1))),
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(admit, &awseventstargets.LambdaFunctionProps{
			RetryAttempts: jsii.Number(0),
			MaxEventAge:   awscdk.Duration_Seconds(jsii.Number(ScheduleSeconds)),
		})},
	})
}

// newOutputs names what an operator looks for after a deploy.
func newOutputs(stack awscdk.Stack, w *Waitroom) {
	out := func(id, value, desc string) {
		awscdk.NewCfnOutput(stack, jsii.String(id), &awscdk.CfnOutputProps{Value: jsii.String(value), Description: jsii.String(desc)})
	}
	out("ApiUrl", *w.API.Url(), "Base URL of the waiting room API")
	for _, name := range Functions {
		out(logicalName(name)+"FunctionName", *w.Functions[name].FunctionName(), "Lambda function "+name)
	}
	out("DashboardName", w.Dashboard, "CloudWatch dashboard")
	out("CacheEndpoint", *awscdk.Fn_Join(jsii.String(":"), &[]*string{w.Cache.Address, w.Cache.Port}), "Cache endpoint (TLS)")
	out("CacheSecretArn", *w.Cache.Secret.SecretArn(), "Secrets Manager secret with the cache user's username and password")
	out("AdmitScheduleRuleName", *w.Schedule.RuleName(), "EventBridge rule that drives admission (disable it to pause admission)")
}

// newCache provisions the store, its credentials and its security group.
func newCache(stack awscdk.Stack, p WaitroomProps, net *network) *Cache {
	c := &Cache{}
	c.SecGroup = awsec2.NewSecurityGroup(stack, jsii.String("CacheSecurityGroup"), &awsec2.SecurityGroupProps{
		Vpc:              net.vpc,
		Description:      jsii.String("Waitroom cache: reachable from the functions only"),
		AllowAllOutbound: jsii.Bool(false),
	})
	newCacheUsers(stack, p, c)
	sids := []interface{}{}
	for _, id := range *net.vpc.SelectSubnets(net.isolated).SubnetIds {
		sids = append(sids, id)
	}
	if p.CacheMode == CacheReplicationGroup {
		newReplicationGroup(stack, p, c, sids)
	} else {
		newServerlessCache(stack, p, c, sids)
	}
	return c
}

// newCacheUsers: the functions' user, and a disabled "default" user that
// every ElastiCache user group must contain.
func newCacheUsers(stack awscdk.Stack, p WaitroomProps, c *Cache) {
	newPassword := func(id, user, desc string) awssecretsmanager.Secret {
		return awssecretsmanager.NewSecret(stack, jsii.String(id), &awssecretsmanager.SecretProps{
			Description: jsii.String(desc),
			GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
				SecretStringTemplate: jsii.String(fmt.Sprintf(`{"username":%q}`, user)),
				GenerateStringKey:    jsii.String("password"),
				ExcludePunctuation:   jsii.Bool(true),
				PasswordLength:       jsii.Number(40),
			},
			RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		})
	}
	c.Secret = newPassword("CacheUserSecret", cacheUserName, "Waitroom: the functions' cache user (JSON username, password)")
	defaultSecret := newPassword("CacheDefaultUserSecret", "default", "Waitroom: password of the disabled default cache user (never used)")
	user := func(id, userID, name, access string, secret awssecretsmanager.Secret) awselasticache.CfnUser {
		return awselasticache.NewCfnUser(stack, jsii.String(id), &awselasticache.CfnUserProps{
			Engine:       jsii.String("redis"),
			UserId:       jsii.String(userID),
			UserName:     jsii.String(name),
			AccessString: jsii.String(access),
			// AuthenticationMode is untyped JSON in the L1, so CloudFormation's
			// own spelling is used.
			AuthenticationMode: map[string]interface{}{
				"Type":      "password",
				"Passwords": []*string{secret.SecretValueFromJson(jsii.String("password")).UnsafeUnwrap()},
			},
		})
	}
	appUser := user("CacheUser", p.NamePrefix+"-app", cacheUserName, p.CacheAccessString, c.Secret)
	defaultUser := user("CacheDefaultUser", p.NamePrefix+"-default", "default", "off -@all", defaultSecret)
	c.UserGroup = awselasticache.NewCfnUserGroup(stack, jsii.String("CacheUserGroup"), &awselasticache.CfnUserGroupProps{
		Engine:      jsii.String("redis"),
		UserGroupId: jsii.String(p.NamePrefix + "-users"),
		UserIds:     &[]*string{defaultUser.Ref(), appUser.Ref()},
	})
}

// newReplicationGroup: a provisioned Valkey primary and replica, Multi-AZ.
func newReplicationGroup(stack awscdk.Stack, p WaitroomProps, c *Cache, subnetIDs []interface{}) {
	subnetGroup := awselasticache.NewCfnSubnetGroup(stack, jsii.String("CacheSubnetGroup"), &awselasticache.CfnSubnetGroupProps{
		Description: jsii.String("Waitroom cache: private isolated subnets"),
		SubnetIds:   &subnetIDs,
	})
	rg := awselasticache.NewCfnReplicationGroup(stack, jsii.String("Cache"), &awselasticache.CfnReplicationGroupProps{
		ReplicationGroupDescription: jsii.String("Waitroom line, tokens and rate budgets"),
		ReplicationGroupId:          jsii.String(p.NamePrefix),
		Engine:                      jsii.String("valkey"),
		EngineVersion:               jsii.String("8.0"),
		CacheNodeType:               jsii.String(p.CacheNodeType),
		NumCacheClusters:            jsii.Number(2),
		AutomaticFailoverEnabled:    jsii.Bool(true),
		MultiAzEnabled:              jsii.Bool(true),
		TransitEncryptionEnabled:    jsii.Bool(true),
		TransitEncryptionMode:       jsii.String("required"),
		AtRestEncryptionEnabled:     jsii.Bool(true),
		Port:                        jsii.Number(cachePortLow),
		CacheSubnetGroupName:        subnetGroup.Ref(),
		SecurityGroupIds:            &[]*string{c.SecGroup.SecurityGroupId()},
		UserGroupIds:                &[]*string{c.UserGroup.Ref()},
	})
	c.Address, c.Port, c.Cluster = rg.AttrPrimaryEndPointAddress(), rg.AttrPrimaryEndPointPort(), false
	c.Resource = rg
}

// newServerlessCache: ElastiCache Serverless for Valkey (cluster mode).
func newServerlessCache(stack awscdk.Stack, p WaitroomProps, c *Cache, subnetIDs []interface{}) {
	sc := awselasticache.NewCfnServerlessCache(stack, jsii.String("Cache"), &awselasticache.CfnServerlessCacheProps{
		ServerlessCacheName: jsii.String(p.NamePrefix),
		Description:         jsii.String("Waitroom line, tokens and rate budgets"),
		Engine:              jsii.String("valkey"),
		MajorEngineVersion:  jsii.String("8"),
		SubnetIds:           &subnetIDs,
		SecurityGroupIds:    &[]interface{}{c.SecGroup.SecurityGroupId()},
		UserGroupId:         c.UserGroup.Ref(),
	})
	c.Address, c.Port, c.Cluster = sc.AttrEndpointAddress(), sc.AttrEndpointPort(), true
	c.Resource = sc
}

// newAPI builds the HTTP API with its three routes.
func newAPI(stack awscdk.Stack, p WaitroomProps, fns map[string]awslambda.Function) awsapigatewayv2.HttpApi {
	api := awsapigatewayv2.NewHttpApi(stack, jsii.String("Api"), &awsapigatewayv2.HttpApiProps{
		ApiName:     jsii.String(p.NamePrefix),
		Description: jsii.String("Waitroom: virtual waiting room in front of the order API"),
		CorsPreflight: &awsapigatewayv2.CorsPreflightOptions{
			AllowOrigins: jsii.Strings(p.CorsAllowOrigins...),
			AllowMethods: &[]awsapigatewayv2.CorsHttpMethod{
				awsapigatewayv2.CorsHttpMethod_GET, awsapigatewayv2.CorsHttpMethod_POST, awsapigatewayv2.CorsHttpMethod_OPTIONS,
			},
			AllowHeaders:  jsii.Strings("authorization", "content-type", "x-entry-token", "idempotency-key"),
			ExposeHeaders: jsii.Strings("retry-after"),
			MaxAge:        awscdk.Duration_Minutes(jsii.Number(10)),
		},
	})

	var authorizer awsapigatewayv2.IHttpRouteAuthorizer
	if p.JwtIssuer != "" {
		authorizer = awsapigatewayv2authorizers.NewHttpJwtAuthorizer(jsii.String("JwtAuthorizer"), jsii.String(p.JwtIssuer),
			&awsapigatewayv2authorizers.HttpJwtAuthorizerProps{
				AuthorizerName: jsii.String("jwt"),
				JwtAudience:    jsii.Strings(p.JwtAudience...),
			})
	}
	routes := []struct {
		method awsapigatewayv2.HttpMethod
		path   string
		fn     string
	}{
		{awsapigatewayv2.HttpMethod_POST, "/queue/enter", FnEnter},
		{awsapigatewayv2.HttpMethod_GET, "/queue/position", FnPosition},
		{awsapigatewayv2.HttpMethod_POST, "/orders", FnOrderGate},
	}
	for _, r := range routes {
		opts := &awsapigatewayv2.AddRoutesOptions{
			Path:        jsii.String(r.path),
			Methods:     &[]awsapigatewayv2.HttpMethod{r.method},
			Integration: awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String(logicalName(r.fn)+"Integration"), fns[r.fn], nil),
		}
		if authorizer != nil {
			opts.Authorizer = authorizer
		}
		api.AddRoutes(opts)
	}

	// Stage: throttling and JSON access logs (escape hatch: the L2 default
	// stage does not expose them).
	accessLogs := awslogs.NewLogGroup(stack, jsii.String("ApiAccessLogs"), &awslogs.LogGroupProps{
		Retention:     p.LogRetention,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	stage := api.DefaultStage().Node().DefaultChild().(awsapigatewayv2.CfnStage)
	stage.SetDefaultRouteSettings(&awsapigatewayv2.CfnStage_RouteSettingsProperty{
		ThrottlingRateLimit:  jsii.Number(p.ApiRateLimit),
		ThrottlingBurstLimit: jsii.Number(p.ApiBurstLimit),
	})
	stage.SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: accessLogs.LogGroupArn(),
		Format:         jsii.String(accessLogFormat),
	})
	return api
}

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

// logicalName turns "order-gate" into "OrderGate".
func logicalName(fn string) string {
	var b strings.Builder
	for _, part := range strings.Split(fn, "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}
