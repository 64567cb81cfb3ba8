package envconfig_test

import (
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/envconfig"
)

// DURABLE_WRITES: off by default, wait on request; anything else, and
// wait where no replica can be waited for (the embedded store, ElastiCache
// Serverless), stops the process naming the variable.
func TestDurableWritesVariable(t *testing.T) {
	for v, want := range map[string]waitroom.DurableWrites{"": waitroom.DurableOff, "off": waitroom.DurableOff, "wait": waitroom.DurableWait, "WAIT": waitroom.DurableWait} {
		c, err := envconfig.Load(env(map[string]string{"REDIS_URL": "redis://localhost:6379", "DURABLE_WRITES": v}), envconfig.Function)
		if err != nil || c.DurableWrites != want {
			t.Errorf("DURABLE_WRITES=%q: %q %v, want %q", v, c.DurableWrites, err, want)
		}
	}
	for name, kv := range map[string]map[string]string{
		"bad value":  {"REDIS_URL": "redis://localhost:6379", "DURABLE_WRITES": "sync"},
		"embedded":   {"DURABLE_WRITES": "wait"},
		"fail open":  {"REDIS_URL": "redis://localhost:6379", "DURABLE_WRITES": "wait", "ORDER_GATE_FAIL_OPEN": "true"},
		"serverless": {"REDIS_URL": "rediss://cache.example:6379", "REDIS_IAM_USER": "app", "REDIS_IAM_CACHE_NAME": "c", "DURABLE_WRITES": "wait"},
	} {
		d := envconfig.Function
		if name == "embedded" {
			d = envconfig.Local
		}
		if _, err := envconfig.Load(env(kv), d); err == nil || !strings.Contains(err.Error(), "DURABLE_WRITES") {
			t.Errorf("%s: error %v does not name DURABLE_WRITES", name, err)
		}
	}
	rg := map[string]string{"REDIS_URL": "rediss://cache.example:6379", "REDIS_IAM_USER": "app", "REDIS_IAM_CACHE_NAME": "rg-1",
		"REDIS_IAM_SERVERLESS": "false", "DURABLE_WRITES": "wait"}
	if c, err := envconfig.Load(env(rg), envconfig.Function); err != nil || c.DurableWrites != waitroom.DurableWait {
		t.Errorf("a node-based replication group takes wait: %q %v", c.DurableWrites, err)
	}
}
