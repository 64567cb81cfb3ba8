package main

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"testing"
)

// createOnly lists, for every resource type the stack synthesizes, the
// properties whose change makes CloudFormation replace the resource: the
// createOnlyProperties of AWS's resource provider schemas (as bundled with
// cfn-lint 1.51; a/b is b inside a). A type missing here fails the test.
var createOnly = map[string][]string{
	"AWS::ApiGatewayV2::Api":                 {"ProtocolType"},
	"AWS::ApiGatewayV2::ApiMapping":          {"DomainName"},
	"AWS::ApiGatewayV2::DomainName":          {"DomainName"},
	"AWS::ApiGatewayV2::Authorizer":          {"ApiId"},
	"AWS::ApiGatewayV2::Integration":         {"ApiId"},
	"AWS::ApiGatewayV2::Route":               {"ApiId"},
	"AWS::ApiGatewayV2::Stage":               {"StageName", "ApiId"},
	"AWS::Budgets::Budget":                   {"NotificationsWithSubscribers"},
	"AWS::CloudFront::CachePolicy":           {},
	"AWS::CloudFront::Distribution":          {},
	"AWS::CloudFront::OriginAccessControl":   {},
	"AWS::CloudFront::OriginRequestPolicy":   {},
	"AWS::CloudFront::ResponseHeadersPolicy": {},
	"AWS::CloudWatch::Alarm":                 {"AlarmName"},
	"AWS::CloudWatch::Dashboard":             {"DashboardName"},
	"AWS::EC2::EIP":                          {"NetworkBorderGroup", "TransferAddress", "IpamPoolId", "Address"},
	"AWS::EC2::EgressOnlyInternetGateway":    {"VpcId"},
	"AWS::EC2::InternetGateway":              {},
	"AWS::EC2::NatGateway":                   {"VpcId", "SubnetId", "ConnectivityType", "AllocationId", "PrivateIpAddress", "AvailabilityMode"},
	"AWS::EC2::Route":                        {"RouteTableId", "DestinationCidrBlock", "DestinationIpv6CidrBlock", "DestinationPrefixListId"},
	"AWS::EC2::RouteTable":                   {"VpcId"},
	"AWS::EC2::SecurityGroup":                {"GroupDescription", "GroupName", "VpcId"},
	"AWS::EC2::SecurityGroupEgress": {"IpProtocol", "DestinationSecurityGroupId", "ToPort", "CidrIp", "FromPort", "GroupId",
		"CidrIpv6", "DestinationPrefixListId"},
	"AWS::EC2::SecurityGroupIngress": {"GroupName", "IpProtocol", "SourceSecurityGroupId", "SourcePrefixListId", "ToPort", "CidrIp",
		"SourceSecurityGroupName", "SourceSecurityGroupOwnerId", "FromPort", "GroupId", "CidrIpv6"},
	"AWS::EC2::Subnet": {"VpcId", "AvailabilityZone", "AvailabilityZoneId", "CidrBlock", "OutpostArn", "Ipv6Native",
		"Ipv4IpamPoolId", "Ipv4NetmaskLength", "Ipv6IpamPoolId", "Ipv6NetmaskLength"},
	"AWS::EC2::SubnetRouteTableAssociation": {"SubnetId", "RouteTableId"},
	"AWS::EC2::VPC":                         {"CidrBlock", "Ipv4IpamPoolId", "Ipv4NetmaskLength"},
	"AWS::EC2::VPCCidrBlock": {"Ipv6Pool", "VpcId", "AmazonProvidedIpv6CidrBlock", "Ipv6CidrBlock", "CidrBlock", "Ipv4IpamPoolId",
		"Ipv4NetmaskLength", "Ipv6IpamPoolId", "Ipv6NetmaskLength", "Ipv6CidrBlockNetworkBorderGroup"},
	"AWS::EC2::VPCEndpoint": {"ServiceName", "VpcEndpointType", "VpcId", "ServiceNetworkArn", "ResourceConfigurationArn", "ServiceRegion",
		"DnsOptions/PrivateDnsPreference", "DnsOptions/PrivateDnsSpecifiedDomains"},
	"AWS::EC2::VPCGatewayAttachment": {"VpcId"},
	"AWS::ElastiCache::ReplicationGroup": {"AtRestEncryptionEnabled", "CacheSubnetGroupName", "DataTieringEnabled", "GlobalReplicationGroupId",
		"KmsKeyId", "NetworkType", "Port", "PreferredCacheClusterAZs", "ReplicasPerNodeGroup", "ReplicationGroupId", "SnapshotArns", "SnapshotName"},
	"AWS::ElastiCache::ServerlessCache": {"ServerlessCacheName", "KmsKeyId", "SnapshotArnsToRestore", "SubnetIds"},
	"AWS::ElastiCache::SubnetGroup":     {"CacheSubnetGroupName"},
	"AWS::ElastiCache::User":            {"UserId", "UserName"},
	"AWS::ElastiCache::UserGroup":       {"UserGroupId"},
	"AWS::Events::Rule":                 {"Name"},
	"AWS::IAM::ManagedPolicy":           {"ManagedPolicyName", "Description", "Path"},
	"AWS::IAM::Policy":                  {},
	"AWS::IAM::Role":                    {"Path", "RoleName"},
	"AWS::KMS::Key":                     {},
	"AWS::Lambda::EventInvokeConfig":    {"FunctionName", "Qualifier"},
	"AWS::Lambda::EventSourceMapping":   {"EventSourceArn", "StartingPosition", "StartingPositionTimestamp", "SelfManagedEventSource"},
	"AWS::Lambda::Function":             {"FunctionName", "PackageType", "TenancyConfig"},
	"AWS::Lambda::LayerVersion":         {"CompatibleRuntimes", "LicenseInfo", "CompatibleArchitectures", "LayerName", "Description", "Content"},
	"AWS::Lambda::Permission": {"FunctionName", "FunctionUrlAuthType", "InvokedViaFunctionUrl", "SourceAccount", "SourceArn", "Principal",
		"PrincipalOrgID", "Action", "EventSourceToken"},
	"AWS::Logs::LogGroup":          {"LogGroupName"},
	"AWS::Logs::MetricFilter":      {"FilterName", "LogGroupName"},
	"AWS::S3::Bucket":              {"BucketName", "BucketNamePrefix", "BucketNamespace"},
	"AWS::S3::BucketPolicy":        {"Bucket"},
	"AWS::SNS::Subscription":       {"Endpoint", "Protocol", "TopicArn"},
	"AWS::SNS::Topic":              {"TopicName", "FifoTopic"},
	"AWS::SNS::TopicPolicy":        {},
	"AWS::SQS::Queue":              {"FifoQueue", "QueueName"},
	"AWS::DynamoDB::Table":         {"TableName", "ImportSourceSpecification"},
	"AWS::SQS::QueuePolicy":        {},
	"AWS::WAFv2::WebACL":           {"Name", "Scope"},
	"Custom::CDKBucketDeployment":  {},
	"Custom::S3AutoDeleteObjects":  {},
	"Custom::VpcRestrictDefaultSG": {},
}

// unique lists what a new resource of a type must not share with one that
// exists while it is created: CloudFormation creates a replacement (or a
// resource new in the template) before it deletes the old ones, so two
// subnets with overlapping ranges, or two caches with one name, exist
// together for a moment, and the second is refused.
var unique = map[string][]uniqueKey{
	"AWS::EC2::Subnet":                      {{scope: []string{"VpcId"}, value: "CidrBlock"}},
	"AWS::EC2::Route":                       {{scope: []string{"RouteTableId", "DestinationCidrBlock", "DestinationIpv6CidrBlock", "DestinationPrefixListId"}}},
	"AWS::EC2::SubnetRouteTableAssociation": {{value: "SubnetId"}},
	"AWS::EC2::VPCGatewayAttachment":        {{value: "VpcId"}},
	"AWS::EC2::SecurityGroup":               {{scope: []string{"VpcId"}, value: "GroupName"}},
	"AWS::EC2::SecurityGroupIngress":        {{scope: createOnly["AWS::EC2::SecurityGroupIngress"]}},
	"AWS::EC2::SecurityGroupEgress":         {{scope: createOnly["AWS::EC2::SecurityGroupEgress"]}},
	"AWS::EC2::VPCEndpoint":                 {{scope: []string{"VpcId"}, value: "ServiceName"}},
	"AWS::ApiGatewayV2::Stage":              {{scope: []string{"ApiId"}, value: "StageName"}},
	"AWS::ApiGatewayV2::DomainName":         {{value: "DomainName"}},
	"AWS::ApiGatewayV2::ApiMapping":         {{scope: []string{"DomainName", "ApiMappingKey"}}},
	"AWS::Budgets::Budget":                  {{value: "Budget/BudgetName"}},
	"AWS::CloudWatch::Alarm":                {{value: "AlarmName"}},
	"AWS::CloudWatch::Dashboard":            {{value: "DashboardName"}},
	"AWS::ElastiCache::ServerlessCache":     {{value: "ServerlessCacheName"}},
	"AWS::ElastiCache::ReplicationGroup":    {{value: "ReplicationGroupId"}},
	"AWS::ElastiCache::SubnetGroup":         {{value: "CacheSubnetGroupName"}},
	"AWS::ElastiCache::User":                {{value: "UserId"}},
	"AWS::ElastiCache::UserGroup":           {{value: "UserGroupId"}},
	"AWS::Lambda::EventSourceMapping":       {{scope: []string{"FunctionName"}, value: "EventSourceArn"}},
	"AWS::Lambda::Function":                 {{value: "FunctionName"}},
	"AWS::Logs::LogGroup":                   {{value: "LogGroupName"}},
	"AWS::S3::Bucket":                       {{value: "BucketName"}},
	"AWS::SNS::Topic":                       {{value: "TopicName"}},
	"AWS::SQS::Queue":                       {{value: "QueueName"}},
	"AWS::DynamoDB::Table":                  {{value: "TableName"}},
	"AWS::Events::Rule":                     {{value: "Name"}},
	"AWS::IAM::Role":                        {{value: "RoleName"}},
	"AWS::IAM::ManagedPolicy":               {{value: "ManagedPolicyName"}},
}

// uniqueKey: value must differ (a CidrBlock: not overlap) among resources
// with equal scope properties. An unset value never collides (AWS generates
// those names); no value means the scope itself must differ (two equal
// security group rules are a duplicate).
type uniqueKey struct {
	scope []string
	value string
}

func (k uniqueKey) String() string {
	if k.value == "" {
		return strings.Join(k.scope, "+")
	}
	return k.value
}

// collide reports whether a and b would clash under k.
func (k uniqueKey) collide(a, b map[string]any) bool {
	for _, p := range k.scope {
		if prop(a, p) != prop(b, p) {
			return false
		}
	}
	if k.value == "" {
		return true
	}
	va, vb := prop(a, k.value), prop(b, k.value)
	if va == "" || vb == "" {
		return false
	}
	if strings.HasSuffix(k.value, "CidrBlock") {
		return overlap(va, vb)
	}
	return va == vb
}

func (k uniqueKey) of(r map[string]any) string {
	if k.value == "" {
		return "an equal rule"
	}
	return prop(r, k.value)
}

// prop is a (nested, a/b) property of a resource as JSON, "" when unset.
func prop(r map[string]any, path string) string {
	var v any = props(r)
	for _, part := range strings.Split(path, "/") {
		m, _ := v.(map[string]any)
		v = m[part]
	}
	if v == nil {
		return ""
	}
	return js(v)
}

// updateProblems are the reasons an update from template a to template b
// would fail: a resource changing type under its logical id, or one that b
// creates (new, or replaced because a create-only property changed)
// colliding with one of a's, which still exist while it is created.
func updateProblems(a, b map[string]any) []string {
	var problems []string
	ra, rb := a["Resources"].(map[string]any), b["Resources"].(map[string]any)
	for _, id := range sortedKeys(rb) {
		newR := rb[id].(map[string]any)
		typ := newR["Type"].(string)
		only, known := createOnly[typ]
		if !known {
			problems = append(problems, fmt.Sprintf("%s: type %s is not in createOnly (add its create-only properties from its CloudFormation schema)", id, typ))
			continue
		}
		if old, ok := ra[id].(map[string]any); ok {
			if old["Type"] != typ {
				problems = append(problems, fmt.Sprintf("%s: changes type %s → %s (CloudFormation cannot)", id, old["Type"], typ))
				continue
			}
			if !replaced(old, newR, only) {
				continue
			}
		}
		for _, key := range unique[typ] {
			for _, oldID := range sortedKeys(ra) {
				old := ra[oldID].(map[string]any)
				if old["Type"] == typ && key.collide(old, newR) {
					problems = append(problems, fmt.Sprintf("%s (%s) is created with %s %s while %s exists with %s",
						id, typ, key, key.of(newR), oldID, key.of(old)))
				}
			}
		}
	}
	return problems
}

// replaced: a create-only property differs.
func replaced(old, newR map[string]any, only []string) bool {
	for _, p := range only {
		if prop(old, p) != prop(newR, p) {
			return true
		}
	}
	return false
}

func overlap(a, b string) bool {
	var sa, sb string
	if json.Unmarshal([]byte(a), &sa) != nil || json.Unmarshal([]byte(b), &sb) != nil {
		return a == b && a != ""
	}
	pa, errA := netip.ParsePrefix(sa)
	pb, errB := netip.ParsePrefix(sb)
	if errA != nil || errB != nil {
		return sa == sb
	}
	return pa.Overlaps(pb)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Every documented configuration can be changed into every other on a
// deployed stack ("to change a setting, deploy again"): CloudFormation
// replaces a resource whose create-only property changes, creating the new
// one before deleting the old, so nothing the update creates may collide
// with what the stack holds (first of all: the subnets keep their ranges
// in every egress mode). The one exception is cacheMode, documented: the
// cache changes type, which CloudFormation refuses (and the line would be
// lost anyway).
func TestUpdateInPlaceBetweenConfigurations(t *testing.T) {
	confs, stacks := documentedConfigurations(t)
	for _, a := range confs {
		for _, b := range confs {
			if a.Name == b.Name {
				continue
			}
			for _, p := range updateProblems(stacks[a.Name].json, stacks[b.Name].json) {
				if a.Context[CtxCacheMode] != b.Context[CtxCacheMode] && strings.HasPrefix(p, "Cache: changes type ") {
					continue
				}
				t.Errorf("%s → %s: %s", a.Name, b.Name, p)
			}
		}
	}
}

// The checker itself: subnets that overlap after a move, a renamed name
// kept under a replacement, a type change; and nothing for an update that
// only changes what can change in place.
func TestUpdateProblems(t *testing.T) {
	tpl := func(resources map[string]any) map[string]any { return map[string]any{"Resources": resources} }
	subnet := func(cidr string) map[string]any {
		return map[string]any{"Type": "AWS::EC2::Subnet", "Properties": map[string]any{"VpcId": map[string]any{"Ref": "Vpc"}, "CidrBlock": cidr}}
	}
	cache := func(name, subnet string) map[string]any {
		return map[string]any{"Type": "AWS::ElastiCache::ServerlessCache", "Properties": map[string]any{"ServerlessCacheName": name, "SubnetIds": []any{subnet}}}
	}
	old := tpl(map[string]any{"Gate1": subnet("10.40.8.0/24"), "Gate2": subnet("10.40.9.0/24"), "Cache": cache("wr", "a")})
	cases := map[string]struct {
		to   map[string]any
		want int
	}{
		"unchanged":         {old, 0},
		"gate moved up one": {tpl(map[string]any{"Gate1": subnet("10.40.9.0/24"), "Gate2": subnet("10.40.10.0/24"), "Cache": cache("wr", "a")}), 1},
		"public inserted":   {tpl(map[string]any{"Public1": subnet("10.40.8.0/26"), "Gate1": subnet("10.40.8.0/24"), "Gate2": subnet("10.40.9.0/24"), "Cache": cache("wr", "a")}), 1},
		"fresh ranges":      {tpl(map[string]any{"Gate1": subnet("10.40.12.0/24"), "Gate2": subnet("10.40.13.0/24"), "Cache": cache("wr", "a")}), 0},
		"cache replaced":    {tpl(map[string]any{"Gate1": subnet("10.40.8.0/24"), "Gate2": subnet("10.40.9.0/24"), "Cache": cache("wr", "b")}), 1},
		"cache renamed":     {tpl(map[string]any{"Gate1": subnet("10.40.8.0/24"), "Gate2": subnet("10.40.9.0/24"), "Cache": cache("wr2", "b")}), 0},
		"type change": {tpl(map[string]any{"Gate1": subnet("10.40.8.0/24"), "Gate2": subnet("10.40.9.0/24"),
			"Cache": map[string]any{"Type": "AWS::ElastiCache::ReplicationGroup"}}), 1},
	}
	for name, c := range cases {
		if got := updateProblems(old, c.to); len(got) != c.want {
			t.Errorf("%s: %d problems %v, want %d", name, len(got), got, c.want)
		}
	}
}
