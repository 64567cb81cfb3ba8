package main

import (
	"os"
	"sync"
	"testing"

	"github.com/waitroom/waitroom/infra/configs"
)

// documented is every configuration of configurations.json synthesized
// once, as `make templates` does, for the tests that compare or price them.
var documented struct {
	once  sync.Once
	confs []configs.Configuration
	synth map[string]*synth
	dir   string // c.Template(dir) is c's template
	err   error
}

func documentedConfigurations(t *testing.T) ([]configs.Configuration, map[string]*synth) {
	t.Helper()
	documented.once.Do(func() {
		d := &documented
		if d.confs, d.err = configs.Load("configurations.json"); d.err != nil {
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
			if d.err = configs.ReadJSON(c.Template(d.dir), &s.json); d.err != nil {
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
		"page-edge":               "AWS::WAFv2::WebACL",
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
