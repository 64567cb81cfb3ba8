package main

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/jsii-runtime-go"

	"github.com/waitroom/waitroom"
)

// Subnet groups. The cache and every function but the gate live in
// "isolated" (no route out); the gate lives in its own group, so that
// nothing else shares its route out.
const (
	subnetIsolated = "isolated"
	subnetGate     = "gate"
	subnetPublic   = "public"
)

// network is the VPC and the security groups the functions run with.
type network struct {
	vpc      awsec2.Vpc
	isolated *awsec2.SubnetSelection
	// fnSG is the security group of enter, position, admit, admin and the
	// intake consumer: out to the cache only. gateSG is the order gate's:
	// the cache and the order API. enterSG exists with INTAKE=broker or
	// fallback only: enter's, the cache and the SQS endpoint (intake.go).
	fnSG, gateSG, enterSG awsec2.SecurityGroup
	gateSubnets           *awsec2.SubnetSelection
}

// securityGroups are the function security groups that exist.
func (n *network) securityGroups() []awsec2.SecurityGroup {
	sgs := []awsec2.SecurityGroup{n.fnSG, n.gateSG}
	if n.enterSG != nil {
		sgs = append(sgs, n.enterSG)
	}
	return sgs
}

// placement is where function fn runs in the VPC: its subnets and its
// security group.
func (n *network) placement(fn string) (*awsec2.SubnetSelection, awsec2.ISecurityGroup) {
	switch {
	case fn == FnOrderGate:
		return n.gateSubnets, n.gateSG
	case fn == FnEnter && n.enterSG != nil:
		return n.isolated, n.enterSG
	}
	return n.isolated, n.fnSG
}

// newNetwork builds the VPC for the chosen egress mode and the two
// function security groups; cache access is added by newFunctions.
func newNetwork(stack awscdk.Stack, p WaitroomProps) *network {
	n := &network{
		isolated:    &awsec2.SubnetSelection{SubnetGroupName: jsii.String(subnetIsolated)},
		gateSubnets: &awsec2.SubnetSelection{SubnetGroupName: jsii.String(subnetGate)},
	}
	n.vpc = awsec2.NewVpc(stack, jsii.String("Vpc"), vpcProps(p.Egress.Mode))
	n.fnSG = awsec2.NewSecurityGroup(stack, jsii.String("FunctionsSecurityGroup"), &awsec2.SecurityGroupProps{
		Vpc:              n.vpc,
		Description:      jsii.String("Waitroom enter, position, admit: out to the cache only"),
		AllowAllOutbound: jsii.Bool(false),
	})
	n.gateSG = awsec2.NewSecurityGroup(stack, jsii.String("OrderGateSecurityGroup"), &awsec2.SecurityGroupProps{
		Vpc:                  n.vpc,
		Description:          jsii.String(fmt.Sprintf("Waitroom order gate: out to the cache and the order API (%s)", p.Egress.Mode)),
		AllowAllOutbound:     jsii.Bool(false),
		AllowAllIpv6Outbound: jsii.Bool(false),
	})
	if p.Intake == waitroom.IntakeBroker || p.Intake == waitroom.IntakeFallback {
		// The description names the mode: a change of it replaces the group.
		n.enterSG = awsec2.NewSecurityGroup(stack, jsii.String("EnterSecurityGroup"), &awsec2.SecurityGroupProps{
			Vpc:              n.vpc,
			Description:      jsii.String(fmt.Sprintf("Waitroom enter (intake %s): out to the cache and the SQS endpoint", p.Intake)),
			AllowAllOutbound: jsii.Bool(false),
		})
	}
	port := awsec2.Port_Tcp(jsii.Number(float64(orderAPIPort(p.OrderAPIURL))))
	switch p.Egress.Mode {
	case EgressPrivate:
		n.gateSG.AddEgressRule(privatePeer(p.Egress), port, jsii.String("the private order API"), nil)
		addPrivateRoutes(stack, n, p.Egress)
	case EgressIPv6:
		n.gateSG.AddEgressRule(awsec2.Peer_AnyIpv6(), port, jsii.String("the order API over IPv6 (egress-only internet gateway)"), nil)
		addEgressOnlyRoutes(stack, n)
	case EgressNAT:
		n.gateSG.AddEgressRule(awsec2.Peer_AnyIpv4(), port, jsii.String("the order API through the NAT gateway"), nil)
	}
	return n
}

// vpcProps: two AZs; "isolated", and the "gate" group, routed (by
// newNetwork) to a peering connection or transit gateway for private, to an
// egress-only gateway for ipv6 (dual-stack), or by CDK to one NAT gateway in
// a "public" group for nat.
//
// CDK allocates the groups' ranges in order, so the public group (nat only)
// comes last: isolated and gate keep the same ranges in every mode
// (SubnetRanges). A subnet whose range changed would be replaced, and
// CloudFormation creates the replacement before it deletes the old one, so
// a range moving onto a neighbour's fails the update.
func vpcProps(mode EgressMode) *awsec2.VpcProps {
	subnets := []*awsec2.SubnetConfiguration{{
		Name: jsii.String(subnetIsolated), SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED, CidrMask: jsii.Number(22),
	}}
	gate := &awsec2.SubnetConfiguration{Name: jsii.String(subnetGate), SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED, CidrMask: jsii.Number(24)}
	subnets = append(subnets, gate)
	props := &awsec2.VpcProps{
		IpAddresses: awsec2.IpAddresses_Cidr(jsii.String(VpcCidr)),
		MaxAzs:      jsii.Number(2),
		NatGateways: jsii.Number(0),
		// Nothing runs in the default security group: empty it (CDK revokes
		// its rules with a custom resource at deploy; docs/security.md).
		RestrictDefaultSecurityGroup: jsii.Bool(true),
	}
	switch mode {
	case EgressIPv6:
		props.IpProtocol = awsec2.IpProtocol_DUAL_STACK
		props.Ipv6Addresses = awsec2.Ipv6Addresses_AmazonProvided()
	case EgressNAT:
		// One NAT gateway: the gate subnets of both AZs route to it.
		props.NatGateways = jsii.Number(1)
		gate.SubnetType = awsec2.SubnetType_PRIVATE_WITH_EGRESS
		subnets = append(subnets,
			&awsec2.SubnetConfiguration{Name: jsii.String(subnetPublic), SubnetType: awsec2.SubnetType_PUBLIC, CidrMask: jsii.Number(26)})
	}
	props.SubnetConfiguration = &subnets
	return props
}

// SubnetRanges are the subnets' ranges per group, one per AZ: the same in
// every egress mode (public exists in nat only).
var SubnetRanges = map[string][]string{
	subnetIsolated: {"10.40.0.0/22", "10.40.4.0/22"},
	subnetGate:     {"10.40.8.0/24", "10.40.9.0/24"},
	subnetPublic:   {"10.40.10.0/26", "10.40.10.64/26"},
}

// privatePeer is the private order API's range.
func privatePeer(e Egress) awsec2.IPeer {
	if e.OrderAPIPrefixList != "" {
		return awsec2.Peer_PrefixList(jsii.String(e.OrderAPIPrefixList))
	}
	return awsec2.Peer_Ipv4(jsii.String(e.OrderAPICidr))
}

// addPrivateRoutes routes the order API's range to the peering connection
// or transit gateway, from the gate's subnets (inside the VPC the local
// route already leads there).
func addPrivateRoutes(stack awscdk.Stack, n *network, e Egress) {
	if e.OrderAPIRouteTarget == "" {
		return
	}
	for i, s := range *n.vpc.SelectSubnets(n.gateSubnets).Subnets {
		props := &awsec2.CfnRouteProps{RouteTableId: s.RouteTable().RouteTableId()}
		if e.OrderAPIPrefixList != "" {
			props.DestinationPrefixListId = jsii.String(e.OrderAPIPrefixList)
		} else {
			props.DestinationCidrBlock = jsii.String(e.OrderAPICidr)
		}
		if e.OrderAPIRouteTarget[:4] == "pcx-" {
			props.VpcPeeringConnectionId = jsii.String(e.OrderAPIRouteTarget)
		} else {
			props.TransitGatewayId = jsii.String(e.OrderAPIRouteTarget)
		}
		awsec2.NewCfnRoute(stack, jsii.String(fmt.Sprintf("OrderApiRoute%d", i+1)), props)
	}
}

// addEgressOnlyRoutes: an egress-only internet gateway and a ::/0 route to
// it from the gate's subnets only (outbound IPv6; nothing can connect in).
func addEgressOnlyRoutes(stack awscdk.Stack, n *network) {
	eigw := awsec2.NewCfnEgressOnlyInternetGateway(stack, jsii.String("EgressOnlyInternetGateway"),
		&awsec2.CfnEgressOnlyInternetGatewayProps{VpcId: n.vpc.VpcId()})
	for i, s := range *n.vpc.SelectSubnets(n.gateSubnets).Subnets {
		awsec2.NewCfnRoute(stack, jsii.String(fmt.Sprintf("GateIpv6Route%d", i+1)), &awsec2.CfnRouteProps{
			RouteTableId:                s.RouteTable().RouteTableId(),
			DestinationIpv6CidrBlock:    jsii.String("::/0"),
			EgressOnlyInternetGatewayId: eigw.AttrId(),
		})
	}
}
