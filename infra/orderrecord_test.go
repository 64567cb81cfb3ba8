package main

import (
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
)

// Issue 33: in every documented configuration the stack has the order
// record's table (on demand, point-in-time recovery, the token's expiry as
// TTL), the order gate alone is told its name and may use it, on its own
// keys only, and reaches it through a DynamoDB gateway endpoint in its own
// subnets whose policy names the table alone.
func TestOrderRecordTableAndItsPolicy(t *testing.T) {
	_, stacks := documentedConfigurations(t)
	stacks["default"] = def(t)
	for name, s := range stacks {
		tables := s.resources("AWS::DynamoDB::Table")
		id := onlyKey(t, tables, "OrderRecord")
		tp := props(tables[id])
		if tp["BillingMode"] != "PAY_PER_REQUEST" || js(tp["PointInTimeRecoverySpecification"]) != `{"PointInTimeRecoveryEnabled":true}` ||
			js(tp["TimeToLiveSpecification"]) != js(map[string]any{"AttributeName": waitroom.OrderRecordTTLAttribute, "Enabled": true}) {
			t.Errorf("%s: table %s", name, js(tp))
		}
		if tables[id]["DeletionPolicy"] != "Delete" {
			t.Errorf("%s: the table's DeletionPolicy %v, want Delete (its items matter for a token's life)", name, tables[id]["DeletionPolicy"])
		}
		for _, fn := range s.w.Props.FunctionNames() {
			v, told := s.env(t, fn)["ORDER_RECORD_TABLE"]
			if told != (fn == FnOrderGate) || (told && js(v) != js(map[string]any{"Ref": id})) {
				t.Errorf("%s: %s told ORDER_RECORD_TABLE=%v", name, fn, js(v))
			}
			checkOrderRecordRights(t, name, s, fn, id)
		}
		checkDynamoEndpoint(t, name, s, id)
	}
}

// checkOrderRecordRights: the gate's one DynamoDB statement is
// OrderRecordActions on the table, for keys starting token#; the other
// functions have none.
func checkOrderRecordRights(t *testing.T, name string, s *synth, fn, table string) {
	t.Helper()
	role := js(s.fnProps(t, fn)["Role"])
	var found []any
	for id, r := range s.resources("AWS::IAM::Role") {
		if getAttArn(id) != role {
			continue
		}
		for _, pol := range asSlice(props(r)["Policies"]) {
			for _, st := range asSlice(pol.(map[string]any)["PolicyDocument"].(map[string]any)["Statement"]) {
				if strings.Contains(js(st), "dynamodb:") {
					found = append(found, st)
				}
			}
		}
	}
	for _, pol := range s.resources("AWS::IAM::Policy") { // none may grant it elsewhere
		if strings.Contains(js(pol), "dynamodb:") && strings.Contains(js(props(pol)["Roles"]), strings.Trim(strings.Split(role, ",")[0], `{"Fn::GetAtt":[`)) {
			found = append(found, pol)
		}
	}
	if fn != FnOrderGate {
		if len(found) != 0 {
			t.Errorf("%s: %s may use DynamoDB: %s", name, fn, js(found))
		}
		return
	}
	want := js(map[string]any{
		"Action":    OrderRecordActions,
		"Condition": map[string]any{"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": []string{waitroom.OrderRecordKeyPrefix + "*"}}},
		"Effect":    "Allow", "Resource": getAttArn(table), "Sid": "OrderRecordOwnKeys",
	})
	want = strings.Replace(want, `"Resource":"{\"Fn::GetAtt\":[\"`+table+`\",\"Arn\"]}"`, `"Resource":`+getAttArn(table), 1)
	if len(found) != 1 || js(found[0]) != want {
		t.Errorf("%s: the gate's DynamoDB statements %s, want only %s", name, js(found), want)
	}
}

// checkDynamoEndpoint: one gateway endpoint, DynamoDB's, routed from the
// gate's subnets alone, its policy the table's actions.
func checkDynamoEndpoint(t *testing.T, name string, s *synth, table string) {
	t.Helper()
	var gateways []map[string]any
	for _, r := range s.resources("AWS::EC2::VPCEndpoint") {
		if p := props(r); p["VpcEndpointType"] == "Gateway" {
			gateways = append(gateways, p)
		}
	}
	if len(gateways) != 1 || !strings.Contains(js(gateways[0]["ServiceName"]), ".dynamodb") {
		t.Fatalf("%s: gateway endpoints %s, want DynamoDB's", name, js(gateways))
	}
	p := gateways[0]
	if n := len(asSlice(p["RouteTableIds"])); n != 2 || !strings.Contains(js(p["RouteTableIds"]), "Vpcgate") {
		t.Errorf("%s: the endpoint is routed from %s, want the 2 gate subnets alone", name, js(p["RouteTableIds"]))
	}
	if pol := js(p["PolicyDocument"]); !strings.Contains(pol, getAttArn(table)[1:len(getAttArn(table))-1]) || strings.Contains(pol, "dynamodb:*") {
		t.Errorf("%s: endpoint policy %s", name, pol)
	}
}

// interfaceEndpoints are the stack's interface VPC endpoints (SQS's with
// a broker), not DynamoDB's gateway endpoint.
func (s *synth) interfaceEndpoints() map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range s.resources("AWS::EC2::VPCEndpoint") {
		if props(r)["VpcEndpointType"] == "Interface" {
			out[id] = r
		}
	}
	return out
}
