package main

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// documented is every configuration of configurations.json synthesized
// once, as `make templates` does, for the tests that compare or price them.
var documented struct {
	once  sync.Once
	confs []Configuration
	synth map[string]*synth
	dir   string // ConfigurationTemplate(dir, c) is c's template
	err   error
}

func documentedConfigurations(t *testing.T) ([]Configuration, map[string]*synth) {
	t.Helper()
	documented.once.Do(func() {
		d := &documented
		if d.confs, d.err = LoadConfigurations("configurations.json"); d.err != nil {
			return
		}
		if d.dir, d.err = os.MkdirTemp(outRoot, "configurations-"); d.err != nil {
			return
		}
		d.synth = map[string]*synth{}
		for _, c := range d.confs {
			w, err := synthConfiguration(c, d.dir, assetDir)
			if d.err = err; err != nil {
				return
			}
			s := &synth{w: w} // no assertions.Template: it would synthesize the stack again
			if d.err = readJSON(ConfigurationTemplate(d.dir, c), &s.json); d.err != nil {
				return
			}
			d.synth[c.Name] = s
		}
	})
	if documented.err != nil {
		t.Fatal(documented.err)
	}
	return documented.confs, documented.synth
}

func TestLoadConfigurations(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write("base.json", `{"jwtIssuer":"https://a/","orderGateEgress":"private","orderApiCidr":"10.40.0.0/16"}`)
	confs, err := LoadConfigurations(write("c.json", `{"base":"base.json","configurations":[
		{"name":"default","context":{}},
		{"name":"nat","context":{"orderGateEgress":"nat","orderApiCidr":null}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(confs) != 2 || confs[0].Context["orderApiCidr"] != "10.40.0.0/16" || confs[1].Context["orderGateEgress"] != "nat" {
		t.Fatalf("configurations %+v", confs)
	}
	if _, ok := confs[1].Context["orderApiCidr"]; ok || confs[1].Context["jwtIssuer"] != "https://a/" {
		t.Errorf("nat: null should remove a key and keep the base's others: %v", confs[1].Context)
	}
	for _, bad := range []string{`{"configurations":[{"name":"a"},{"name":"a"}]}`, `{"configurations":[{"name":"Bad Name"}]}`} {
		if _, err := LoadConfigurations(write("bad.json", bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// Each documented configuration builds what its name says: the file is what
// the linter, the update test and the cost documents rely on.
func TestDocumentedConfigurations(t *testing.T) {
	_, stacks := documentedConfigurations(t)
	has := map[string]string{
		"default":                 "AWS::ElastiCache::ServerlessCache",
		"private-peering":         "AWS::EC2::Route",
		"ipv6":                    "AWS::EC2::EgressOnlyInternetGateway",
		"nat":                     "AWS::EC2::NatGateway",
		"page":                    "AWS::CloudFront::Distribution",
		"broker":                  "AWS::SQS::Queue",
		"fallback":                "AWS::EC2::VPCEndpoint",
		"proxy-replication-group": "AWS::ElastiCache::ReplicationGroup",
	}
	for name, typ := range has {
		s, ok := stacks[name]
		if !ok {
			t.Errorf("no configuration %s in configurations.json", name)
			continue
		}
		if len(s.resources(typ)) == 0 {
			t.Errorf("configuration %s has no %s", name, typ)
		}
		if got := *s.w.Stack.StackName(); got != "Waitroom" {
			t.Errorf("configuration %s: stack name %s, want Waitroom (the stack it stands for)", name, got)
		}
	}
	if len(stacks) != len(has) {
		t.Errorf("%d configurations, this test knows %d: say what a new one builds", len(stacks), len(has))
	}
}
