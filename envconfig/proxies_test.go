package envconfig_test

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/envconfig"
)

// TRUSTED_PROXIES (issue 32): CIDRs or single addresses, masked; a value
// that is not one, a /0 (any client could name its own address), or the
// variable with ORIGIN_SECRET refuses to start with a message naming it.
func TestTrustedProxiesVariable(t *testing.T) {
	c, err := envconfig.Load(env(map[string]string{"TRUSTED_PROXIES": " 10.1.2.3/8, 127.0.0.1 ,fd00::/8,::1"}), envconfig.Local)
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32"),
		netip.MustParsePrefix("fd00::/8"), netip.MustParsePrefix("::1/128")}
	if err != nil || !reflect.DeepEqual(c.TrustedProxies, want) {
		t.Fatalf("%v %v", c.TrustedProxies, err)
	}
	if c, err := envconfig.Load(env(nil), envconfig.Local); err != nil || c.TrustedProxies != nil {
		t.Fatalf("unset: %v %v", c.TrustedProxies, err)
	}
	for _, bad := range []string{"nginx", "10.0.0.0/33", "10.0.0.0/8,x", "0.0.0.0/0", "::/0", "fe80::1%eth0", "10.0.0.0/8;10.1.0.0/16"} {
		_, err := envconfig.Load(env(map[string]string{"TRUSTED_PROXIES": bad}), envconfig.Local)
		if err == nil || !strings.Contains(err.Error(), "TRUSTED_PROXIES") {
			t.Errorf("TRUSTED_PROXIES=%q: %v", bad, err)
		}
	}
	_, err = envconfig.Load(env(map[string]string{"TRUSTED_PROXIES": "10.0.0.0/8", "ORIGIN_SECRET": "an-origin-secret-of-the-stack-0123"}), envconfig.Local)
	if err == nil || !strings.Contains(err.Error(), "TRUSTED_PROXIES") {
		t.Errorf("with ORIGIN_SECRET: %v", err)
	}
}
