// Package runnertest starts the local runner in tests from a map of
// variables, the way cmd/local starts it from the environment, on a free
// loopback port unless the map names ADDR.
package runnertest

import (
	"io"
	"log/slog"
	"testing"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/envconfig"
	"github.com/waitroom/waitroom/localrun"
)

// Config is the local runner's configuration from env (LocalDefaults for
// what it does not set), failing the test on an invalid variable.
func Config(tb testing.TB, env map[string]string) waitroom.Config {
	tb.Helper()
	cfg, err := envconfig.Load(func(k string) (string, bool) {
		if v, ok := env[k]; ok {
			return v, true
		}
		if k == "ADDR" {
			return "127.0.0.1:0", true
		}
		return "", false
	}, envconfig.Local)
	if err != nil {
		tb.Fatal(err)
	}
	return cfg
}

// Start runs a local runner with cfg, logging nowhere, closed when the test ends.
func Start(tb testing.TB, cfg waitroom.Config) *localrun.Runner {
	tb.Helper()
	r, err := localrun.Start(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(r.Close)
	return r
}
