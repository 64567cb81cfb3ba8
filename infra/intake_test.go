package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/waitroom/waitroom"
)

// intakeSynth builds a minimal stack: the network, the cache, an enter
// function, and the intake in mode.
func intakeSynth(t *testing.T, mode waitroom.Intake) (*synth, *Intake) {
	t.Helper()
	dir := assetDir
	p := baseProps()
	p.Intake = mode
	p.TicketSecretSSMParameter = testTicketParam
	p.TicketTTLSeconds = 1800
	p = p.WithDefaults("Intake")
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	stack := awscdk.NewStack(app, jsii.String("Intake"), nil)
	net := newNetwork(stack, p)
	cache := newCache(stack, p, net)
	enter := awslambda.NewFunction(stack, jsii.String("EnterFunction"), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_PROVIDED_AL2023(), Handler: jsii.String("bootstrap"),
		Code: awslambda.Code_FromAsset(jsii.String(filepath.Join(dir, FnEnter)), nil),
	})
	in := newIntake(stack, p, mode, net, cache, &envKey{stack: stack}, enter)
	tpl := assertions.Template_FromStack(stack, nil)
	raw, err := json.Marshal(tpl.ToJSON())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return &synth{tpl: tpl, json: m}, in
}

func TestIntakeQueueConsumerDeadLettersAndAlarm(t *testing.T) {
	s, in := intakeSynth(t, waitroom.IntakeBroker)
	queueID := *awscdk.Stack_Of(in.Queue).GetLogicalId(in.Queue.Node().DefaultChild().(awscdk.CfnElement))
	dlqID := *awscdk.Stack_Of(in.DeadLetters).GetLogicalId(in.DeadLetters.Node().DefaultChild().(awscdk.CfnElement))
	s.tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
		"FifoQueue": true, "ContentBasedDeduplication": false,
		"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId",
		"VisibilityTimeout": intakeVisibilitySeconds, "SqsManagedSseEnabled": true,
		"RedrivePolicy": map[string]any{"deadLetterTargetArn": map[string]any{"Fn::GetAtt": []any{dlqID, "Arn"}}, "maxReceiveCount": intakeMaxReceives},
	})
	s.tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{"FifoQueue": true, "MessageRetentionPeriod": 14 * 86400})
	s.tpl.ResourceCountIs(jsii.String("AWS::SQS::Queue"), jsii.Number(2))
	// Ordered batches with per-message failures, from the queue to the consumer.
	s.tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
		"EventSourceArn": map[string]any{"Fn::GetAtt": []any{queueID, "Arn"}}, "BatchSize": intakeBatchSize,
		"FunctionResponseTypes": []any{"ReportBatchItemFailures"},
	})
	// The consumer: the functions' runtime, in the VPC, with the store's environment.
	s.tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Handler": "bootstrap", "Runtime": "provided.al2023", "Architectures": []any{"arm64"}, "Timeout": intakeTimeoutSeconds,
		"VpcConfig": assertions.Match_ObjectLike(&map[string]any{"SubnetIds": assertions.Match_AnyValue()}),
		"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{
			"REDIS_URL": assertions.Match_AnyValue(), "TICKET_TTL_SECONDS": "1800"})},
	})
	// enter is told the mode and the queue, and may send to it and nothing more.
	s.tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{
			"INTAKE": "broker", "INTAKE_QUEUE_URL": map[string]any{"Ref": queueID}})},
	})
	s.tpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
		"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{map[string]any{
			"Action": []any{"sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}, "Effect": "Allow",
			"Resource": map[string]any{"Fn::GetAtt": []any{queueID, "Arn"}}}})},
	})
	s.tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"MetricName": "ApproximateNumberOfMessagesVisible", "Namespace": "AWS/SQS", "Threshold": 0,
		"ComparisonOperator": "GreaterThanThreshold", "Statistic": "Maximum",
		"Dimensions": []any{map[string]any{"Name": "QueueName", "Value": map[string]any{"Fn::GetAtt": []any{dlqID, "QueueName"}}}},
	})
}

// In broker and fallback mode alike enter runs in the VPC and reaches SQS
// through an interface endpoint open to enter's security group only: in
// fallback it writes to the store, in broker it asks the store before it
// accepts (the room, the limiter, a solution's single use). The event
// source mapping's poller is Lambda's own and needs no endpoint.
func TestIntakeAddsTheSQSEndpoint(t *testing.T) {
	for _, mode := range []waitroom.Intake{waitroom.IntakeBroker, waitroom.IntakeFallback} {
		t.Run(string(mode), func(t *testing.T) {
			s, _ := intakeSynth(t, mode)
			if n := len(s.interfaceEndpoints()); n != 1 {
				t.Fatalf("%d interface endpoints, want SQS's", n)
			}
			for _, r := range s.interfaceEndpoints() {
				p := props(r)
				if !strings.Contains(js(p["ServiceName"]), "sqs") || p["VpcEndpointType"] != "Interface" || p["PrivateDnsEnabled"] != true {
					t.Fatalf("endpoint %s", js(p))
				}
			}
			s.tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
				"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{"INTAKE": string(mode)})},
			})
			s.tpl.HasResourceProperties(jsii.String("AWS::EC2::SecurityGroupIngress"), map[string]any{"FromPort": 443, "ToPort": 443, "IpProtocol": "tcp"})
		})
	}
}
