// Command local runs the whole waiting room in one process (make run).
// See package localrun.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/localrun"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg, err := waitroom.LoadConfig(os.LookupEnv, waitroom.LocalDefaults)
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	log.Info("shutting down")
	r.Close()
}
