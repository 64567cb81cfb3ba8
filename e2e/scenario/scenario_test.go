package scenario_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/awslambda"
	"github.com/waitroom/waitroom/e2e/gateway"
	"github.com/waitroom/waitroom/e2e/scenario"
	"github.com/waitroom/waitroom/envconfig"
	"github.com/waitroom/waitroom/httpapi"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/orderapi"
	"github.com/waitroom/waitroom/redisstore"
)

// inProcess hosts the functions' handlers in the test process, decoding
// payloads the way aws-lambda-go does, and serializes invocations per
// function as one Lambda execution environment (and the emulator) does.
// It is the quick self-test of the scenario and the gateway under -race;
// `make e2e` runs the same scenario against the real binaries.
type inProcess struct {
	mu  map[string]*sync.Mutex
	fns map[string]func(context.Context, json.RawMessage) (any, error)
}

func (p *inProcess) Invoke(ctx context.Context, fn string, payload []byte) (gateway.Result, error) {
	h, ok := p.fns[fn]
	if !ok {
		return gateway.Result{}, fmt.Errorf("no function %q", fn)
	}
	p.mu[fn].Lock()
	defer p.mu[fn].Unlock()
	var raw json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(payload)).Decode(&raw); err != nil {
		return functionError(err)
	}
	out, err := h(ctx, raw)
	if err != nil {
		return functionError(err)
	}
	b, err := json.Marshal(out)
	return gateway.Result{Payload: b}, err
}

func functionError(err error) (gateway.Result, error) {
	b, _ := json.Marshal(map[string]string{"errorMessage": err.Error(), "errorType": fmt.Sprintf("%T", err)})
	return gateway.Result{Payload: b, FunctionError: "Unhandled"}, nil
}

func newInProcess(t *testing.T, env map[string]string) *inProcess {
	cfg, err := envconfig.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, envconfig.Function)
	if err != nil {
		t.Fatal(err)
	}
	rdb, err := redisstore.NewClient(cfg, redisstore.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	store := redisstore.New(rdb, cfg)
	api := &httpapi.API{Config: cfg, Queue: store, Orders: orderapi.New(cfg.OrderAPIURL, cfg.OrderTimeout)}
	admit := awslambda.AdmitFunction(&waitroom.Admitter{Queue: store, Interval: cfg.AdmitInterval, Batches: cfg.AdmitBatches}, nil)
	http := func(h httpapi.Handler) func(context.Context, json.RawMessage) (any, error) {
		f := awslambda.HTTPFunction(h)
		return func(ctx context.Context, raw json.RawMessage) (any, error) { return f(ctx, raw) }
	}
	p := &inProcess{mu: map[string]*sync.Mutex{}, fns: map[string]func(context.Context, json.RawMessage) (any, error){
		gateway.Enter:     http(api.Enter),
		gateway.Position:  http(api.WithJWKS(api.WithLine(api.Position))), // as functions/position/main.go
		gateway.OrderGate: http(api.Order),
		gateway.Admit:     func(ctx context.Context, raw json.RawMessage) (any, error) { return admit(ctx, raw) },
	}}
	for fn := range p.fns {
		p.mu[fn] = &sync.Mutex{}
	}
	return p
}

// TestScenarioInProcess runs the scenario against the handlers in-process,
// with a faster admission so that it takes a few seconds.
func TestScenarioInProcess(t *testing.T) {
	srv := redistest.Start(t)
	down := scenario.StartDownstream(t, "127.0.0.1:0", "")
	cfg := scenario.Config{Crowd: 150, RatePerSec: 100, IntervalMs: 50, Batches: 4, TokenTTLSeconds: 60, Clients: 8, MinRateRatio: 0.8, ClockSkew: 5 * time.Second}
	env := cfg.FunctionEnv()
	env["REDIS_URL"], env["ORDER_API_URL"] = srv.URL(), down.URL
	rep := scenario.Run(t, scenario.Env{Invoker: newInProcess(t, env), Downstream: down, Config: cfg})
	if rep.Orders != cfg.Crowd {
		t.Errorf("%d orders, want %d", rep.Orders, cfg.Crowd)
	}
}

func TestTokenExpiryInProcess(t *testing.T) {
	srv := redistest.Start(t)
	down := scenario.StartDownstream(t, "127.0.0.1:0", "")
	cfg := scenario.Default()
	cfg.TokenTTLSeconds, cfg.Batches = 1, 1
	env := cfg.FunctionEnv()
	env["REDIS_URL"], env["ORDER_API_URL"] = srv.URL(), down.URL
	scenario.RunTokenExpiry(t, scenario.Env{Invoker: newInProcess(t, env), Downstream: down, Config: cfg})
}
