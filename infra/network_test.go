package main

import (
	"sort"
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"
)

// egressRule is one outbound rule of a security group, wherever the
// template writes it (inline or as AWS::EC2::SecurityGroupEgress).
type egressRule struct {
	to         string // CidrIp, CidrIpv6, DestinationPrefixListId or DestinationSecurityGroupId, as JSON
	from, last float64
}

// sgOf is a function's only security group (its logical id).
func (s *synth) sgOf(t *testing.T, fn string) string {
	t.Helper()
	ids := s.fnProps(t, fn)["VpcConfig"].(map[string]any)["SecurityGroupIds"].([]any)
	if len(ids) != 1 {
		t.Fatalf("%s has %d security groups, want 1", fn, len(ids))
	}
	return ids[0].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
}

func (s *synth) egress(sg string) []egressRule {
	var out []egressRule
	add := func(r map[string]any) {
		to := ""
		for _, k := range []string{"CidrIp", "CidrIpv6", "DestinationPrefixListId", "DestinationSecurityGroupId"} {
			if v, ok := r[k]; ok {
				to = js(v)
			}
		}
		from, _ := r["FromPort"].(float64)
		last, _ := r["ToPort"].(float64)
		out = append(out, egressRule{to, from, last})
	}
	if r, ok := s.resources("AWS::EC2::SecurityGroup")[sg]; ok {
		for _, e := range asSlice(props(r)["SecurityGroupEgress"]) {
			if e.(map[string]any)["CidrIp"] == "255.255.255.255/32" {
				continue // CDK's placeholder for "no egress"
			}
			add(e.(map[string]any))
		}
	}
	for _, r := range s.resources("AWS::EC2::SecurityGroupEgress") {
		if p := props(r); js(p["GroupId"]) == js(map[string]any{"Fn::GetAtt": []any{sg, "GroupId"}}) {
			add(p)
		}
	}
	return out
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

// routesOf lists the routes (as JSON) of the route tables of a function's subnets.
func (s *synth) routesOf(t *testing.T, fn string) []map[string]any {
	t.Helper()
	tables := map[string]bool{}
	for _, sub := range s.fnProps(t, fn)["VpcConfig"].(map[string]any)["SubnetIds"].([]any) {
		for _, a := range s.resources("AWS::EC2::SubnetRouteTableAssociation") {
			if js(props(a)["SubnetId"]) == js(sub) {
				tables[js(props(a)["RouteTableId"])] = true
			}
		}
	}
	var out []map[string]any
	for _, r := range s.resources("AWS::EC2::Route") {
		if tables[js(props(r)["RouteTableId"])] {
			out = append(out, props(r))
		}
	}
	return out
}

// checkCacheOnly: enter, position and admit reach the cache and nothing else,
// from subnets without a route out.
func checkCacheOnly(t *testing.T, s *synth) {
	t.Helper()
	cacheSG := js(map[string]any{"Fn::GetAtt": []any{onlyKey(t, s.resources("AWS::EC2::SecurityGroup"), "CacheSecurityGroup"), "GroupId"}})
	for _, fn := range []string{FnEnter, FnPosition, FnAdmit} {
		rules := s.egress(s.sgOf(t, fn))
		if len(rules) != 1 || rules[0] != (egressRule{cacheSG, cachePortLow, cachePortHigh}) {
			t.Errorf("%s egress = %+v, want only the cache SG on 6379-6380", fn, rules)
		}
		if r := s.routesOf(t, fn); len(r) != 0 {
			t.Errorf("%s subnets have routes out: %s", fn, js(r))
		}
		if s.fnProps(t, fn)["VpcConfig"].(map[string]any)["Ipv6AllowedForDualStack"] == true {
			t.Errorf("%s allows IPv6 out", fn)
		}
	}
	// The cache admits both function security groups, on its ports only.
	for _, r := range s.resources("AWS::EC2::SecurityGroupIngress") {
		if p := props(r); js(p["GroupId"]) == cacheSG && (p["FromPort"] != float64(cachePortLow) || p["ToPort"] != float64(cachePortHigh)) {
			t.Errorf("cache ingress = %s", js(p))
		}
	}
}

// dynamoRule is the gate's rule to DynamoDB (the order record), bounded by
// its subnets' routes to the gateway endpoint (infra/orderrecord.go).
var dynamoRule = egressRule{`"0.0.0.0/0"`, 443, 443}

// gateRule is the gate's rule to the order API (the one that is neither the
// cache nor DynamoDB's, unless it is the same: nat, on 443).
func gateRule(t *testing.T, s *synth) egressRule {
	t.Helper()
	var out []egressRule
	all := s.egress(s.sgOf(t, FnOrderGate))
	for _, r := range all {
		if !strings.Contains(r.to, "CacheSecurityGroup") && (r != dynamoRule || len(all) == 2) {
			out = append(out, r)
		}
	}
	if len(out) != 1 {
		t.Fatalf("order gate egress beyond the cache = %+v, want one rule", out)
	}
	return out[0]
}

func TestEgressPrivateSameVPC(t *testing.T) {
	s := def(t)
	checkCacheOnly(t, s)
	if r := gateRule(t, s); r != (egressRule{`"10.40.0.0/16"`, 443, 443}) {
		t.Errorf("gate rule = %+v, want 443 to the VPC", r)
	}
	if s.sgOf(t, FnOrderGate) == s.sgOf(t, FnEnter) {
		t.Error("the order gate shares the other functions' security group")
	}
	// Inside the VPC the local route leads there: no gateway at all, but
	// DynamoDB's endpoint (the order record).
	for _, typ := range []string{"AWS::EC2::NatGateway", "AWS::EC2::InternetGateway", "AWS::EC2::EgressOnlyInternetGateway", "AWS::EC2::Route"} {
		s.tpl.ResourceCountIs(jsii.String(typ), jsii.Number(0))
	}
	s.tpl.ResourceCountIs(jsii.String("AWS::EC2::VPCEndpoint"), jsii.Number(1))
}

func TestEgressPrivatePeeredWithPort(t *testing.T) {
	s := synthesize(t, func(p *WaitroomProps) {
		p.OrderAPIURL = "http://10.1.2.3:8080/api"
		p.Egress = Egress{Mode: EgressPrivate, OrderAPICidr: "10.1.0.0/16", OrderAPIRouteTarget: "pcx-0123456789abcdef0"}
	})
	checkCacheOnly(t, s)
	if r := gateRule(t, s); r != (egressRule{`"10.1.0.0/16"`, 8080, 8080}) {
		t.Errorf("gate rule = %+v, want 8080 to 10.1.0.0/16", r)
	}
	routes := s.routesOf(t, FnOrderGate)
	if len(routes) != 2 {
		t.Fatalf("gate routes = %s, want one per AZ", js(routes))
	}
	for _, r := range routes {
		if r["DestinationCidrBlock"] != "10.1.0.0/16" || r["VpcPeeringConnectionId"] != "pcx-0123456789abcdef0" {
			t.Errorf("gate route = %s", js(r))
		}
	}
}

func TestEgressIPv6(t *testing.T) {
	s := synthesize(t, func(p *WaitroomProps) {
		p.OrderAPIURL = "https://orders.example.com"
		p.Egress = Egress{Mode: EgressIPv6}
	})
	checkCacheOnly(t, s)
	if r := gateRule(t, s); r != (egressRule{`"::/0"`, 443, 443}) {
		t.Errorf("gate rule = %+v, want 443 to ::/0", r)
	}
	eigw := onlyKey(t, s.resources("AWS::EC2::EgressOnlyInternetGateway"), "")
	routes := s.routesOf(t, FnOrderGate)
	if len(routes) != 2 {
		t.Fatalf("gate routes = %s, want one per AZ", js(routes))
	}
	for _, r := range routes {
		if r["DestinationIpv6CidrBlock"] != "::/0" || !strings.Contains(js(r["EgressOnlyInternetGatewayId"]), eigw) {
			t.Errorf("gate route = %s, want ::/0 to the egress-only gateway", js(r))
		}
	}
	og := s.fnProps(t, FnOrderGate)["VpcConfig"].(map[string]any)
	if og["Ipv6AllowedForDualStack"] != true || !strings.Contains(js(og["SubnetIds"]), "gateSubnet") {
		t.Errorf("gate VpcConfig = %s, want dual-stack gate subnets", js(og))
	}
	s.tpl.ResourceCountIs(jsii.String("AWS::EC2::VPCCidrBlock"), jsii.Number(1))
	for _, typ := range []string{"AWS::EC2::NatGateway", "AWS::EC2::InternetGateway", "AWS::EC2::EIP"} {
		s.tpl.ResourceCountIs(jsii.String(typ), jsii.Number(0))
	}
}

func TestEgressNAT(t *testing.T) {
	s := synthesize(t, func(p *WaitroomProps) {
		p.OrderAPIURL = "https://203.0.113.10"
		p.Egress = Egress{Mode: EgressNAT}
	})
	checkCacheOnly(t, s)
	if r := gateRule(t, s); r != (egressRule{`"0.0.0.0/0"`, 443, 443}) {
		t.Errorf("gate rule = %+v, want 443 to 0.0.0.0/0", r)
	}
	nat := onlyKey(t, s.resources("AWS::EC2::NatGateway"), "")
	routes := s.routesOf(t, FnOrderGate)
	if len(routes) != 2 {
		t.Fatalf("gate routes = %s, want one per AZ", js(routes))
	}
	for _, r := range routes {
		if r["DestinationCidrBlock"] != "0.0.0.0/0" || js(r["NatGatewayId"]) != js(map[string]any{"Ref": nat}) {
			t.Errorf("gate route = %s, want 0.0.0.0/0 to the NAT gateway", js(r))
		}
	}
	if c := js(props(s.resources("AWS::ElastiCache::ServerlessCache")["Cache"])["SubnetIds"]); strings.Contains(c, "gate") || strings.Contains(c, "public") {
		t.Errorf("cache outside the isolated subnets: %s", c)
	}
}

func TestEgressRefusesWhatCannotWork(t *testing.T) {
	cases := map[string]struct {
		url     string
		egress  Egress
		setting string
	}{
		"no mode":                {testOrderAPI, Egress{}, "orderGateEgress"},
		"unknown mode":           {testOrderAPI, Egress{Mode: "none"}, "orderGateEgress"},
		"private, public IP":     {"https://203.0.113.10", Egress{Mode: EgressPrivate, OrderAPICidr: VpcCidr}, "orderApiCidr"},
		"private, public name":   {"https://orders.example.com", Egress{Mode: EgressPrivate, OrderAPICidr: VpcCidr}, "orderApiPrivateDns"},
		"private, no range":      {testOrderAPI, Egress{Mode: EgressPrivate}, "orderApiCidr"},
		"private, IP off range":  {"https://10.9.0.1", Egress{Mode: EgressPrivate, OrderAPICidr: VpcCidr}, "orderApiCidr"},
		"private, no route":      {testOrderAPI, Egress{Mode: EgressPrivate, OrderAPICidr: "10.1.0.0/16"}, "orderApiRouteTarget"},
		"private, public CIDR":   {testOrderAPI, Egress{Mode: EgressPrivate, OrderAPICidr: "8.8.8.0/24"}, "orderApiCidr"},
		"ipv6, private IP":       {"https://10.40.1.1", Egress{Mode: EgressIPv6}, "orderGateEgress=private"},
		"ipv6, private name":     {testOrderAPI, Egress{Mode: EgressIPv6}, "orderGateEgress=private"},
		"ipv6, IPv4 address":     {"https://203.0.113.10", Egress{Mode: EgressIPv6}, "orderGateEgress=nat"},
		"nat, private name":      {"https://internal-orders-1.eu-west-1.elb.amazonaws.com", Egress{Mode: EgressNAT}, "orderGateEgress=private"},
		"nat with a CIDR":        {"https://orders.example.com", Egress{Mode: EgressNAT, OrderAPICidr: VpcCidr}, "orderGateEgress=private"},
		"private, bad peering":   {testOrderAPI, Egress{Mode: EgressPrivate, OrderAPICidr: "10.1.0.0/16", OrderAPIRouteTarget: "igw-1234abcd"}, "orderApiRouteTarget"},
		"private, bad prefixlst": {testOrderAPI, Egress{Mode: EgressPrivate, OrderAPIPrefixList: "10.0.0.0/8"}, "orderApiPrefixList"},
	}
	for name, c := range cases {
		p := baseProps()
		p.OrderAPIURL, p.Egress = c.url, c.egress
		err := p.WithDefaults("Waitroom").Validate()
		if err == nil || !strings.Contains(err.Error(), c.setting) {
			t.Errorf("%s: %v, want an error naming %s", name, err, c.setting)
		}
	}
	// And what can work is accepted.
	for name, e := range map[string]Egress{
		"private DNS opt-in": {Mode: EgressPrivate, OrderAPICidr: VpcCidr, OrderAPIPrivateDNS: true},
		"prefix list":        {Mode: EgressPrivate, OrderAPIPrefixList: "pl-0123456789abcdef0", OrderAPIRouteTarget: "tgw-0123456789abcdef0", OrderAPIPrivateDNS: true},
		"ipv6":               {Mode: EgressIPv6},
		"nat":                {Mode: EgressNAT},
	} {
		p := baseProps()
		p.OrderAPIURL, p.Egress = "https://orders.example.com", e
		if err := p.WithDefaults("Waitroom").Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The subnets keep their ranges in every egress mode (SubnetRanges), so
// that changing orderGateEgress on a deployed stack replaces no subnet: the
// public subnets of nat come after the gate's instead of pushing them up.
func TestSubnetRangesInEveryMode(t *testing.T) {
	_, stacks := documentedConfigurations(t)
	for name, s := range stacks {
		got := map[string][]string{}
		for _, r := range s.resources("AWS::EC2::Subnet") {
			group := ""
			for _, tag := range props(r)["Tags"].([]any) {
				if tm := tag.(map[string]any); tm["Key"] == "aws-cdk:subnet-name" {
					group = tm["Value"].(string)
				}
			}
			got[group] = append(got[group], props(r)["CidrBlock"].(string))
		}
		want := map[string][]string{subnetIsolated: SubnetRanges[subnetIsolated], subnetGate: SubnetRanges[subnetGate]}
		if s.w.Props.Egress.Mode == EgressNAT {
			want[subnetPublic] = SubnetRanges[subnetPublic]
		}
		for _, g := range got {
			sort.Strings(g)
		}
		if js(got) != js(want) {
			t.Errorf("%s: subnets %v, want %v", name, got, want)
		}
	}
}

// The VPC's default security group allows all traffic between its members
// and all egress; nothing of the stack uses it, so it is emptied (CDK's
// custom resource revokes its rules at deploy) and anything later placed in
// it by mistake reaches nothing.
func TestDefaultSecurityGroupRestricted(t *testing.T) {
	_, stacks := documentedConfigurations(t)
	for name, s := range stacks {
		found := false
		for _, r := range s.resources("Custom::VpcRestrictDefaultSG") {
			found = strings.Contains(js(props(r)["DefaultSecurityGroupId"]), "DefaultSecurityGroup")
		}
		if !found {
			t.Errorf("%s: the VPC's default security group keeps its rules", name)
		}
	}
}
