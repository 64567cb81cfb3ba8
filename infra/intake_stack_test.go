package main

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/waitroom/waitroom"
)

const testAlarmTopic = "arn:aws:sns:eu-west-1:123456789012:oncall"

// intakeStack synthesizes the whole stack (NewWaitroomStack) in mode.
func intakeStack(t *testing.T, mode waitroom.Intake) *synth {
	t.Helper()
	return synthesize(t, func(p *WaitroomProps) {
		p.Intake = mode
		p.TicketSecretSSMParameter = testTicketParam
		p.AlarmTopicArn = testAlarmTopic
	})
}

// deadLetterAlarmListed says whether the dashboard's alarm widget lists the
// intake dead-letter alarm.
func deadLetterAlarmListed(t *testing.T, s *synth) bool {
	t.Helper()
	for _, r := range s.resources("AWS::CloudWatch::Dashboard") {
		if strings.Contains(js(props(r)["DashboardBody"]), "IntakeDeadLetterAlarm") {
			return true
		}
	}
	return false
}

func TestDirectIntakeAddsNoQueue(t *testing.T) {
	s := def(t)
	s.tpl.ResourceCountIs(jsii.String("AWS::SQS::Queue"), jsii.Number(0))
	s.tpl.ResourceCountIs(jsii.String("AWS::Lambda::EventSourceMapping"), jsii.Number(0))
	if s.w.Intake != nil || s.w.Functions[FnIntakeConsumer] != nil {
		t.Fatal("direct intake built a broker")
	}
	vars := s.fnProps(t, FnEnter)["Environment"].(map[string]any)["Variables"].(map[string]any)
	if _, ok := vars["INTAKE"]; ok {
		t.Errorf("direct enter has INTAKE=%v; the functions' default is direct", vars["INTAKE"])
	}
	if deadLetterAlarmListed(t, s) {
		t.Error("dashboard lists an intake alarm without intake")
	}
}

func TestBrokerAndFallbackIntakeOnTheWholeStack(t *testing.T) {
	for _, mode := range []waitroom.Intake{waitroom.IntakeBroker, waitroom.IntakeFallback} {
		t.Run(string(mode), func(t *testing.T) {
			s := intakeStack(t, mode)
			if n := len(s.resources("AWS::Lambda::Function")) - len(s.cdkProviders()); n != len(Functions)+1 {
				t.Errorf("%d functions, want %d and the consumer", n, len(Functions))
			}
			s.tpl.ResourceCountIs(jsii.String("AWS::SQS::Queue"), jsii.Number(2))
			s.tpl.ResourceCountIs(jsii.String("AWS::Lambda::EventSourceMapping"), jsii.Number(1))
			endpoints := 0
			for _, r := range s.resources("AWS::EC2::VPCEndpoint") {
				if strings.Contains(js(props(r)["ServiceName"]), ".sqs") {
					endpoints++
				}
			}
			if endpoints != 1 {
				t.Errorf("%d SQS endpoints, want 1: enter sends from the VPC", endpoints)
			}

			enter := s.fnProps(t, FnEnter)
			vars := enter["Environment"].(map[string]any)["Variables"].(map[string]any)
			if vars["INTAKE"] != string(mode) || vars["INTAKE_QUEUE_URL"] == nil {
				t.Errorf("enter INTAKE=%v INTAKE_QUEUE_URL=%v", vars["INTAKE"], vars["INTAKE_QUEUE_URL"])
			}
			for _, fn := range []string{FnEnter, FnPosition} {
				env := s.fnProps(t, fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
				if env["TICKET_SECRET"] != "{{resolve:ssm:"+testTicketParam+"}}" {
					t.Errorf("%s TICKET_SECRET=%v: receipts need the key", fn, env["TICKET_SECRET"])
				}
			}
			// Fallback writes to the store; broker asks it before it accepts
			// (the room, the limiter, a solution's single use), and outside
			// the VPC every such call would time out and fail open.
			if _, inVPC := enter["VpcConfig"]; !inVPC {
				t.Error("enter outside the VPC: it could not reach the store")
			}
			if _, inVPC := s.fnProps(t, FnIntakeConsumer)["VpcConfig"]; !inVPC {
				t.Error("the consumer must reach the cache from the VPC")
			}

			alarm := s.alarm(t, "IntakeDeadLetters")
			if js(alarm["AlarmActions"]) != js([]any{testAlarmTopic}) || js(alarm["OKActions"]) != js([]any{testAlarmTopic}) {
				t.Errorf("dead-letter alarm actions %v / %v, want the alarm topic", alarm["AlarmActions"], alarm["OKActions"])
			}
			if !deadLetterAlarmListed(t, s) {
				t.Error("the dashboard does not list the dead-letter alarm")
			}
			if !strings.Contains(js(s.alarm(t, AlarmLambdaThrottles)), s.fnID(FnIntakeConsumer)) {
				t.Error("the throttle alarm does not watch the consumer")
			}
			for _, o := range []string{"IntakeConsumerFunctionName", "IntakeQueueUrl", "IntakeDeadLetterQueueUrl"} {
				s.tpl.HasOutput(jsii.String(o), map[string]any{})
			}
			s.tpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
				"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{
					assertions.Match_ObjectLike(&map[string]any{"Action": assertions.Match_ArrayWith(&[]any{"sqs:SendMessage"})}),
				})},
				"Roles": []any{map[string]any{"Ref": s.fnProps(t, FnEnter)["Role"].(map[string]any)["Fn::GetAtt"].([]any)[0]}},
			})
		})
	}
}

func TestIntakeNeedsTheTicketKeyAndAKnownMode(t *testing.T) {
	for name, c := range map[string]struct {
		mutate func(*WaitroomProps)
		want   string
	}{
		"broker without key": {func(p *WaitroomProps) { p.Intake = waitroom.IntakeBroker }, "ticketSecretSsmParameter"},
		"unknown mode":       {func(p *WaitroomProps) { p.Intake = "queue" }, "intake"},
	} {
		p := baseProps()
		c.mutate(&p)
		if err := p.WithDefaults("Waitroom").Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %s", name, err, c.want)
		}
	}
}

// In broker and fallback mode enter alone reaches the SQS interface
// endpoint, and reaches the cache too: it has a security group of its own,
// out to the cache (on its ports, which the cache admits) and the endpoint;
// the other functions keep theirs, out to the cache only.
func TestIntakeEnterReachesTheCacheAndAloneTheQueue(t *testing.T) {
	_, stacks := documentedConfigurations(t)
	for _, name := range []string{"broker", "fallback"} {
		t.Run(name, func(t *testing.T) {
			s := stacks[name]
			if _, ok := s.fnProps(t, FnEnter)["VpcConfig"]; !ok {
				t.Fatal("enter runs outside the VPC: no security group, no way to the cache")
			}
			enterSG := s.sgOf(t, FnEnter)
			if enterSG != onlyKey(t, s.resources("AWS::EC2::SecurityGroup"), "EnterSecurityGroup") {
				t.Fatalf("enter runs with %s, not its own security group", enterSG)
			}
			endpoints := s.interfaceEndpoints()
			if len(endpoints) != 1 {
				t.Fatalf("%d endpoints, want the SQS one", len(endpoints))
			}
			var endpointSG string
			for _, r := range endpoints {
				endpointSG = props(r)["SecurityGroupIds"].([]any)[0].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
			}
			toEndpoint := js(map[string]any{"Fn::GetAtt": []any{endpointSG, "GroupId"}})
			cacheID := onlyKey(t, s.resources("AWS::EC2::SecurityGroup"), "CacheSecurityGroup")
			toCache := js(map[string]any{"Fn::GetAtt": []any{cacheID, "GroupId"}})
			got := s.egress(enterSG)
			want := map[egressRule]bool{{toCache, cachePortLow, cachePortHigh}: true, {toEndpoint, 443, 443}: true}
			for _, r := range got {
				delete(want, r)
			}
			if len(got) != 2 || len(want) != 0 {
				t.Errorf("enter egress %+v, want the cache (%d-%d) and the SQS endpoint (443) only", got, cachePortLow, cachePortHigh)
			}
			fromEnter := js(map[string]any{"Fn::GetAtt": []any{enterSG, "GroupId"}})
			admitted := false
			for _, r := range s.resources("AWS::EC2::SecurityGroupIngress") {
				p := props(r)
				admitted = admitted || js(p["GroupId"]) == toCache && js(p["SourceSecurityGroupId"]) == fromEnter &&
					p["FromPort"] == float64(cachePortLow) && p["ToPort"] == float64(cachePortHigh)
				if js(p["GroupId"]) == toEndpoint && js(p["SourceSecurityGroupId"]) != fromEnter {
					t.Errorf("the SQS endpoint admits %s, not only enter", js(p["SourceSecurityGroupId"]))
				}
			}
			if !admitted {
				t.Error("the cache does not admit enter's security group")
			}
			for _, fn := range s.w.Props.FunctionNames() {
				sg := s.sgOf(t, fn)
				reaches := false
				for _, e := range s.egress(sg) {
					reaches = reaches || e.to == toEndpoint
				}
				if want := fn == FnEnter; reaches != want || (fn != FnEnter && sg == enterSG) {
					t.Errorf("%s (security group %s) reaches the SQS endpoint: %v, want %v", fn, sg, reaches, want)
				}
			}
		})
	}
}

// Every function runs in the VPC, enter in broker mode too (it asks the
// store before it accepts), and each may manage its network interfaces.
func TestEveryFunctionRunsInTheVpc(t *testing.T) {
	_, stacks := documentedConfigurations(t)
	for _, name := range []string{"broker", "fallback", "default"} {
		s := stacks[name]
		for _, fn := range s.w.Props.FunctionNames() {
			_, inVPC := s.fnProps(t, fn)["VpcConfig"]
			role := s.resources("AWS::IAM::Role")[s.fnProps(t, fn)["Role"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)]
			if hasENI := strings.Contains(js(role), "ec2:CreateNetworkInterface"); !inVPC || !hasENI {
				t.Errorf("%s: %s in the VPC %v, may manage network interfaces %v; want both", name, fn, inVPC, hasENI)
			}
		}
	}
}
