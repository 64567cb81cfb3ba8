package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/waitroom/waitroom/web"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/cacheacl"
	"github.com/waitroom/waitroom/metrics"
)

// assetDir holds a dummy bootstrap per function, so the tests need no `make build`.
var assetDir string

func TestMain(m *testing.M) {
	code := func() int {
		dir, err := standInAssets()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		assetDir = dir
		// Synthesized stacks outlive the test that made them (the default
		// stack is shared), so their output goes here, not to t.TempDir.
		if outRoot, err = os.MkdirTemp("", "waitroom-cdk-out-"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(outRoot)
		return m.Run()
	}()
	jsii.Close()
	os.Exit(code)
}

const (
	testIssuer   = "https://auth.example.com/"
	testAudience = "waitroom-web"
	testOrderAPI = "https://orders.example.internal"
	testOrigin   = "https://shop.example.com"
)

func baseProps() WaitroomProps {
	return WaitroomProps{
		AssetDir:         assetDir,
		JwtIssuer:        testIssuer,
		JwtAudience:      []string{testAudience},
		OrderAPIURL:      testOrderAPI,
		Egress:           Egress{Mode: EgressPrivate, OrderAPICidr: VpcCidr},
		CorsAllowOrigins: []string{testOrigin},
	}
}

// outRoot holds every synthesized stack's output for the whole run.
var outRoot string

// synth is one synthesized stack: the CDK handle, the assertions template,
// and the template as plain JSON for checks that walk it.
type synth struct {
	w    *Waitroom
	tpl  assertions.Template
	json map[string]any
}

func synthesize(t *testing.T, mutate func(*WaitroomProps)) *synth {
	t.Helper()
	p := baseProps()
	if mutate != nil {
		mutate(&p)
	}
	out, err := os.MkdirTemp(outRoot, "")
	if err != nil {
		t.Fatal(err)
	}
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(out)})
	w, err := NewWaitroomStack(app, "Waitroom", p)
	if err != nil {
		t.Fatalf("NewWaitroomStack: %v", err)
	}
	tpl := assertions.Template_FromStack(w.Stack, nil)
	raw, err := json.Marshal(tpl.ToJSON())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return &synth{w: w, tpl: tpl, json: m}
}

// The default stack is synthesized once and shared by the read-only tests.
var defaultSynth *synth

func def(t *testing.T) *synth {
	t.Helper()
	if defaultSynth == nil {
		defaultSynth = synthesize(t, nil)
	}
	return defaultSynth
}

func (s *synth) resources(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range s.json["Resources"].(map[string]any) {
		rm := r.(map[string]any)
		if rm["Type"] == typ {
			out[id] = rm
		}
	}
	return out
}

func props(r map[string]any) map[string]any {
	p, _ := r["Properties"].(map[string]any)
	return p
}

// cdkProviders are the functions CDK adds for its own custom resources
// (they run at deploy and delete only): the logical ids of every function
// that is not one of the stack's.
func (s *synth) cdkProviders() []string {
	own := map[string]bool{}
	for name := range s.w.Functions {
		own[s.fnID(name)] = true
	}
	var out []string
	for id := range s.resources("AWS::Lambda::Function") {
		if !own[id] {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

func (s *synth) fnID(name string) string {
	el := s.w.Functions[name].Node().DefaultChild().(awscdk.CfnElement)
	return *s.w.Stack.GetLogicalId(el)
}

func (s *synth) fnProps(t *testing.T, name string) map[string]any {
	t.Helper()
	id := s.fnID(name)
	r, ok := s.resources("AWS::Lambda::Function")[id]
	if !ok {
		t.Fatalf("no AWS::Lambda::Function %s for %s", id, name)
	}
	return props(r)
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func getAttArn(id string) string { return js(map[string]any{"Fn::GetAtt": []any{id, "Arn"}}) }

func TestFunctionsRuntimeArchAndSizing(t *testing.T) {
	s := def(t)
	if got := s.cdkProviders(); len(got) != 1 {
		t.Errorf("functions besides the stack's: %v, want CDK's one that empties the default security group", got)
	}
	for _, name := range Functions {
		p := s.fnProps(t, name)
		lc, _ := p["LoggingConfig"].(map[string]any)
		// JSON logs: no START/END/REPORT lines (system WARN), EMF kept (application INFO).
		if p["Runtime"] != "provided.al2023" || js(p["Architectures"]) != `["arm64"]` || p["Handler"] != "bootstrap" || p["VpcConfig"] == nil ||
			lc["LogGroup"] == nil || lc["LogFormat"] != "JSON" || lc["SystemLogLevel"] != "WARN" || lc["ApplicationLogLevel"] != "INFO" {
			t.Errorf("%s: %s", name, js(p))
		}
	}
	for name, mb := range map[string]float64{FnEnter: 256, FnPosition: 256, FnAdmit: 128, FnOrderGate: 256, FnAdmin: 128} {
		if got := s.fnProps(t, name)["MemorySize"]; got != mb {
			t.Errorf("%s memory = %v MB, want %v", name, got, mb)
		}
	}
	wantTimeout := map[string]float64{FnEnter: 6, FnPosition: 6, FnAdmit: 80, FnOrderGate: 19, FnAdmin: 6} // order gate: 3 s check + 10 s order + 5 s commit retries + 1 s
	logGroups := s.resources("AWS::Logs::LogGroup")
	for name, want := range wantTimeout {
		p := s.fnProps(t, name)
		if p["Timeout"] != want {
			t.Errorf("%s timeout = %v, want %v", name, p["Timeout"], want)
		}
		lg := p["LoggingConfig"].(map[string]any)["LogGroup"].(map[string]any)["Ref"].(string)
		if r, ok := logGroups[lg]; !ok || props(r)["RetentionInDays"] != float64(30) {
			t.Errorf("%s log group %s: want retention 30 days, got %v", name, lg, r)
		}
	}
	// Each function is packaged from its own build/<function> directory (the
	// dummy bootstraps differ, so the four asset hashes must too).
	keys := map[string]bool{}
	for _, name := range Functions {
		code := s.fnProps(t, name)["Code"].(map[string]any)
		key, _ := code["S3Key"].(string)
		if !strings.HasSuffix(key, ".zip") {
			t.Errorf("%s: code %v is not a zipped asset", name, code)
		}
		keys[key] = true
	}
	if len(keys) != len(Functions) {
		t.Errorf("%d distinct code assets, want %d", len(keys), len(Functions))
	}
}

func TestFunctionEnvironmentMatchesAPIContract(t *testing.T) {
	s := def(t)
	want := map[string]string{
		"ADMIT_RATE_PER_SEC":      fmt.Sprint(waitroom.DefaultAdmitRatePerSec),
		"ADMIT_INTERVAL_MS":       fmt.Sprint(waitroom.DefaultAdmitIntervalMs),
		"ADMIT_BATCHES":           fmt.Sprint(70_000 / waitroom.DefaultAdmitIntervalMs), // 70 s per per-minute invocation
		"ENTRY_TOKEN_TTL_SECONDS": fmt.Sprint(waitroom.DefaultEntryTokenTTLSeconds),
		"QUEUE_CAPACITY":          fmt.Sprint(waitroom.DefaultQueueCapacity),
		"ORDER_API_URL":           testOrderAPI,
		"ORDER_TIMEOUT_MS":        fmt.Sprint(waitroom.DefaultOrderTimeoutMs),
		"POLL_TIERS":              waitroom.DefaultPollTiers,
		"TRUST_USER_HEADER":       "false",
		"REDIS_CLUSTER":           "true",
		"REDIS_IAM_CACHE_NAME":    "waitroom",
		"REDIS_IAM_SERVERLESS":    "true",
	}
	for _, name := range Functions {
		vars := s.fnProps(t, name)["Environment"].(map[string]any)["Variables"].(map[string]any)
		var keys []string
		for k := range vars {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		wantKeys := []string{"ADMIT_BATCHES", "ADMIT_INTERVAL_MS", "ADMIT_RATE_PER_SEC", "ENTRY_TOKEN_TTL_SECONDS",
			"OPEN_ROOMS", "ORDER_API_URL", "ORDER_TIMEOUT_MS", "POLL_TIERS", "QUEUE_CAPACITY", "REDIS_CLUSTER", "REDIS_IAM_CACHE_NAME",
			"REDIS_IAM_SERVERLESS", "REDIS_IAM_USER", "REDIS_URL"}
		if servesVisitors(name) { // the functions behind the visitors' routes learn who may enter and whom to believe
			wantKeys = append(wantKeys, "ANONYMOUS_VISITORS", "TRUST_USER_HEADER")
		}
		if name == FnOrderGate { // the order record (issue 33)
			wantKeys = append(wantKeys, "ORDER_RECORD_TABLE")
		}
		sort.Strings(wantKeys)
		if strings.Join(keys, ",") != strings.Join(wantKeys, ",") {
			t.Errorf("%s env keys = %v, want %v", name, keys, wantKeys)
		}
		for k, v := range want {
			if k == "TRUST_USER_HEADER" && !servesVisitors(name) {
				continue
			}
			if vars[k] != v {
				t.Errorf("%s %s = %v, want %q", name, k, vars[k], v)
			}
		}
		if user := "waitroom-" + cacheacl.Grants[name].UserSuffix; vars["REDIS_IAM_USER"] != user {
			t.Errorf("%s REDIS_IAM_USER = %v, want its own user %q", name, vars["REDIS_IAM_USER"], user)
		}
		url := js(vars["REDIS_URL"])
		if !strings.Contains(url, `"rediss://"`) || !strings.Contains(url, `"Endpoint.Address"`) || !strings.Contains(url, `"Endpoint.Port"`) {
			t.Errorf("%s REDIS_URL = %s, want rediss://<cache endpoint>:<port>", name, url)
		}
	}
}

func TestEnvironmentFollowsProps(t *testing.T) {
	s := synthesize(t, func(p *WaitroomProps) {
		p.AdmitRatePerSec = 175
		p.AdmitIntervalMs = 200
		p.EntryTokenTTLSeconds = 600
		p.QueueCapacity = 5000
		p.OrderTimeoutMs = 8000
		p.OrderGateFailOpen = true
	})
	vars := s.fnProps(t, FnAdmit)["Environment"].(map[string]any)["Variables"].(map[string]any)
	for k, v := range map[string]string{
		"ADMIT_RATE_PER_SEC": "175", "ADMIT_INTERVAL_MS": "200", "ADMIT_BATCHES": "350",
		"ENTRY_TOKEN_TTL_SECONDS": "600", "QUEUE_CAPACITY": "5000", "ORDER_TIMEOUT_MS": "8000",
		"ORDER_GATE_FAIL_OPEN": "true",
	} {
		if vars[k] != v {
			t.Errorf("%s = %v, want %s", k, vars[k], v)
		}
	}
	// 3 s token check + 8 s downstream + 5 s commit retries + 1 s to answer.
	if got := s.fnProps(t, FnOrderGate)["Timeout"]; got != float64(17) {
		t.Errorf("order-gate timeout = %v, want 17 (check + ORDER_TIMEOUT_MS + commit retries + 1 s)", got)
	}
	s.tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"AlarmName": "waitroom-" + AlarmQueueNearCapacity,
		"Threshold": 4500,
	})
	// The rate alarms look at three token lives: 30 minutes for a 600 s TTL.
	s.tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"AlarmName": "waitroom-" + AlarmLowConversion,
		"Metrics": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
			"Id": "admitted", "MetricStat": assertions.Match_ObjectLike(&map[string]any{"Period": 1800}),
		})}),
	})
}

func TestRoutesAuthorizerAndNoRouteToAdmit(t *testing.T) {
	s := def(t)
	s.tpl.ResourceCountIs(jsii.String("AWS::ApiGatewayV2::Api"), jsii.Number(1))
	s.tpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Api"), map[string]any{
		"ProtocolType": "HTTP",
		"CorsConfiguration": assertions.Match_ObjectLike(&map[string]any{
			"AllowOrigins":  []any{testOrigin},
			"AllowMethods":  assertions.Match_ArrayWith(&[]any{"GET", "POST"}),
			"AllowHeaders":  assertions.Match_ArrayWith(&[]any{"authorization", "content-type", "x-entry-token", "idempotency-key"}),
			"ExposeHeaders": []any{"retry-after"},
		}),
	})
	authID := onlyKey(t, s.resources("AWS::ApiGatewayV2::Authorizer"), "")
	s.tpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Authorizer"), map[string]any{
		"AuthorizerType": "JWT",
		"IdentitySource": []any{"$request.header.Authorization"},
		"JwtConfiguration": map[string]any{
			"Issuer":   testIssuer,
			"Audience": []any{testAudience},
		},
	})

	integrations := s.resources("AWS::ApiGatewayV2::Integration")
	if len(integrations) != 4 { // one per function behind a route: enter, position (its two routes), order gate, admin
		t.Fatalf("%d integrations, want 4", len(integrations))
	}
	wantRoutes := map[string]string{
		"POST /queue/enter":   FnEnter,
		"GET /queue/position": FnPosition,
		"POST /orders":        FnOrderGate,
		"GET " + JWKSPath:     FnPosition,
		"GET " + LinePath:     FnPosition,
	}
	routes := s.resources("AWS::ApiGatewayV2::Route")
	if len(routes) != len(wantRoutes)+len(adminRoutes) {
		t.Fatalf("%d routes, want %d", len(routes), len(wantRoutes)+len(adminRoutes))
	}
	for _, r := range routes {
		p := props(r)
		key := p["RouteKey"].(string)
		if strings.Contains(key, " /admin/") {
			continue // AWS_IAM, to the admin function (TestStackWiresTheAdminAPI)
		}
		fn, ok := wantRoutes[key]
		if !ok {
			t.Errorf("unexpected route %q", key)
			continue
		}
		if key == "GET "+JWKSPath || key == "GET "+LinePath { // public: origins fetch the keys, pages the line, without a user
			if p["AuthorizationType"] != nil && p["AuthorizationType"] != "NONE" {
				t.Errorf("route %s: authorization %v, want none", key, p["AuthorizationType"])
			}
		} else if p["AuthorizationType"] != "JWT" || js(p["AuthorizerId"]) != js(map[string]any{"Ref": authID}) {
			t.Errorf("route %s: authorization %v %v, want JWT with %s", key, p["AuthorizationType"], p["AuthorizerId"], authID)
		}
		target := js(p["Target"])
		var integ map[string]any
		for id, r := range integrations {
			if strings.Contains(target, `"`+id+`"`) {
				integ = props(r)
			}
		}
		if integ == nil || js(integ["IntegrationUri"]) != getAttArn(s.fnID(fn)) {
			t.Errorf("route %s: integration %v, want function %s", key, integ, fn)
		}
	}
	admitArn := getAttArn(s.fnID(FnAdmit))
	for id, r := range integrations {
		if strings.Contains(js(props(r)), s.fnID(FnAdmit)) {
			t.Errorf("integration %s reaches admit (%s)", id, admitArn)
		}
	}
}

func TestAdmitScheduleAndInvokePermissions(t *testing.T) {
	s := def(t)
	admitID := s.fnID(FnAdmit)
	rules := s.resources("AWS::Events::Rule")
	ruleID := onlyKey(t, rules, "")
	rp := props(rules[ruleID])
	if rp["ScheduleExpression"] != "rate(1 minute)" || rp["State"] != "ENABLED" {
		t.Errorf("rule = %v", rp)
	}
	targets := rp["Targets"].([]any)
	if len(targets) != 1 || js(targets[0].(map[string]any)["Arn"]) != getAttArn(admitID) {
		t.Errorf("rule targets = %s, want only admit", js(targets))
	}
	if got := js(targets[0].(map[string]any)["RetryPolicy"]); got != `{"MaximumEventAgeInSeconds":60,"MaximumRetryAttempts":0}` {
		t.Errorf("retry policy = %s", got)
	}
	s.tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventInvokeConfig"), map[string]any{
		"FunctionName":         map[string]any{"Ref": admitID},
		"MaximumRetryAttempts": 0,
	})

	// Who may invoke what: admit only by this rule; the others only by the API.
	perms := s.resources("AWS::Lambda::Permission")
	invokers := map[string][]string{}
	for _, r := range perms {
		p := props(r)
		fn := js(p["FunctionName"])
		for _, name := range Functions {
			if fn == getAttArn(s.fnID(name)) || fn == js(map[string]any{"Ref": s.fnID(name)}) {
				invokers[name] = append(invokers[name], p["Principal"].(string))
				if name == FnAdmit && js(p["SourceArn"]) != getAttArn(ruleID) {
					t.Errorf("admit permission source = %s, want the schedule rule", js(p["SourceArn"]))
				}
				if p["Principal"] == "apigateway.amazonaws.com" && !strings.Contains(js(p["SourceArn"]), "execute-api") {
					t.Errorf("%s API permission not scoped to the API: %s", name, js(p["SourceArn"]))
				}
			}
		}
	}
	want := map[string][]string{
		FnAdmit:     {"events.amazonaws.com"},
		FnEnter:     {"apigateway.amazonaws.com"},
		FnPosition:  {"apigateway.amazonaws.com", "apigateway.amazonaws.com", "apigateway.amazonaws.com"}, // its route, the JWKS and the line
		FnOrderGate: {"apigateway.amazonaws.com"},
	}
	for range adminRoutes { // one permission per admin route, each scoped to its route
		want[FnAdmin] = append(want[FnAdmin], "apigateway.amazonaws.com")
	}
	if js(invokers) != js(want) {
		t.Errorf("invoke permissions = %v, want %v", invokers, want)
	}
	if len(perms) != 6+len(adminRoutes) {
		t.Errorf("%d Lambda permissions, want %d", len(perms), 6+len(adminRoutes))
	}
}

func TestReplicationGroupCache(t *testing.T) {
	s := synthesize(t, func(p *WaitroomProps) { p.CacheMode = CacheReplicationGroup; p.CacheNodeType = "cache.t4g.medium" })
	s.tpl.ResourceCountIs(jsii.String("AWS::ElastiCache::ServerlessCache"), jsii.Number(0))
	s.tpl.HasResourceProperties(jsii.String("AWS::ElastiCache::ReplicationGroup"), map[string]any{
		"Engine":                   "valkey",
		"CacheNodeType":            "cache.t4g.medium",
		"TransitEncryptionEnabled": true,
		"TransitEncryptionMode":    "required",
		"AtRestEncryptionEnabled":  true,
		"AutomaticFailoverEnabled": true,
		"MultiAZEnabled":           true,
		"UserGroupIds":             []any{map[string]any{"Ref": "CacheUserGroup"}},
	})
	s.tpl.ResourceCountIs(jsii.String("AWS::ElastiCache::SubnetGroup"), jsii.Number(1))
	vars := s.fnProps(t, FnEnter)["Environment"].(map[string]any)["Variables"].(map[string]any)
	if vars["REDIS_CLUSTER"] != "false" || !strings.Contains(js(vars["REDIS_URL"]), "PrimaryEndPoint.Address") ||
		!strings.Contains(js(vars["REDIS_URL"]), `"rediss://"`) {
		t.Errorf("replication group env: REDIS_CLUSTER=%v REDIS_URL=%s", vars["REDIS_CLUSTER"], js(vars["REDIS_URL"]))
	}
}

func TestOutputs(t *testing.T) {
	s := def(t)
	for _, o := range []string{"ApiUrl", "EnterFunctionName", "PositionFunctionName", "AdmitFunctionName",
		"OrderGateFunctionName", "DashboardName", "CacheEndpoint", "CacheUserIds", "AdmitScheduleRuleName"} {
		s.tpl.HasOutput(jsii.String(o), map[string]any{})
	}
	s.tpl.HasOutput(jsii.String("DashboardName"), map[string]any{"Value": "waitroom"})
	s.tpl.HasOutput(jsii.String("AdmitFunctionName"), map[string]any{"Value": map[string]any{"Ref": s.fnID(FnAdmit)}})
}

// alarmByName finds an alarm by its AlarmName suffix.
func (s *synth) alarm(t *testing.T, id string) map[string]any {
	t.Helper()
	for _, r := range s.resources("AWS::CloudWatch::Alarm") {
		if props(r)["AlarmName"] == "waitroom-"+id {
			return props(r)
		}
	}
	t.Fatalf("no alarm %s", id)
	return nil
}

// waitroomMetrics lists the Waitroom metric names an alarm reads.
func waitroomMetrics(alarm map[string]any) []string {
	names := []string{}
	if alarm["Namespace"] == metrics.Namespace {
		names = append(names, alarm["MetricName"].(string))
	}
	ms, _ := alarm["Metrics"].([]any)
	for _, m := range ms {
		stat, ok := m.(map[string]any)["MetricStat"].(map[string]any)
		if !ok {
			continue
		}
		metric := stat["Metric"].(map[string]any)
		if metric["Namespace"] == metrics.Namespace {
			if metric["Dimensions"] != nil {
				names = append(names, "dimensioned:"+metric["MetricName"].(string))
			} else {
				names = append(names, metric["MetricName"].(string))
			}
		}
	}
	sort.Strings(names)
	return names
}

func sortedCopy(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	if out == nil {
		return []string{}
	}
	return out
}

func TestAlarmsAndDashboardUseTheMetricsPackageNames(t *testing.T) {
	s := def(t)
	known := map[string]bool{}
	for _, v := range metrics.Names {
		known[v] = true
	}
	// Every Waitroom metric an alarm reads is one of the package's names, in
	// the dimensionless aggregate.
	var read int
	for id, r := range s.resources("AWS::CloudWatch::Alarm") {
		for _, name := range waitroomMetrics(props(r)) {
			read++
			if !known[name] {
				t.Errorf("alarm %s reads %q, which the metrics package does not define (or a per-room dimension)", id, name)
			}
		}
		if strings.Contains(js(props(r)), `"Namespace":"`) && !strings.Contains(js(props(r)), `"Namespace":"Waitroom"`) &&
			!strings.Contains(js(props(r)), `"Namespace":"AWS/`) && !strings.Contains(js(props(r)), `"Namespace":"`+s.w.Props.ApiThrottledNamespace()+`"`) {
			t.Errorf("alarm %s reads an unknown namespace", id)
		}
	}
	if read < 6 {
		t.Errorf("only %d Waitroom metrics read by alarms", read)
	}
	// The dashboard shows every metric the functions emit.
	dashboards := s.resources("AWS::CloudWatch::Dashboard")
	body := js(props(dashboards[onlyKey(t, dashboards, "")])["DashboardBody"])
	for _, v := range metrics.Names {
		if !strings.Contains(body, `\"Waitroom\",\"`+v+`\"`) {
			t.Errorf("dashboard does not show the metric %q", v)
		}
	}
	for _, want := range []string{`\"p99\"`, `SEARCH('{Waitroom,Room}`, `100 * FILL(consumed, 0) / FILL(admitted, 0)`, `100 * FILL(expired, 0) / FILL(admitted, 0)`} {
		if !strings.Contains(body, want) {
			t.Errorf("dashboard lacks %s", want)
		}
	}
}

func TestAlarmTopic(t *testing.T) {
	s := synthesize(t, func(p *WaitroomProps) { p.AlarmEmail = "oncall@example.com" })
	s.tpl.ResourceCountIs(jsii.String("AWS::SNS::Topic"), jsii.Number(1))
	s.tpl.HasResourceProperties(jsii.String("AWS::SNS::Subscription"), map[string]any{"Protocol": "email", "Endpoint": "oncall@example.com"})
	topic := js(map[string]any{"Ref": onlyKey(t, s.resources("AWS::SNS::Topic"), "")})
	for id, r := range s.resources("AWS::CloudWatch::Alarm") {
		p := props(r)
		if js(p["AlarmActions"]) != "["+topic+"]" || js(p["OKActions"]) != "["+topic+"]" {
			t.Errorf("alarm %s actions = %v / %v", id, p["AlarmActions"], p["OKActions"])
		}
	}

	arn := "arn:aws:sns:eu-west-1:123456789012:oncall"
	s = synthesize(t, func(p *WaitroomProps) { p.AlarmTopicArn = arn })
	s.tpl.ResourceCountIs(jsii.String("AWS::SNS::Topic"), jsii.Number(0))
	s.tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"AlarmName": "waitroom-" + AlarmAdmitStalled, "AlarmActions": []any{arn},
	})
}

func TestRefusesWithoutAuthorizer(t *testing.T) {
	out, err := os.MkdirTemp(outRoot, "")
	if err != nil {
		t.Fatal(err)
	}
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(out)})
	p := baseProps()
	p.JwtIssuer, p.JwtAudience = "", nil
	w, err := NewWaitroomStack(app, "Waitroom", p)
	if !errors.Is(err, ErrNoAuthorizer) || w != nil {
		t.Fatalf("NewWaitroomStack without authorizer = %v, %v; want ErrNoAuthorizer", w, err)
	}
	if !strings.Contains(err.Error(), "trustUserHeader") || !strings.Contains(err.Error(), "jwtIssuer") {
		t.Errorf("error does not say how to fix it: %v", err)
	}
	if n := len(*app.Node().Children()); n != 0 {
		t.Errorf("a refused stack still added %d constructs", n)
	}
	// The app's own props reader refuses too.
	_, err = NewWaitroomStack(app, "Waitroom", mustProps(t, map[string]any{CtxOrderAPIURL: testOrderAPI, CtxAssetDir: assetDir}))
	if !errors.Is(err, ErrNoAuthorizer) {
		t.Errorf("context without jwtIssuer: %v", err)
	}
}

// onlyKey returns the single key of m (with prefix, when given).
func onlyKey[V any](t *testing.T, m map[string]V, prefix string) string {
	t.Helper()
	var keys []string
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	if len(keys) != 1 {
		t.Fatalf("want exactly one resource (prefix %q), got %v", prefix, keys)
	}
	return keys[0]
}

func TestPollTiersFromTheRootPackage(t *testing.T) {
	vars := def(t).fnProps(t, FnPosition)["Environment"].(map[string]any)["Variables"].(map[string]any)
	if vars["POLL_TIERS"] != waitroom.DefaultPollTiers {
		t.Errorf("POLL_TIERS = %v, want the default %q", vars["POLL_TIERS"], waitroom.DefaultPollTiers)
	}
	s := synthesize(t, func(p *WaitroomProps) { p.PollTiers = "0:1000, 30:4000" })
	if v := s.fnProps(t, FnPosition)["Environment"].(map[string]any)["Variables"].(map[string]any)["POLL_TIERS"]; v != "30:4000,0:1000" {
		t.Errorf("POLL_TIERS = %v, want the canonical 30:4000,0:1000", v)
	}
	out, err := os.MkdirTemp(outRoot, "")
	if err != nil {
		t.Fatal(err)
	}
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(out)})
	p := baseProps()
	p.PollTiers = "10:1000,0:5000"
	if _, err := NewWaitroomStack(app, "Waitroom", p); err == nil || !strings.Contains(err.Error(), "pollTiers") {
		t.Errorf("a tier table that polls faster far from the front: %v, want an error naming pollTiers", err)
	}
}

// Issue 22: context pageImageOrigins reaches the admin function (which
// checks rooms' logoUrl against it) and the page's CSP img-src, nothing
// else; a value that is not an https origin is refused.
func TestPageImageOrigins(t *testing.T) {
	s := synthesize(t, func(p *WaitroomProps) { p.PageImageOrigins = []string{"https://img.shop.example"} })
	for _, name := range Functions {
		vars := s.fnProps(t, name)["Environment"].(map[string]any)["Variables"].(map[string]any)
		if got, ok := vars["PAGE_IMAGE_ORIGINS"]; ok != (name == FnAdmin) || ok && got != "https://img.shop.example" {
			t.Errorf("%s PAGE_IMAGE_ORIGINS = %v (set: %t)", name, got, ok)
		}
	}
	_, _, tpl := pageStack(t, PageProps{ImageOrigins: []string{"https://img.shop.example"}})
	tpl.HasResourceProperties(jsii.String("AWS::CloudFront::ResponseHeadersPolicy"), map[string]any{
		"ResponseHeadersPolicyConfig": assertions.Match_ObjectLike(&map[string]any{
			"SecurityHeadersConfig": assertions.Match_ObjectLike(&map[string]any{
				"ContentSecurityPolicy": map[string]any{"ContentSecurityPolicy": web.CSPFor([]string{"https://img.shop.example"}), "Override": true},
			}),
		}),
	})
	for _, bad := range []string{"http://img.shop.example", "https://img.shop.example/logos", "img.shop.example"} {
		p := baseProps()
		p.PageImageOrigins = []string{bad}
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), CtxPageImageOrigins) {
			t.Errorf("pageImageOrigins %q: %v", bad, err)
		}
	}
}
