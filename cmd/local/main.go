// Command local runs the whole waiting room in one process: the three HTTP
// routes on ADDR through the same handlers the Lambda functions use, the
// admission schedule, an embedded store when REDIS_URL is unset, and a demo
// order API when ORDER_API_URL is unset.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/awslambda"
	"github.com/waitroom/waitroom/demoorder"
	"github.com/waitroom/waitroom/orderapi"
	"github.com/waitroom/waitroom/redisstore"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(log); err != nil {
		log.Error("local runner stopped", "err", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg, err := waitroom.LoadConfig(os.LookupEnv, waitroom.LocalDefaults)
	if err != nil {
		return err
	}
	if cfg.RedisURL == "" {
		mr, err := miniredis.Run()
		if err != nil {
			return fmt.Errorf("embedded store: %w", err)
		}
		defer mr.Close()
		cfg.RedisURL = "redis://" + mr.Addr()
		log.Info("embedded store (set REDIS_URL to use a real Redis)", "addr", mr.Addr())
	}
	if cfg.OrderAPIURL == "" {
		url, closeDemo, err := startDemoOrders()
		if err != nil {
			return err
		}
		defer closeDemo()
		cfg.OrderAPIURL = url
		log.Info("demo order API: 20 connections, ~200 ms per order (set ORDER_API_URL to use yours)", "url", url)
	}
	rdb, err := redisstore.NewClient(cfg, redisstore.Credentials{})
	if err != nil {
		return err
	}
	defer rdb.Close()
	store := redisstore.New(rdb, cfg)
	api := &awslambda.API{Config: cfg, Queue: store, Orders: orderapi.New(cfg.OrderAPIURL, cfg.OrderTimeout), Log: log}

	mux := http.NewServeMux()
	mux.Handle("/", awslambda.ServeHTTP(api.Route)) // the routes, and JSON 404/405 for the rest
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := rdb.Ping(r.Context()).Err(); err != nil {
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"error":"unavailable","message":"store unreachable"}`, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go admitForever(ctx, log, &waitroom.Admitter{Queue: store, Interval: cfg.AdmitInterval, Batches: cfg.AdmitBatches})
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Info("waiting room ready", "url", "http://"+ln.Addr().String(), "rate", cfg.AdmitRatePerSec, "capacity", cfg.QueueCapacity)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// admitForever invokes admission back to back, as the schedule does in AWS.
func admitForever(ctx context.Context, log *slog.Logger, a *waitroom.Admitter) {
	for ctx.Err() == nil {
		sum, err := a.Run(ctx)
		if err != nil && ctx.Err() == nil {
			log.Warn("admission failed; retrying", "err", err)
			time.Sleep(time.Second)
			continue
		}
		if sum.Admitted > 0 {
			log.Debug("admitted", "users", sum.Admitted)
		}
	}
}

func startDemoOrders() (url string, closeFn func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("demo order API: %w", err)
	}
	srv := &http.Server{Handler: demoorder.Default(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}
