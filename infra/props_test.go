package main

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

func TestValidation(t *testing.T) {
	bad := map[string]struct {
		mutate  func(*WaitroomProps)
		setting string
	}{
		"both identity sources": {func(p *WaitroomProps) { p.TrustUserHeaderFromProxy = true }, "exclusive"},
		"http issuer":           {func(p *WaitroomProps) { p.JwtIssuer = "http://auth.example.com/" }, "JwtIssuer"},
		"no audience":           {func(p *WaitroomProps) { p.JwtAudience = nil }, "JwtAudience"},
		"no order API":          {func(p *WaitroomProps) { p.OrderAPIURL = "" }, "orderApiUrl"},
		"order API not a URL":   {func(p *WaitroomProps) { p.OrderAPIURL = "orders" }, "OrderAPIURL"},
		"timeout over 30 s":     {func(p *WaitroomProps) { p.OrderTimeoutMs = 28000 }, "OrderTimeoutMs"},
		"cache mode":            {func(p *WaitroomProps) { p.CacheMode = "memcached" }, "CacheMode"},
		"name prefix":           {func(p *WaitroomProps) { p.NamePrefix = "Bad_Name" }, "NamePrefix"},
		"missing asset":         {func(p *WaitroomProps) { p.AssetDir = t.TempDir() }, "make build"},
		"admit reserve of 1":    {func(p *WaitroomProps) { p.AdmitReservedConcurrency = 1 }, "admitReservedConcurrency"},
		"storage limit":         {func(p *WaitroomProps) { p.CacheMaxStorageGB = 6000 }, "cacheMaxStorageGb"},
		"ECPU limit":            {func(p *WaitroomProps) { p.CacheMaxECPUPerSecond = 10 }, "cacheMaxEcpuPerSecond"},
		"snapshot retention":    {func(p *WaitroomProps) { p.CacheSnapshotRetentionDays = 40 }, "cacheSnapshotRetentionDays"},
		"snapshot time":         {func(p *WaitroomProps) { p.CacheSnapshotTime = "3am" }, "cacheSnapshotTime"},
		"proxy secret with JWT": {func(p *WaitroomProps) { p.ProxySecretSSMParameter = "/x" }, "proxySecretSsmParameter"},
	}
	for name, c := range bad {
		p := baseProps()
		c.mutate(&p)
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
		if _, err := NewWaitroomStack(app, "Waitroom", p); err == nil || !strings.Contains(err.Error(), c.setting) {
			t.Errorf("%s: %v, want an error naming %s", name, err, c.setting)
		}
	}
}

func TestConcurrency(t *testing.T) {
	s := def(t)
	if got := s.fnProps(t, FnAdmit)["ReservedConcurrentExecutions"]; got != float64(3) {
		t.Errorf("admit reserved concurrency = %v, want 3 (two overlapping runs and a manual kick)", got)
	}
	if got := s.fnProps(t, FnOrderGate)["ReservedConcurrentExecutions"]; got != float64(200) {
		t.Errorf("order gate cap = %v, want 200 (twice the admission rate)", got)
	}
	for _, fn := range []string{FnEnter, FnPosition} {
		if got := s.fnProps(t, fn)["ReservedConcurrentExecutions"]; got != nil {
			t.Errorf("%s reserves %v", fn, got)
		}
	}
	s = synthesize(t, func(p *WaitroomProps) { p.AdmitReservedConcurrency, p.OrderGateConcurrency = NoLimit, 50 })
	if got := s.fnProps(t, FnAdmit)["ReservedConcurrentExecutions"]; got != nil {
		t.Errorf("admit reserves %v with the reservation off", got)
	}
	if got := s.fnProps(t, FnOrderGate)["ReservedConcurrentExecutions"]; got != float64(50) {
		t.Errorf("order gate cap = %v, want 50", got)
	}
}

func mustProps(t *testing.T, ctx map[string]any) WaitroomProps {
	t.Helper()
	p, err := propsFromContext(mapContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPropsFromContext(t *testing.T) {
	p := mustProps(t, map[string]any{
		CtxJwtIssuer: testIssuer, CtxJwtAudience: "a, b", CtxAdmitRate: "17.5", CtxQueueCapacity: float64(5000),
		CtxOrderAPIURL: testOrderAPI, CtxCacheMode: "replication-group", CtxOrderGateEgress: "private",
		CtxOrderAPICidr: "10.1.0.0/16", CtxOrderAPIRoute: "pcx-0123456789abcdef0", CtxOrderAPIPrivateDNS: "true",
		CtxCorsOrigins: []any{"https://shop.example.com"}, CtxLogRetentionDays: "14", CtxTrustUserHeader: "false",
		CtxAdmitReserved: "0", CtxOrderGateCap: "40", CtxSnapshotRetention: "none", CtxBudget: "30", CtxPollTiers: "0:1000",
	})
	want := Egress{Mode: EgressPrivate, OrderAPICidr: "10.1.0.0/16", OrderAPIRouteTarget: "pcx-0123456789abcdef0", OrderAPIPrivateDNS: true}
	if p.JwtIssuer != testIssuer || js(p.JwtAudience) != `["a","b"]` || p.AdmitRatePerSec != 17.5 || p.QueueCapacity != 5000 ||
		p.CacheMode != CacheReplicationGroup || p.Egress != want || js(p.CorsAllowOrigins) != `["https://shop.example.com"]` ||
		p.AssetDir != "../build" || p.TrustUserHeaderFromProxy || p.AdmitReservedConcurrency != NoLimit || p.OrderGateConcurrency != 40 ||
		p.CacheSnapshotRetentionDays != NoLimit || p.BudgetMonthlyUSD != 30 || p.PollTiers != "0:1000" {
		t.Errorf("props = %+v", p)
	}
	if p := mustProps(t, map[string]any{CtxCorsOrigins: "none"}); !p.NoCors || p.CorsAllowOrigins != nil || p.NoInstantAdmit {
		t.Errorf("corsOrigins=none (instantAdmit by default): %+v", p)
	}
	if p := mustProps(t, map[string]any{CtxInstantAdmit: "false"}); !p.NoInstantAdmit {
		t.Errorf("instantAdmit=false: %+v", p)
	}
	for key, v := range map[string]string{CtxAdmitRate: "fast", CtxLogRetentionDays: "8", CtxQueueCapacity: "1e5", CtxOrderAPIPrivateDNS: "yes", CtxInstantAdmit: "maybe"} {
		if _, err := propsFromContext(mapContext{key: v}); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%s: %v, want an error naming it", key, v, err)
		}
	}
	if got := DefaultNamePrefix("Waitroom-Prod_EU"); got != "waitroom-prod-eu" {
		t.Errorf("DefaultNamePrefix = %q", got)
	}
	// Long ids are cut and keep a digest of the whole: distinct, valid.
	a, b := DefaultNamePrefix("Waitroom-BlackFriday-2026-Korea-Prod"), DefaultNamePrefix("Waitroom-BlackFriday-2026-Korea-Test")
	if a == b || !namePrefixRE.MatchString(a) || !namePrefixRE.MatchString(b) || !strings.HasPrefix(a, "waitroom-black") {
		t.Errorf("long ids: %q and %q", a, b)
	}
}
