package envconfig_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/entrytoken"
	"github.com/waitroom/waitroom/envconfig"
)

func env(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

func TestConfigDefaults(t *testing.T) {
	c, err := envconfig.Load(env(map[string]string{"REDIS_URL": "redis://localhost:6379"}), envconfig.Function)
	if err != nil {
		t.Fatal(err)
	}
	want := waitroom.Config{RedisURL: "redis://localhost:6379", AdmitRatePerSec: 100, AdmitInterval: 100 * time.Millisecond,
		AdmitBatches: 10, EntryTokenTTL: 300 * time.Second, QueueCapacity: 100_000, OrderTimeout: 10 * time.Second, Addr: "127.0.0.1:8080",
		PollTiers: waitroom.PollTiers{{MinWaitSeconds: 0, PollMs: 60000}},
		Visitor: waitroom.VisitorConfig{TicketTTL: waitroom.DefaultTicketTTLSeconds * time.Second, TicketMaxAge: waitroom.DefaultTicketMaxAgeSeconds * time.Second,
			Challenge: waitroom.ChallengeOff, ChallengeBits: waitroom.DefaultChallengeBits}, Intake: waitroom.DefaultIntake,
		Trust: waitroom.TrustConfig{EntryTokens: entrytoken.Keys{Issuer: waitroom.DefaultEntryTokenIssuer}, Limits: waitroom.Limits{
			ClientRatePerSec: waitroom.DefaultClientRatePerSec, ClientBurst: waitroom.DefaultClientBurst,
			IPRatePerSec: waitroom.DefaultIPRatePerSec, IPBurst: waitroom.DefaultIPBurst,
			VisitorRatePerSec: waitroom.DefaultVisitorRatePerSec, VisitorBurst: waitroom.DefaultVisitorBurst},
			Streams: waitroom.StreamCaps{PerIP: waitroom.DefaultStreamsPerIP, Max: waitroom.DefaultMaxStreams}},
		DurableWrites: waitroom.DefaultDurableWrites, InstantAdmit: true}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("defaults:\n got %+v\nwant %+v", c, want)
	}
	if c.BatchSize() != 10 {
		t.Fatalf("batch %v", c.BatchSize())
	}
	local, err := envconfig.Load(env(nil), envconfig.Local)
	if err != nil || !local.TrustUserHeader || local.RedisURL != "" {
		t.Fatalf("local defaults: %+v %v", local, err)
	}
}

func TestConfigErrorsNameTheVariable(t *testing.T) {
	cases := map[string]map[string]string{
		"REDIS_URL":               {},
		"ADMIT_RATE_PER_SEC":      {"ADMIT_RATE_PER_SEC": "-1"},
		"ADMIT_INTERVAL_MS":       {"ADMIT_INTERVAL_MS": "abc"},
		"ADMIT_BATCHES":           {"ADMIT_BATCHES": "0"},
		"ENTRY_TOKEN_TTL_SECONDS": {"ENTRY_TOKEN_TTL_SECONDS": "1.5"},
		"QUEUE_CAPACITY":          {"QUEUE_CAPACITY": "0"},
		"ORDER_TIMEOUT_MS":        {"ORDER_TIMEOUT_MS": "x"},
		"TRUST_USER_HEADER":       {"TRUST_USER_HEADER": "maybe"},
		"ORDER_API_URL":           {"ORDER_API_URL": "ftp://x"},
		"ADDR":                    {"ADDR": "8080"},
		"STREAMS_PER_IP":          {"STREAMS_PER_IP": "-1"},
		"MAX_STREAMS":             {"MAX_STREAMS": "0"},
	}
	for name, kv := range cases {
		if name != "REDIS_URL" {
			kv["REDIS_URL"] = "redis://localhost:6379"
		}
		_, err := envconfig.Load(env(kv), envconfig.Function)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: error %v does not name it", name, err)
		}
	}
	if _, err := envconfig.Load(env(map[string]string{"REDIS_URL": "http://x"}), envconfig.Function); err == nil {
		t.Error("REDIS_URL must be redis:// or rediss://")
	}
}

// The stream caps: STREAMS_PER_IP 0 turns the per-address cap off, MAX_STREAMS
// always caps; both at most a million; anything else names the variable.
func TestStreamCapsVariables(t *testing.T) {
	for _, tc := range []struct {
		perIP, max string
		want       waitroom.StreamCaps
	}{
		{"", "", waitroom.StreamCaps{PerIP: 10, Max: 10_000}},
		{"0", "1", waitroom.StreamCaps{PerIP: 0, Max: 1}},
		{" 3 ", "1000000", waitroom.StreamCaps{PerIP: 3, Max: 1_000_000}},
		{"1000000", "25", waitroom.StreamCaps{PerIP: 1_000_000, Max: 25}},
	} {
		c, err := envconfig.Load(env(map[string]string{"STREAMS_PER_IP": tc.perIP, "MAX_STREAMS": tc.max}), envconfig.Local)
		if err != nil || c.Trust.Streams != tc.want {
			t.Errorf("STREAMS_PER_IP=%q MAX_STREAMS=%q: %+v %v, want %+v", tc.perIP, tc.max, c.Trust.Streams, err, tc.want)
		}
	}
	for name, bad := range map[string][]string{
		"STREAMS_PER_IP": {"-1", "1000001", "ten", "2.5", "1e3"},
		"MAX_STREAMS":    {"0", "-5", "1000001", "many", "0x10"},
	} {
		for _, v := range bad {
			_, err := envconfig.Load(env(map[string]string{name: v}), envconfig.Local)
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s=%q: err %v, want one naming %s", name, v, err, name)
			}
		}
	}
}

func TestPollTiersVariable(t *testing.T) {
	vars := map[string]string{"POLL_TIERS": "0:3000, 300:30000 ,45:8000"}
	c, err := envconfig.Load(env(vars), envconfig.Local)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.PollTiers.String(); got != "300:30000,45:8000,0:3000" {
		t.Fatalf("tiers %s", got)
	}
	for wait, base := range map[int64]int64{0: 3000, 44: 3000, 45: 8000, 299: 8000, 300: 30000, 9999: 30000} {
		if got := c.PollTiers.Ms(wait, 0.5); got != base {
			t.Errorf("wait %d s: %d ms, want %d", wait, got, base)
		}
	}
	for _, bad := range []string{"60:10000", "0:50", "0:2000,0:3000", "x:1", "0:2000,60", "0:5000,60:2000", "-1:2000,0:2000"} {
		vars["POLL_TIERS"] = bad
		if _, err := envconfig.Load(env(vars), envconfig.Local); err == nil || !strings.Contains(err.Error(), "POLL_TIERS") {
			t.Errorf("POLL_TIERS=%q: err %v", bad, err)
		}
	}
}

func TestRedisIAMVariables(t *testing.T) {
	base := func(kv map[string]string) map[string]string {
		out := map[string]string{"REDIS_URL": "rediss://cache.example:6379"}
		for k, v := range kv {
			out[k] = v
		}
		return out
	}
	c, err := envconfig.Load(env(base(map[string]string{"REDIS_IAM_USER": "waitroom-app", "REDIS_IAM_CACHE_NAME": "waitroom-cache"})), envconfig.Function)
	if want := (waitroom.RedisIAM{User: "waitroom-app", CacheName: "waitroom-cache", Serverless: true}); err != nil || c.RedisIAM != want || !c.RedisIAM.Enabled() {
		t.Fatalf("IAM on: %+v %v, want %+v", c.RedisIAM, err, want)
	}
	c, err = envconfig.Load(env(base(map[string]string{"REDIS_IAM_USER": "app", "REDIS_IAM_CACHE_NAME": "rg-1", "REDIS_IAM_SERVERLESS": "false"})), envconfig.Function)
	if err != nil || c.RedisIAM.Serverless {
		t.Fatalf("replication group: %+v %v", c.RedisIAM, err)
	}
	if c, err = envconfig.Load(env(base(nil)), envconfig.Function); err != nil || c.RedisIAM.Enabled() || c.RedisIAM != (waitroom.RedisIAM{}) {
		t.Fatalf("IAM off: %+v %v", c.RedisIAM, err)
	}
	for name, kv := range map[string]map[string]string{
		"REDIS_IAM_CACHE_NAME": {"REDIS_IAM_USER": "app"},
		"REDIS_IAM_SERVERLESS": {"REDIS_IAM_SERVERLESS": "true"},
		"REDIS_IAM_USER":       {"REDIS_IAM_USER": "1app", "REDIS_IAM_CACHE_NAME": "c"},
		"REDIS_URL":            {"REDIS_IAM_USER": "app", "REDIS_IAM_CACHE_NAME": "c", "REDIS_URL": "redis://cache.example:6379"},
	} {
		if _, err := envconfig.Load(env(base(kv)), envconfig.Function); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%v: error %v does not name %s", kv, err, name)
		}
	}
	for _, bad := range []map[string]string{
		{"REDIS_IAM_USER": "app", "REDIS_IAM_CACHE_NAME": "Upper"},
		{"REDIS_IAM_USER": "app", "REDIS_IAM_CACHE_NAME": "two--hyphens"},
		{"REDIS_IAM_USER": "app", "REDIS_IAM_CACHE_NAME": "ends-"},
		{"REDIS_IAM_USER": "app", "REDIS_IAM_CACHE_NAME": strings.Repeat("c", 41)},
		{"REDIS_IAM_CACHE_NAME": "c"},
		{"REDIS_IAM_USER": "a&b", "REDIS_IAM_CACHE_NAME": "c"},
		{"REDIS_IAM_USER": "app", "REDIS_IAM_CACHE_NAME": "c", "REDIS_IAM_SERVERLESS": "yes please"},
		{"REDIS_IAM_USER": "app", "REDIS_IAM_CACHE_NAME": "c", "REDIS_URL": "rediss://app:pw@cache.example:6379"},
	} {
		if _, err := envconfig.Load(env(base(bad)), envconfig.Function); err == nil || !strings.Contains(err.Error(), "REDIS_") {
			t.Errorf("%v accepted (%v)", bad, err)
		}
	}
}

func TestProxySecretVariable(t *testing.T) {
	const secret = "s3cret-from-the-proxy-0123456789"
	vars := map[string]string{"REDIS_URL": "redis://x:6379", "TRUST_USER_HEADER": "true", "PROXY_SECRET": secret}
	c, err := envconfig.Load(env(vars), envconfig.Function)
	if err != nil || string(c.ProxySecret) != secret {
		t.Fatalf("%v %v", c.ProxySecret == secret, err)
	}
	// However the configuration is printed or logged, the secret is not.
	var logged strings.Builder
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "config", c, "secret", c.ProxySecret)
	js, _ := json.Marshal(c)
	for _, out := range []string{fmt.Sprint(c), fmt.Sprintf("%+v %#v %s %q %x", c, c, c.ProxySecret, c.ProxySecret, c.ProxySecret), logged.String(), string(js)} {
		if strings.Contains(out, secret) || strings.Contains(out, fmt.Sprintf("%x", secret)) {
			t.Errorf("the secret is printed: %s", out)
		}
	}
	for _, bad := range []map[string]string{
		{"TRUST_USER_HEADER": "false", "PROXY_SECRET": secret}, // it would guard nothing
		{"TRUST_USER_HEADER": "true", "PROXY_SECRET": "short"},
		{"TRUST_USER_HEADER": "true", "PROXY_SECRET": "has a space in it, long enough"},
		{"TRUST_USER_HEADER": "true", "PROXY_SECRET": strings.Repeat("x", 513)},
	} {
		bad["REDIS_URL"] = "redis://x:6379"
		_, err := envconfig.Load(env(bad), envconfig.Function)
		if err == nil || !strings.Contains(err.Error(), "PROXY_SECRET") || strings.Contains(err.Error(), bad["PROXY_SECRET"]) {
			t.Errorf("PROXY_SECRET %d characters, TRUST_USER_HEADER=%s: err %v", len(bad["PROXY_SECRET"]), bad["TRUST_USER_HEADER"], err)
		}
	}
}

// Issue 19: X-User-Id is believed only behind the proxy secret, or from a
// local runner that listens on loopback only (where only this machine can
// send it); anything else refuses to start and names the variable.
func TestUserHeaderNeedsASecretOrLoopback(t *testing.T) {
	const secret = "s3cret-from-the-proxy-0123456789"
	ok := []struct {
		d  envconfig.Defaults
		kv map[string]string
	}{
		{envconfig.Local, map[string]string{}},
		{envconfig.Local, map[string]string{"ADDR": "localhost:8080"}},
		{envconfig.Local, map[string]string{"ADDR": "[::1]:8080"}},
		{envconfig.Local, map[string]string{"ADDR": "127.0.0.2:8080"}},
		{envconfig.Local, map[string]string{"ADDR": "0.0.0.0:8080", "PROXY_SECRET": secret}},
		{envconfig.Local, map[string]string{"ADDR": "0.0.0.0:8080", "TRUST_USER_HEADER": "false"}},
		{envconfig.Function, map[string]string{"REDIS_URL": "redis://x:6379", "TRUST_USER_HEADER": "true", "PROXY_SECRET": secret}},
	}
	for _, c := range ok {
		if _, err := envconfig.Load(env(c.kv), c.d); err != nil {
			t.Errorf("%v: %v", c.kv, err)
		}
	}
	refused := []struct {
		d  envconfig.Defaults
		kv map[string]string
	}{
		{envconfig.Local, map[string]string{"ADDR": "0.0.0.0:8080"}},
		{envconfig.Local, map[string]string{"ADDR": ":8080"}},
		{envconfig.Local, map[string]string{"ADDR": "192.0.2.10:8080"}},
		{envconfig.Function, map[string]string{"REDIS_URL": "redis://x:6379", "TRUST_USER_HEADER": "true"}},
	}
	for _, c := range refused {
		_, err := envconfig.Load(env(c.kv), c.d)
		if err == nil || !strings.Contains(err.Error(), "TRUST_USER_HEADER") || !strings.Contains(err.Error(), "PROXY_SECRET") {
			t.Errorf("%v: %v, want a refusal naming TRUST_USER_HEADER and PROXY_SECRET", c.kv, err)
		}
	}
}

func TestOrderRoomsVariable(t *testing.T) {
	c, err := envconfig.Load(env(map[string]string{"ORDER_ROOMS": "tv, tv-launch"}), envconfig.Local)
	if err != nil || !reflect.DeepEqual(c.OrderRooms, []string{"tv", "tv-launch"}) {
		t.Fatalf("%v %v", c.OrderRooms, err)
	}
	if sells, decided := c.OrderRoomSells("cheap"); sells || !decided {
		t.Errorf("ORDER_ROOMS=tv,tv-launch and room cheap: sells %v, decided %v", sells, decided)
	}
	// Issue 32: unset, only rooms an operator created sell (the store
	// decides); * is every room, the old default, now only when asked.
	unset, err := envconfig.Load(env(nil), envconfig.Local)
	if sells, decided := unset.OrderRoomSells("tv"); err != nil || sells || decided {
		t.Errorf("ORDER_ROOMS unset: sells %v, decided %v (%v); want the store to decide", sells, decided, err)
	}
	any, err := envconfig.Load(env(map[string]string{"ORDER_ROOMS": " * "}), envconfig.Local)
	if sells, decided := any.OrderRoomSells("cheap"); err != nil || !sells || !decided {
		t.Errorf("ORDER_ROOMS=*: sells %v, decided %v (%v)", sells, decided, err)
	}
	for _, bad := range []string{"TV", "tv,no way", "-x", "tv,*", "*,*"} {
		if _, err := envconfig.Load(env(map[string]string{"ORDER_ROOMS": bad}), envconfig.Local); err == nil || !strings.Contains(err.Error(), "ORDER_ROOMS") {
			t.Errorf("ORDER_ROOMS=%q: %v", bad, err)
		}
	}
	if _, err := envconfig.Load(env(map[string]string{"ORDER_FORWARD_HEADERS": "X-Waitroom-Room"}), envconfig.Local); err == nil {
		t.Error("the gate's own X-Waitroom-Room must not be forwarded from the caller")
	}
}

func TestOriginSecretVariable(t *testing.T) {
	const secret = "an-origin-secret-of-the-stack-0123"
	c, err := envconfig.Load(env(map[string]string{"ORIGIN_SECRET": secret}), envconfig.Local)
	if err != nil || string(c.OriginSecret) != secret || fmt.Sprint(c.OriginSecret) == secret {
		t.Fatalf("%v %v", c.OriginSecret == secret, err)
	}
	if _, err := envconfig.Load(env(map[string]string{"ORIGIN_SECRET": "short"}), envconfig.Local); err == nil || !strings.Contains(err.Error(), "ORIGIN_SECRET") || strings.Contains(err.Error(), "short") {
		t.Fatalf("a short ORIGIN_SECRET: %v", err)
	}
}

// ENTRY_TOKEN_KEYS signs and verifies; ENTRY_TOKEN_PUBLIC_KEYS (the seeds'
// public keys) only verifies: the order gate takes it, a process that signs
// (enter, position, the local runner) refuses it, and never both at once.
// Each refusal names the variable and never quotes a key.
func TestEntryTokenKeyVariables(t *testing.T) {
	seed, err := entrytoken.GenerateSeed()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := entrytoken.ParseKeys(seed, "https://queue.example")
	if err != nil {
		t.Fatal(err)
	}
	public := signer.PublicKeys()
	load := func(d envconfig.Defaults, kv map[string]string) (waitroom.Config, error) {
		kv["REDIS_URL"], kv["ORDER_API_URL"], kv["ENTRY_TOKEN_ISSUER"] = "redis://localhost:6379", "https://orders.example", "https://queue.example"
		return envconfig.Load(env(kv), d)
	}
	gate, err := load(envconfig.OrderGate, map[string]string{"ENTRY_TOKEN_PUBLIC_KEYS": public})
	if err != nil || !gate.Trust.EntryTokens.Enabled() || gate.Trust.EntryTokens.CanSign() {
		t.Fatalf("the gate with public keys: %+v %v", gate.Trust.EntryTokens, err)
	}
	token, err := signer.Sign(entrytoken.Claims{Subject: "u", Room: "tv", ID: "AAAAAAAAAAAAAAAAAAAAAA", ExpiresAt: time.Now().Add(time.Minute).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gate.Trust.EntryTokens.Verify(token, time.Now()); err != nil {
		t.Errorf("the gate does not verify a token its seed signed: %v", err)
	}
	if pos, err := load(envconfig.Signing, map[string]string{"ENTRY_TOKEN_KEYS": seed}); err != nil || !pos.Trust.EntryTokens.CanSign() {
		t.Errorf("position with the seed: %v", err)
	}
	for name, c := range map[string]struct {
		d       envconfig.Defaults
		kv      map[string]string
		naming  string
		leakKey string
	}{
		"a signer with public keys":  {envconfig.Signing, map[string]string{"ENTRY_TOKEN_PUBLIC_KEYS": public}, "ENTRY_TOKEN_PUBLIC_KEYS", public},
		"the local runner likewise":  {envconfig.Local, map[string]string{"ENTRY_TOKEN_PUBLIC_KEYS": public}, "ENTRY_TOKEN_PUBLIC_KEYS", public},
		"both at once":               {envconfig.OrderGate, map[string]string{"ENTRY_TOKEN_KEYS": seed, "ENTRY_TOKEN_PUBLIC_KEYS": public}, "ENTRY_TOKEN_PUBLIC_KEYS", seed},
		"a public key of 31 bytes":   {envconfig.OrderGate, map[string]string{"ENTRY_TOKEN_PUBLIC_KEYS": public[:40]}, "ENTRY_TOKEN_PUBLIC_KEYS", public[:40]},
		"a seed that is not base64":  {envconfig.Signing, map[string]string{"ENTRY_TOKEN_KEYS": seed + "!"}, "ENTRY_TOKEN_KEYS", seed},
		"three public keys, not two": {envconfig.OrderGate, map[string]string{"ENTRY_TOKEN_PUBLIC_KEYS": public + "," + public + "," + public}, "ENTRY_TOKEN_PUBLIC_KEYS", public},
	} {
		_, err := load(c.d, c.kv)
		if err == nil || !strings.Contains(err.Error(), c.naming) || strings.Contains(err.Error(), c.leakKey) {
			t.Errorf("%s: %v, want an error naming %s and quoting no key", name, err, c.naming)
		}
	}
}

// PAGE_IMAGE_ORIGINS: https origins only, lower-cased; anything else is
// refused by name.
func TestPageImageOrigins(t *testing.T) {
	c, err := envconfig.Load(env(map[string]string{"PAGE_IMAGE_ORIGINS": "https://IMG.example, https://cdn.example:8443"}), envconfig.Local)
	if err != nil || strings.Join(c.PageImageOrigins, " ") != "https://img.example https://cdn.example:8443" {
		t.Fatalf("%v %v", c.PageImageOrigins, err)
	}
	for _, bad := range []string{"http://img.example", "https://img.example/logos", "img.example", "https://", "https://u@img.example"} {
		if _, err := envconfig.Load(env(map[string]string{"PAGE_IMAGE_ORIGINS": bad}), envconfig.Local); err == nil || !strings.Contains(err.Error(), "PAGE_IMAGE_ORIGINS") {
			t.Errorf("PAGE_IMAGE_ORIGINS=%q: %v", bad, err)
		}
	}
	s := waitroom.Settings{Page: waitroom.Page{LogoURL: "https://img.example/logo.svg"}}
	if err := s.CheckLogoOrigin(c.PageImageOrigins); err != nil {
		t.Error(err)
	}
	if err := s.CheckLogoOrigin(nil); err == nil || !strings.Contains(err.Error(), "logoUrl") {
		t.Errorf("no origins allowed: %v", err)
	}
}
func TestLoadRoomsAndAdmin(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	c, err := envconfig.Load(env(map[string]string{"REDIS_URL": "redis://h:6379"}), envconfig.Function)
	if err != nil || c.OpenRooms || c.AdminToken != "" {
		t.Fatalf("functions: closed rooms by default: %+v %v", c, err)
	}
	if c, err = envconfig.Load(env(nil), envconfig.Local); err != nil || !c.OpenRooms {
		t.Fatalf("local runner: open rooms by default: %+v %v", c, err)
	}
	_, err = envconfig.Load(env(map[string]string{"ADMIN_TOKEN": "short-secret"}), envconfig.Local)
	if err == nil || !strings.Contains(err.Error(), "ADMIN_TOKEN must be 16 to 512") || strings.Contains(err.Error(), "short-secret") {
		t.Fatalf("a short ADMIN_TOKEN: %v", err)
	}
}
