package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/waitroom/waitroom"
)

// OrderRecordActions are all the gate may do to the order record's table:
// claim a token (PutItem), read the claim that came first (GetItem), keep
// an answer (UpdateItem), give a token back (DeleteItem); never a scan or
// a query, and to its own keys only (dynamodb:LeadingKeys).
var OrderRecordActions = []string{"dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}

// newOrderRecordTable is the durable record of consumed entry tokens
// (issue 33; docs/design.md, "The order record"): a DynamoDB table, on
// demand (idle it costs nothing but its storage), with point-in-time
// recovery and the token's expiry as TTL.
//
// RemovalPolicy DESTROY: an item matters only while its token lives
// (minutes), so a deleted stack has nothing in it worth keeping.
func newOrderRecordTable(stack awscdk.Stack) awsdynamodb.Table {
	return awsdynamodb.NewTable(stack, jsii.String("OrderRecord"), &awsdynamodb.TableProps{
		PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String("pk"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute: jsii.String(waitroom.OrderRecordTTLAttribute),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
}

// orderRecordStatement is the order gate's right to the table, in its
// role's inline policy: OrderRecordActions on items whose key starts
// token#; no other function has one.
func orderRecordStatement(table awsdynamodb.Table) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("OrderRecordOwnKeys"),
		Actions:   jsii.Strings(OrderRecordActions...),
		Resources: jsii.Strings(*table.TableArn()),
		Conditions: &map[string]any{"ForAllValues:StringLike": map[string]any{
			"dynamodb:LeadingKeys": []string{waitroom.OrderRecordKeyPrefix + "*"},
		}},
	})
}

// reachOrderRecord tells the gate the table's name and lets it reach
// DynamoDB through a gateway endpoint in its own subnets (free, no NAT),
// whose policy names this table alone.
func reachOrderRecord(net *network, table awsdynamodb.Table, gate awslambda.Function) {
	gate.AddEnvironment(jsii.String("ORDER_RECORD_TABLE"), table.TableName(), nil)
	endpoint := net.vpc.AddGatewayEndpoint(jsii.String("DynamoDbEndpoint"), &awsec2.GatewayVpcEndpointOptions{
		Service: awsec2.GatewayVpcEndpointAwsService_DYNAMODB(),
		Subnets: &[]*awsec2.SubnetSelection{net.gateSubnets},
	})
	endpoint.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("OrderRecordOnly"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings(OrderRecordActions...),
		Resources:  jsii.Strings(*table.TableArn()),
	}))
	// DynamoDB's addresses are a managed prefix list whose id CloudFormation
	// cannot look up offline; the gate subnets' routes bound this rule to
	// the endpoint, the order API and the VPC (docs/security.md).
	net.gateSG.AddEgressRule(awsec2.Peer_AnyIpv4(), awsec2.Port_Tcp(jsii.Number(443)), jsii.String("DynamoDB (the order record) through its gateway endpoint"), nil)
}
