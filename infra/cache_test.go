package main

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

func TestServerlessCacheIAMAuthLimitsAndSnapshots(t *testing.T) {
	s := def(t)
	s.tpl.ResourceCountIs(jsii.String("AWS::ElastiCache::ReplicationGroup"), jsii.Number(0))
	s.tpl.HasResourceProperties(jsii.String("AWS::ElastiCache::ServerlessCache"), map[string]any{
		"Engine":                 "valkey",
		"MajorEngineVersion":     "8",
		"ServerlessCacheName":    "waitroom",
		"UserGroupId":            map[string]any{"Ref": "CacheUserGroup"},
		"CacheUsageLimits":       map[string]any{"DataStorage": map[string]any{"Maximum": 2, "Unit": "GB"}, "ECPUPerSecond": map[string]any{"Maximum": 100000}},
		"SnapshotRetentionLimit": 7,
		"DailySnapshotTime":      "03:00",
	})
	users := s.resources("AWS::ElastiCache::User")
	gate := props(users["OrderGateCacheUser"]) // each function's: TestEveryFunctionHasItsOwnCacheUser
	if gate["UserName"] != "waitroom-gate" || gate["UserId"] != "waitroom-gate" || js(gate["AuthenticationMode"]) != `{"Type":"iam"}` {
		t.Errorf("order gate's user = %s, want IAM auth with user name = user id", js(gate))
	}
	dflt := props(users["CacheDefaultUser"])
	if dflt["UserName"] != "default" || dflt["AccessString"] != "off -@all" {
		t.Errorf("default user must have no access: %s", js(dflt))
	}
	// No password anywhere, and so no secret and no Secrets Manager endpoint
	// (the one endpoint is DynamoDB's gateway, the order record's).
	s.tpl.ResourceCountIs(jsii.String("AWS::SecretsManager::Secret"), jsii.Number(0))
	if e := s.interfaceEndpoints(); len(e) != 0 {
		t.Errorf("interface endpoints: %s", js(e))
	}
	if strings.Contains(js(s.json), "Passwords") || strings.Contains(js(s.json), "secretsmanager") {
		t.Error("the template still mentions passwords or Secrets Manager")
	}
}

func TestCacheLimitsAndSnapshotsFollowProps(t *testing.T) {
	s := synthesize(t, func(p *WaitroomProps) {
		p.CacheMaxStorageGB, p.CacheMaxECPUPerSecond = 10, 50000
		p.CacheSnapshotRetentionDays, p.CacheSnapshotTime = 14, "22:30"
	})
	s.tpl.HasResourceProperties(jsii.String("AWS::ElastiCache::ServerlessCache"), map[string]any{
		"CacheUsageLimits":       map[string]any{"DataStorage": map[string]any{"Maximum": 10, "Unit": "GB"}, "ECPUPerSecond": map[string]any{"Maximum": 50000}},
		"SnapshotRetentionLimit": 14,
		"DailySnapshotTime":      "22:30",
	})
	s = synthesize(t, func(p *WaitroomProps) { p.CacheSnapshotRetentionDays = NoLimit })
	sc := props(s.resources("AWS::ElastiCache::ServerlessCache")["Cache"])
	if sc["SnapshotRetentionLimit"] != nil || sc["DailySnapshotTime"] != nil {
		t.Errorf("snapshots off, yet %s", js(sc))
	}
}

func TestReplicationGroupIAMAndSnapshots(t *testing.T) {
	s := synthesize(t, func(p *WaitroomProps) {
		p.CacheMode, p.CacheNodeType, p.CacheSnapshotTime = CacheReplicationGroup, "cache.t4g.medium", "22:30"
	})
	s.tpl.HasResourceProperties(jsii.String("AWS::ElastiCache::ReplicationGroup"), map[string]any{
		"TransitEncryptionMode":      "required",
		"UserGroupIds":               []any{map[string]any{"Ref": "CacheUserGroup"}},
		"SnapshotRetentionLimit":     7,
		"SnapshotWindow":             "22:30-23:30",
		"PreferredMaintenanceWindow": "mon:00:30-mon:01:30",
	})
	vars := s.fnProps(t, FnEnter)["Environment"].(map[string]any)["Variables"].(map[string]any)
	if vars["REDIS_IAM_SERVERLESS"] != "false" || vars["REDIS_IAM_CACHE_NAME"] != "waitroom" || vars["REDIS_CLUSTER"] != "false" {
		t.Errorf("replication group env = %s", js(vars))
	}
	connect := js(s.statement(t, FnEnter, "ConnectToCacheWithIAM")["Resource"])
	if !strings.Contains(connect, ":replicationgroup:waitroom") {
		t.Errorf("connect resources = %s, want the replication group", connect)
	}
}

// statement is a function role's policy statement by Sid.
func (s *synth) statement(t *testing.T, fn, sid string) map[string]any {
	t.Helper()
	roleID := s.fnProps(t, fn)["Role"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
	for _, st := range asSlice(asSlice(props(s.resources("AWS::IAM::Role")[roleID])["Policies"])[0].(map[string]any)["PolicyDocument"].(map[string]any)["Statement"]) {
		if st.(map[string]any)["Sid"] == sid {
			return st.(map[string]any)
		}
	}
	t.Fatalf("%s role has no statement %s", fn, sid)
	return nil
}

func TestIAMLeastPrivilege(t *testing.T) {
	s := def(t)
	s.tpl.ResourceCountIs(jsii.String("AWS::IAM::Policy"), jsii.Number(0))
	roles := s.resources("AWS::IAM::Role")
	if len(roles) != len(Functions)+len(s.cdkProviders()) {
		t.Fatalf("%d roles, want one per function (and CDK's custom-resource functions)", len(roles))
	}
	for _, name := range Functions {
		roleID := s.fnProps(t, name)["Role"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
		rp := props(roles[roleID])
		if rp["ManagedPolicyArns"] != nil || !strings.Contains(js(rp["AssumeRolePolicyDocument"]), `"Service":"lambda.amazonaws.com"`) {
			t.Errorf("%s role = %s", name, js(rp))
		}
		logGroup := s.fnProps(t, name)["LoggingConfig"].(map[string]any)["LogGroup"].(map[string]any)["Ref"].(string)
		if st := s.statement(t, name, "WriteOwnLogs"); js(st["Resource"]) != getAttArn(logGroup) {
			t.Errorf("%s logs statement = %s", name, js(st))
		}
		connect := s.statement(t, name, "ConnectToCacheWithIAM")
		if connect["Action"] != "elasticache:Connect" ||
			js(connect["Resource"]) != js([]any{map[string]any{"Fn::GetAtt": []any{"Cache", "ARN"}}, map[string]any{"Fn::GetAtt": []any{logicalName(name) + "CacheUser", "Arn"}}}) {
			t.Errorf("%s connect statement = %s, want elasticache:Connect on the cache and its own user", name, js(connect))
		}
		for _, st := range asSlice(asSlice(rp["Policies"])[0].(map[string]any)["PolicyDocument"].(map[string]any)["Statement"]) {
			stm := st.(map[string]any)
			extra := name == FnOrderGate && stm["Sid"] == "OrderRecordOwnKeys" // orderrecord_test.go checks it
			if strings.Contains(js(stm["Action"]), "*") || !(extra || map[any]bool{"WriteOwnLogs": true, "VpcNetworkInterfaces": true, "ConnectToCacheWithIAM": true}[stm["Sid"]]) {
				t.Errorf("%s: unexpected statement %s", name, js(stm))
			}
		}
	}
	s.tpl.HasResourceProperties(jsii.String("AWS::ElastiCache::User"), map[string]any{"AuthenticationMode": assertions.Match_ObjectLike(&map[string]any{"Type": "iam"})})
}
