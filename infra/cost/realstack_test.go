package cost

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// IdleBudgetUSD is what the deployed stack may cost a month with nobody
// visiting (issue 9: the Valkey storage minimum, about $6.11, is the floor).
const IdleBudgetUSD = 12.0

// synthesizeStack runs the infra app (`go run .` in infra/, what `make
// synth` runs) into a temporary directory, with a dummy bootstrap per
// function so that no `make build` is needed. The stack is package main,
// which a test of this package cannot import, hence the process.
func synthesizeStack(t *testing.T, extra map[string]any) string {
	t.Helper()
	assets, out := t.TempDir(), t.TempDir()
	fns, err := os.ReadDir(filepath.Join("..", "..", "functions")) // one bootstrap per functions/<name>
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fns {
		fn := f.Name()
		if err := os.MkdirAll(filepath.Join(assets, fn), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(assets, fn, "bootstrap"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The example context of `make synth`, with the dummy assets.
	raw, err := os.ReadFile(filepath.Join("..", "example-context.json"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := map[string]any{}
	if err := json.Unmarshal(raw, &ctx); err != nil {
		t.Fatal(err)
	}
	ctx["assetDir"] = assets
	for k, v := range extra {
		ctx[k] = v
	}
	ctxJSON, err := json.Marshal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "run", ".")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(),
		"CDK_OUTDIR="+out,
		"JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20",
		"CDK_CONTEXT_JSON="+string(ctxJSON))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("synthesizing the stack: %v\n%s", err, stderr.String())
	}
	return filepath.Join(out, "Waitroom.template.json")
}

// TestRealStackIdleBudget prices the stack as `make synth` builds it with
// its defaults and fails when idle costs more than IdleBudgetUSD a month.
func TestRealStackIdleBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("synthesizes the stack (about 30 s)")
	}
	r := priceStack(t, nil, "the default stack")
	if r.RequestsPerVisitor < 3 {
		t.Errorf("%d requests a visitor: enter, at least one poll and an order make 3", r.RequestsPerVisitor)
	}
	if r.IdleMonthlyUSD > IdleBudgetUSD {
		t.Errorf("idle costs $%.2f a month, over the $%.2f budget (line items above)", r.IdleMonthlyUSD, IdleBudgetUSD)
	}
}

// With anonymous visitors the stack also serves the waiting page through
// CloudFront: no idle cost worth a cent, and every API request is billed
// by CloudFront as well.
func TestRealStackWithThePage(t *testing.T) {
	if testing.Short() {
		t.Skip("synthesizes the stack (about 30 s)")
	}
	def := priceStack(t, nil, "the default stack")
	r := priceStack(t, map[string]any{"jwtIssuer": nil, "jwtAudience": nil, "anonymousVisitors": "true",
		"ticketSecretSsmParameter": "/waitroom/ticket-secret"}, "the stack with the waiting page")
	if r.IdleMonthlyUSD > IdleBudgetUSD || r.IdleMonthlyUSD-def.IdleMonthlyUSD > 0.01 {
		t.Errorf("idle with the page $%.4f a month, without $%.4f: the page should add under a cent", r.IdleMonthlyUSD, def.IdleMonthlyUSD)
	}
	var cloudFront float64
	for _, it := range r.PerMillion {
		if strings.HasPrefix(it.Name, "CloudFront") {
			cloudFront += it.USD
		}
	}
	if want := float64(Visitors*r.RequestsPerVisitor) * USEast1.CloudFrontHTTPSRequest.USD; cloudFront < want {
		t.Errorf("CloudFront per million visitors $%.2f, less than its requests alone ($%.2f)", cloudFront, want)
	}
}

// priceStack synthesizes the stack with extra context and prices it.
func priceStack(t *testing.T, extra map[string]any, name string) Report {
	t.Helper()
	inv, err := ReadTemplate(synthesizeStack(t, extra))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Measure(inv, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Estimate(inv, m, USEast1, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := r.Print(&out, USEast1, m, name); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	return r
}

// The intake modes on the real stack: broker adds the queue's idle polling
// and two alarm metrics (the dead letters, the consumer's throttles), and
// prices SQS per visitor; fallback adds the SQS interface endpoint.
func TestRealStackIntake(t *testing.T) {
	if testing.Short() {
		t.Skip("synthesizes the stack three times (about 90 s)")
	}
	def := priceStack(t, nil, "the default stack")
	const key = "/waitroom/ticket-secret"
	broker := priceStack(t, map[string]any{"intake": "broker", "ticketSecretSsmParameter": key}, "INTAKE=broker")
	if extra := broker.IdleMonthlyUSD - def.IdleMonthlyUSD; extra < 0.3 || extra > 1 {
		t.Errorf("broker adds $%.4f a month idle, want the polling and two alarm metrics (about $0.53)", extra)
	}
	if _, ok := itemsNamed(broker.PerMillion, "SQS requests (intake)"); !ok {
		t.Error("broker: no SQS requests per visitor")
	}
	fallback := priceStack(t, map[string]any{"intake": "fallback", "ticketSecretSsmParameter": key}, "INTAKE=fallback")
	if usd, ok := itemsNamed(fallback.Idle, "VPC interface endpoint sqs"); !ok || !near(usd, 2*730*0.01) {
		t.Errorf("fallback: SQS endpoint $%v (found %v), want $14.60", usd, ok)
	}
	// The same line items as direct: compared to the cent, as the report rounds.
	if math.Abs(fallback.PerMillionUSD-def.PerMillionUSD) > 0.01 {
		t.Errorf("fallback per million $%.4f, direct $%.4f: the broker is priced only for an outage's enters", fallback.PerMillionUSD, def.PerMillionUSD)
	}
}
