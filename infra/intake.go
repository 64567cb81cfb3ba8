package main

import (
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/waitroom/waitroom"
)

// FnIntakeConsumer applies the entries enter accepted into the broker.
const FnIntakeConsumer = "intake-consumer"

// The consumer's sizes. A batch stops at its first failure and a store
// call gives up after a few seconds, so 10 s is ample for 10 entries; the
// visibility timeout is six times that, as AWS advises for event source
// mappings. An entry goes to the dead-letter queue after 100 failed
// deliveries, 100 minutes of outage: past its receipt's default hour, when
// the consumer would drop it anyway, so only a bug sends one there early.
const (
	intakeTimeoutSeconds    = 10
	intakeVisibilitySeconds = 6 * intakeTimeoutSeconds
	intakeMaxReceives       = 100
	intakeBatchSize         = 10 // the most a FIFO event source mapping delivers
)

// Intake is the broker of INTAKE broker and fallback: the FIFO queue of
// accepted entries, its dead-letter queue and alarm, and the consumer.
type Intake struct {
	Queue, DeadLetters awssqs.Queue
	Consumer           awslambda.Function
	DeadLetterAlarm    awscloudwatch.Alarm
}

// newIntake adds the broker for mode (broker or fallback), lets enter send
// to it and tells enter so. The consumer needs the store like the others,
// and runs in the VPC beside them. The event source mapping's poller is
// Lambda's own and needs no endpoint. enter stays in the VPC in both modes,
// and reaches SQS through an interface endpoint: in fallback it writes to
// the store, in broker it asks the store before it accepts (the room, the
// limiter, a solution's single use; awslambda/intake.go, accept), which
// outside the VPC would only ever time out (docs/cost.md, "Intake through
// a broker").
func newIntake(stack awscdk.Stack, p WaitroomProps, mode waitroom.Intake, net *network, cache *Cache, keys *envKey, enter awslambda.Function) *Intake {
	in := &Intake{DeadLetters: awssqs.NewQueue(stack, jsii.String("IntakeDeadLetters"), &awssqs.QueueProps{
		Fifo:            jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
	})}
	in.Queue = awssqs.NewQueue(stack, jsii.String("IntakeQueue"), &awssqs.QueueProps{
		Fifo: jsii.Bool(true),
		// enter sends one deduplication id per room and identity; high
		// throughput mode gives each room (message group) its own quota.
		ContentBasedDeduplication: jsii.Bool(false),
		DeduplicationScope:        awssqs.DeduplicationScope_MESSAGE_GROUP,
		FifoThroughputLimit:       awssqs.FifoThroughputLimit_PER_MESSAGE_GROUP_ID,
		VisibilityTimeout:         awscdk.Duration_Seconds(jsii.Number(intakeVisibilitySeconds)),
		RetentionPeriod:           awscdk.Duration_Days(jsii.Number(4)),
		Encryption:                awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:                jsii.Bool(true),
		DeadLetterQueue:           &awssqs.DeadLetterQueue{Queue: in.DeadLetters, MaxReceiveCount: jsii.Number(intakeMaxReceives)},
	})
	in.Consumer = newIntakeConsumer(stack, p, net, cache, keys)
	in.Consumer.AddEventSource(awslambdaeventsources.NewSqsEventSource(in.Queue, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(intakeBatchSize),
		ReportBatchItemFailures: jsii.Bool(true),
	}))
	in.Queue.GrantSendMessages(enter)
	enter.AddEnvironment(jsii.String("INTAKE"), jsii.String(string(mode)), nil)
	enter.AddEnvironment(jsii.String("INTAKE_QUEUE_URL"), in.Queue.QueueUrl(), nil)
	addSQSEndpoint(stack, net)
	in.DeadLetterAlarm = awscloudwatch.NewAlarm(stack, jsii.String("IntakeDeadLetterAlarm"), &awscloudwatch.AlarmProps{
		AlarmName: jsii.String(p.NamePrefix + "-IntakeDeadLetters"),
		AlarmDescription: jsii.String("Accepted entries the consumer could not apply in " +
			"100 deliveries are in the dead-letter queue: nobody is lost, but they are not in line. See infra/README.md, Alarms."),
		Metric: in.DeadLetters.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Statistic: jsii.String("Maximum"), Period: awscdk.Duration_Minutes(jsii.Number(5))}),
		Threshold:          jsii.Number(0),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		EvaluationPeriods:  jsii.Number(1),
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	return in
}

// newBroker adds the intake queue and its consumer when INTAKE is broker
// or fallback, and nothing (nil) when direct.
func newBroker(stack awscdk.Stack, p WaitroomProps, net *network, w *Waitroom) *Intake {
	if p.Intake == waitroom.IntakeDirect {
		return nil
	}
	in := newIntake(stack, p, p.Intake, net, w.Cache, w.envKey, w.Functions[FnEnter])
	w.Functions[FnIntakeConsumer] = in.Consumer
	return in
}

// newIntakeConsumer is the consumer function: the others' runtime, role and
// network (the isolated subnets, out to the cache only). It gets no ticket
// key, only the receipts' lifetime, which bounds the entries it applies.
func newIntakeConsumer(stack awscdk.Stack, p WaitroomProps, net *network, cache *Cache, keys *envKey) awslambda.Function {
	env := functionEnv(p, cache, FnIntakeConsumer)
	if ttl := p.PageProps().TicketTTLSeconds; ttl > 0 {
		env["TICKET_TTL_SECONDS"] = jsii.String(strconv.Itoa(ttl))
	}
	spec := fnSpec{FnIntakeConsumer, "Waitroom: applies accepted entries from the intake queue to the line, in order", 128, intakeTimeoutSeconds, NoLimit}
	return awslambda.NewFunction(stack, jsii.String(logicalName(FnIntakeConsumer)+"Function"), functionProps(stack, p, net, cache, keys, spec, env))
}

// addSQSEndpoint lets enter (broker or fallback, in the isolated subnets)
// reach SQS: an interface endpoint open to enter's own security group only; the
// other functions' group stays out to the cache alone.
func addSQSEndpoint(stack awscdk.Stack, net *network) {
	sg := awsec2.NewSecurityGroup(stack, jsii.String("SqsEndpointSG"), &awsec2.SecurityGroupProps{
		Vpc: net.vpc, AllowAllOutbound: jsii.Bool(false), Description: jsii.String("SQS interface endpoint: HTTPS from enter only"),
	})
	https := awsec2.Port_Tcp(jsii.Number(443))
	sg.AddIngressRule(net.enterSG, https, jsii.String("HTTPS from enter"), nil)
	net.enterSG.AddEgressRule(sg, https, jsii.String("SQS (intake)"), nil)
	net.vpc.AddInterfaceEndpoint(jsii.String("SqsEndpoint"), &awsec2.InterfaceVpcEndpointOptions{
		Service:           awsec2.InterfaceVpcEndpointAwsService_SQS(),
		Subnets:           net.isolated,
		SecurityGroups:    &[]awsec2.ISecurityGroup{sg},
		PrivateDnsEnabled: jsii.Bool(true),
		// Not CDK's default of HTTPS from the whole VPC: enter's group alone.
		Open: jsii.Bool(false),
	})
}
