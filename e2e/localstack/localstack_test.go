package localstack_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/waitroom/waitroom/e2e/gateway"
	"github.com/waitroom/waitroom/e2e/localstack"
	"github.com/waitroom/waitroom/e2e/scenario"
)

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// TestLocalStack deploys the four functions and the admit schedule into
// LocalStack and runs the very scenario of the runtime-emulator
// test against them, through the Lambda Invoke API. `make e2e-localstack`
// runs it when LocalStack answers; otherwise it skips.
//
//	LOCALSTACK_REDIS_URL         Redis as the Lambda containers see it, with its password if any (default redis://host.docker.internal:6379)
//	LOCALSTACK_HOST_FROM_LAMBDA  this machine as the Lambda containers see it, for the order API (default host.docker.internal)
func TestLocalStack(t *testing.T) {
	endpoint := os.Getenv("WAITROOM_LOCALSTACK")
	if endpoint == "" {
		t.Skip("LocalStack e2e runs from `make e2e-localstack` (WAITROOM_LOCALSTACK unset)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if err := localstack.Probe(ctx, endpoint); err != nil {
		t.Fatalf("LocalStack at %s: %v", endpoint, err)
	}
	down := scenario.StartDownstream(t, "0.0.0.0:0", env("LOCALSTACK_HOST_FROM_LAMBDA", "host.docker.internal"))
	cfg := scenario.Default()
	cfg.MinRateRatio = 0.8 // Invoke round trips through LocalStack are slower than the emulator's
	cfg.ClockSkew = 30 * time.Second
	fnEnv := cfg.FunctionEnv()
	fnEnv["REDIS_URL"] = env("LOCALSTACK_REDIS_URL", "redis://host.docker.internal:6379")
	fnEnv["ORDER_API_URL"] = down.URL
	var suffix [3]byte
	_, _ = rand.Read(suffix[:])
	d, err := localstack.Deploy(ctx, localstack.Options{
		Endpoint: endpoint,
		Prefix:   "waitroom-e2e-" + hex.EncodeToString(suffix[:]),
		Arch:     env("WAITROOM_LOCALSTACK_ARCH", "amd64"),
		BuildDir: os.Getenv("WAITROOM_E2E_BUILD"),
		Env:      fnEnv,
	})
	t.Cleanup(func() {
		if d == nil || os.Getenv("LOCALSTACK_KEEP") != "" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := d.Destroy(ctx); err != nil {
			t.Logf("destroy: %v", err)
		}
	})
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}
	if err := d.CheckSchedule(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("deployed %v, rule %s", d.Functions, d.RuleName)
	// Warm every function once: a LocalStack cold start pulls an image and
	// may take long; the scenario measures rates on warm functions.
	for _, fn := range gateway.Functions {
		payload := []byte(`{"requestContext":{"authorizer":{"jwt":{"claims":{"sub":"warm-up"}}}},"queryStringParameters":{"room":"warm-up"}}`)
		if fn == gateway.Admit {
			payload = scenario.ScheduledEvent()
		}
		if res, err := d.Invoke(ctx, fn, payload); err != nil || res.FunctionError != "" {
			t.Fatalf("warm %s: %v %s %s", fn, err, res.FunctionError, res.Payload)
		}
	}
	scenario.Run(t, scenario.Env{Invoker: d, Downstream: down, Config: cfg})
}

func TestProbe(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/_localstack/health" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, `{"services":{"lambda":"available","events":"running","s3":"disabled"},"edition":"community"}`)
	}))
	defer ok.Close()
	if err := localstack.Probe(context.Background(), ok.URL); err != nil {
		t.Errorf("healthy LocalStack: %v", err)
	}
	noLambda := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"services":{"lambda":"disabled","events":"running"}}`)
	}))
	defer noLambda.Close()
	if err := localstack.Probe(context.Background(), noLambda.URL); err == nil {
		t.Error("LocalStack without Lambda passed the probe")
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	url := closed.URL
	closed.Close()
	start := time.Now()
	if err := localstack.Probe(context.Background(), url); err == nil {
		t.Error("nothing listening passed the probe")
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("probe of a closed port took %v", time.Since(start))
	}
}

func TestZipBootstrap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bootstrap")
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := localstack.ZipBootstrap(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if len(zr.File) != 1 || zr.File[0].Name != "bootstrap" || zr.File[0].Mode().Perm() != 0o755 {
		t.Fatalf("archive: %+v", zr.File)
	}
	rc, _ := zr.File[0].Open()
	content, _ := io.ReadAll(rc)
	if string(content) != "#!/bin/sh\necho hi\n" {
		t.Errorf("content %q", content)
	}
}
