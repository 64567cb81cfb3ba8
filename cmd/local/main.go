// Command local runs the whole waiting room in one process (make run).
// See package localrun.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/waitroom/waitroom/envconfig"
	"github.com/waitroom/waitroom/localrun"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg, err := envconfig.FromEnv(envconfig.Local)
	if err != nil {
		log.Error("bad configuration", "err", err)
		os.Exit(2)
	}
	r, err := localrun.Start(cfg, log)
	if err != nil {
		log.Error("cannot start", "err", err)
		os.Exit(1)
	}
	log.Info("waiting room ready", "url", r.URL, "ratePerSec", cfg.AdmitRatePerSec, "capacity", cfg.QueueCapacity,
		"open", r.URL+"/?room=tv", "try", "curl -XPOST -H 'X-User-Id: alice' "+r.URL+"/queue/enter")
	if r.GeneratedAdminToken {
		// Printed, not logged: the token stays out of log pipelines.
		fmt.Fprintf(os.Stderr, "\nADMIN_TOKEN was not set; this run's admin token (waitroomctl reads it from WAITROOM_ADMIN_TOKEN):\n  export WAITROOM_URL=%s WAITROOM_ADMIN_TOKEN=%s\n\n", r.URL, string(r.Config.AdminToken))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	log.Info("shutting down")
	r.Close()
}
