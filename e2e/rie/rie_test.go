package rie_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/e2e/gateway"
	"github.com/waitroom/waitroom/e2e/rie"
	"github.com/waitroom/waitroom/e2e/scenario"
	"github.com/waitroom/waitroom/internal/redistest"
)

// options reads what `make e2e` provides: the emulator and the host-arch
// bootstraps. Without them (a plain `go test ./...`) the tests skip: they
// run once, from `make e2e`, which `make test` runs.
func options(t *testing.T) rie.Options {
	opt := rie.Options{RIE: os.Getenv("WAITROOM_RIE"), BuildDir: os.Getenv("WAITROOM_E2E_BUILD")}
	if opt.RIE == "" || opt.BuildDir == "" {
		t.Skip("runtime-emulator e2e runs from `make e2e` (WAITROOM_RIE and WAITROOM_E2E_BUILD unset)")
	}
	return opt
}

// TestScenario runs the end-to-end scenario against the four bootstrap
// binaries, each under its own emulator, against a real redis-server.
func TestScenario(t *testing.T) {
	opt := options(t)
	t.Logf("redis: %s", redistest.Version())
	srv := redistest.Start(t)
	down := scenario.StartDownstream(t, "127.0.0.1:0", "")
	cfg := scenario.Default()
	opt.Env = cfg.FunctionEnv()
	opt.Env["REDIS_URL"], opt.Env["ORDER_API_URL"] = srv.URL(), down.URL
	r := rie.Start(t, opt, gateway.Functions...)
	scenario.Run(t, scenario.Env{Invoker: r, Downstream: down, Config: cfg})
	for _, fn := range gateway.Functions {
		inits, invokes, err := r.Instance(fn).Reports()
		if err != nil {
			t.Fatal(err)
		}
		if len(inits) != 1 {
			t.Errorf("%s: %d cold starts, want exactly 1 (a crash makes the emulator start the function again)", fn, len(inits))
		}
		t.Logf("%s: init %v ms, %d invocations", fn, inits, len(invokes))
	}
}

// TestBadConfigurationFailsInit: a function without REDIS_URL stops at init
// with a message naming the variable, and the emulator reports the failure.
func TestBadConfigurationFailsInit(t *testing.T) {
	opt := options(t)
	opt.Env = map[string]string{"ORDER_API_URL": "http://127.0.0.1:1"}
	r := rie.Start(t, opt, gateway.Enter)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := r.Invoke(ctx, gateway.Enter, []byte(`{}`))
	if err == nil && res.FunctionError == "" {
		t.Fatalf("want an init failure, got %s", res.Payload)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(r.Instance(gateway.Enter).LogPath)
		if strings.Contains(string(b), "REDIS_URL is required") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log does not name REDIS_URL:\n%s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("init failure: %v %s %s", err, res.FunctionError, res.Payload)
}

// TestTokenExpiry runs the token-expiry check with ENTRY_TOKEN_TTL_SECONDS=1.
func TestTokenExpiry(t *testing.T) {
	opt := options(t)
	srv := redistest.Start(t)
	down := scenario.StartDownstream(t, "127.0.0.1:0", "")
	cfg := scenario.Default()
	cfg.TokenTTLSeconds, cfg.Batches = 1, 1
	opt.Env = cfg.FunctionEnv()
	opt.Env["REDIS_URL"], opt.Env["ORDER_API_URL"] = srv.URL(), down.URL
	r := rie.Start(t, opt, gateway.Functions...)
	scenario.RunTokenExpiry(t, scenario.Env{Invoker: r, Downstream: down, Config: cfg})
}
