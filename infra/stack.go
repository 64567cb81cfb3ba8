package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Waitroom is the built stack with handles that tests and callers may need.
type Waitroom struct {
	awscdk.Stack
	Props     WaitroomProps
	Functions map[string]awslambda.Function
	API       awsapigatewayv2.HttpApi
	// APIDomain is the API's own domain, its only address when CloudFront
	// fronts it (nil otherwise: the execute-api endpoint serves).
	APIDomain awsapigatewayv2.DomainName
	Cache     *Cache
	Schedule  awsevents.Rule
	Dashboard string
	// Page is the waiting page, served only with anonymous visitors (nil otherwise).
	Page *Page
	// Admin is the operators' side of the API (AWS_IAM routes /admin/…).
	Admin *Admin
	// Intake is the broker of INTAKE broker and fallback (nil when direct).
	Intake *Intake
	// OrderRecord is the durable record of consumed entry tokens (issue 33).
	OrderRecord awsdynamodb.Table
	// envKey encrypts the environment of the functions holding secrets.
	envKey *envKey
}

// NewWaitroomStack builds the whole waiting room. It returns an error, and
// adds nothing to scope, when props are invalid (notably: no authorizer and
// no explicit opt-in to a trusted proxy).
func NewWaitroomStack(scope constructs.Construct, id string, props WaitroomProps) (*Waitroom, error) {
	p := props.WithDefaults(id)
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := checkAssets(p.AssetDir, p.FunctionNames()); err != nil {
		return nil, err
	}
	sp := p.StackProps
	if sp.Description == nil {
		sp.Description = jsii.String("Waitroom: a serverless virtual waiting room (API Gateway, Lambda, ElastiCache)")
	}
	stack := awscdk.NewStack(scope, jsii.String(id), &sp)
	// Without this flag a dual-stack VPC gets an egress-only gateway of its
	// own even without private subnets; ours is made (and routed) by newNetwork.
	stack.Node().SetContext(jsii.String("@aws-cdk/aws-ec2:requirePrivateSubnetsForEgressOnlyInternetGateway"), true)
	w := &Waitroom{Stack: stack, Props: p, envKey: &envKey{stack: stack}}

	net := newNetwork(stack, p)
	w.Cache = newCache(stack, p, net)
	w.OrderRecord = newOrderRecordTable(stack)
	w.Functions = newFunctions(stack, p, net, w.Cache, w.envKey, w.OrderRecord)
	reachOrderRecord(net, w.OrderRecord, w.Functions[FnOrderGate])
	w.Intake = newBroker(stack, p, net, w)
	w.Schedule = newAdmitSchedule(stack, p, w.Functions[FnAdmit])
	w.API, w.APIDomain = newAPI(stack, p, w.Functions)
	w.Admin = NewAdmin(stack, w.API, w.Functions[FnAdmin])
	w.Page = newVisitorPage(stack, p)
	w.Dashboard = newMonitoring(stack, p, w)
	newOutputs(stack, w)
	return w, nil
}

// checkAssets makes sure `make build` ran: one bootstrap per function.
func checkAssets(dir string, functions []string) error {
	for _, fn := range functions {
		path := filepath.Join(dir, fn, "bootstrap")
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("waitroom: function asset %s missing (run `make build` at the repository root): %w", path, err)
		}
	}
	return nil
}

// newVisitorPage serves the waiting page when visitors may come without an
// account, in front of the API on its own domain. The page itself sends no
// credentials but its ticket: in the other modes the shop's own front end
// calls the API with its tokens.
func newVisitorPage(stack awscdk.Stack, p WaitroomProps) *Page {
	if !p.AnonymousVisitors {
		return nil
	}
	pp := p.PageProps()
	pp.APIDomain = p.APIDomainName
	pp.WebACLArn = newEdgeRateRule(stack, p)
	return newPage(stack, pp)
}

// newOutputs names what an operator looks for after a deploy.
func newOutputs(stack awscdk.Stack, w *Waitroom) {
	out := func(id, value, desc string) {
		awscdk.NewCfnOutput(stack, jsii.String(id), &awscdk.CfnOutputProps{Value: jsii.String(value), Description: jsii.String(desc)})
	}
	if w.APIDomain != nil {
		out("ApiUrl", "https://"+w.Props.APIDomainName+"/", "The API's own domain (execute-api is disabled): the page's origin, and the operators' address (waitroomctl --aws)")
		out("ApiDomainTarget", *w.APIDomain.RegionalDomainName(), "Point "+w.Props.APIDomainName+" here (a CNAME): CloudFront and the operators reach the API through it")
	} else {
		out("ApiUrl", *w.API.Url(), "Base URL of the waiting room API")
	}
	for _, name := range w.Props.FunctionNames() {
		out(logicalName(name)+"FunctionName", *w.Functions[name].FunctionName(), "Lambda function "+name)
	}
	out("DashboardName", w.Dashboard, "CloudWatch dashboard")
	out("OrderRooms", orderRoomsOutput(w.Props), "Rooms whose entry tokens the order gate takes (ORDER_ROOMS, context orderRooms); a token of any other room is 403 wrong_room")
	out("AdminOperatorPolicyArn", *w.Admin.OperatorPolicy.ManagedPolicyArn(), "Attach to operators: execute-api:Invoke on /admin/* (waitroomctl --aws)")
	out("CacheEndpoint", *awscdk.Fn_Join(jsii.String(":"), &[]*string{w.Cache.Address, w.Cache.Port}), "Cache endpoint (TLS)")
	out("CacheUserIds", w.Cache.cacheUserIDs(w.Props.FunctionNames()), "ElastiCache user each function logs in as (IAM authentication; its own keys and commands only)")
	if w.Page != nil {
		out("PageUrl", *w.Page.URL, "The waiting page; the API is on the same origin under /queue/* and /orders")
	}
	if w.Intake != nil {
		out("IntakeQueueUrl", *w.Intake.Queue.QueueUrl(), "SQS FIFO queue of accepted entries (INTAKE "+string(w.Props.Intake)+")")
		out("IntakeDeadLetterQueueUrl", *w.Intake.DeadLetters.QueueUrl(), "Entries the consumer could not apply; redrive them to the intake queue")
	}
	out("AdmitScheduleRuleName", *w.Schedule.RuleName(), "EventBridge rule that drives admission (disable it to pause admission)")
}

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
