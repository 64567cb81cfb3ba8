// Package localrun hosts the whole waiting room in one process: the HTTP
// routes through the very handlers the Lambda functions use, admission on
// its own schedule as EventBridge would drive it, an embedded store when no
// REDIS_URL is given, and a demo order API when no ORDER_API_URL is given.
package localrun

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/httpapi"
	"github.com/waitroom/waitroom/internal/embedded"
	"github.com/waitroom/waitroom/localrun/demoorder"
	"github.com/waitroom/waitroom/orderapi"
	"github.com/waitroom/waitroom/orderrecord"
	"github.com/waitroom/waitroom/redisstore"
)

// Runner is a running local waiting room.
type Runner struct {
	URL    string // base URL of the routes
	Config waitroom.Config
	Demo   *demoorder.Service // the demo order API, when it runs
	// GeneratedAdminToken says Config.AdminToken was made up at start
	// because ADMIN_TOKEN was unset: the command prints it, once.
	GeneratedAdminToken bool

	srv     *http.Server
	streams *streamCaps // the open event streams
	rdb     redis.UniversalClient
	cancel  context.CancelFunc
	done    chan struct{}
	closers []func()
}

// DemoRoom is the demo's sale room (the README's and the page's room=tv).
const DemoRoom = "tv"

// Start serves cfg.Addr until Close. Unset REDIS_URL and ORDER_API_URL are
// filled in with the embedded store and the demo order API.
func Start(cfg waitroom.Config, log *slog.Logger) (_ *Runner, err error) {
	r := &Runner{done: make(chan struct{})}
	defer func() {
		if err != nil {
			r.closeAll()
		}
	}()
	if cfg, err = r.fillIn(cfg, log); err != nil {
		return nil, err
	}
	r.Config = cfg
	if r.rdb, err = redisstore.NewClient(cfg, redisstore.Credentials{}); err != nil {
		return nil, err
	}
	r.closers = append(r.closers, func() { _ = r.rdb.Close() })
	store := redisstore.New(r.rdb, cfg)
	api := &httpapi.API{Config: cfg, Queue: store, Orders: orderapi.New(cfg.OrderAPIURL, cfg.OrderTimeout), Log: log,
		Admin: &httpapi.Admin{Config: cfg, Rooms: store, Token: cfg.AdminToken, Log: log}}
	if err := useOrderRecord(api, log); err != nil {
		return nil, err
	}
	consume, err := intakeBroker(cfg, api, store, log)
	if err != nil {
		return nil, err
	}
	onBatch, err := r.listen(cfg.Addr, api, store)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		defer close(r.done)
		stop := consume(ctx)
		defer stop()
		AdmitForever(ctx, log, &waitroom.Admitter{Queue: store, Interval: cfg.AdmitInterval, Batches: cfg.AdmitBatches, OnBatch: onBatch})
	}()
	return r, nil
}

// fillIn gives what the environment left unset a local stand-in: the
// embedded store, the demo order API, an admin token, ticket and entry
// token keys that live as long as the process.
func (r *Runner) fillIn(cfg waitroom.Config, log *slog.Logger) (_ waitroom.Config, err error) {
	if cfg.RedisURL == "" {
		es, err := embedded.Start()
		if err != nil {
			return cfg, fmt.Errorf("embedded store: %w", err)
		}
		r.closers = append(r.closers, es.Close)
		cfg.RedisURL = es.URL()
		log.Info("embedded store (set REDIS_URL to use a real Redis)", "addr", es.Addr())
	}
	if cfg.OrderAPIURL == "" {
		r.Demo = demoorder.Default()
		url, err := serve(r.Demo, &r.closers)
		if err != nil {
			return cfg, fmt.Errorf("demo order API: %w", err)
		}
		cfg.OrderAPIURL = url
		// The demo's sale room sells as if an operator had created it
		// (ORDER_ROOMS unset: only such rooms sell; a list or * decides alone).
		cfg.DemoSaleRoom = DemoRoom
		log.Info("demo order API: 20 connections, ~200 ms per order (set ORDER_API_URL to use yours)", "url", url)
	}
	if cfg.AdminToken == "" {
		if cfg.AdminToken, err = newAdminToken(); err != nil {
			return cfg, err
		}
		r.GeneratedAdminToken = true
	}
	if cfg.Visitor.Tickets, err = ticketKeys(cfg.Visitor.Tickets, log); err != nil {
		return cfg, err
	}
	cfg.Trust.EntryTokens, err = entryTokenKeys(cfg.Trust.EntryTokens, log)
	return cfg, err
}

// listen serves the routes on addr and returns what each admission batch
// tells the live streams.
func (r *Runner) listen(addr string, api *httpapi.API, store *redisstore.Store) (onBatch func(waitroom.Batch), err error) {
	mux := http.NewServeMux()
	mux.Handle("/", httpapi.ServeHTTP(api.Route)) // the routes, and JSON 404/405 for the rest
	// Enter and position never use a body (at most MaxRequestBody: LimitBodies).
	mux.Handle("/queue/enter", withoutBody(httpapi.ServeHTTP(api.Route)))
	mux.Handle("/queue/position", withoutBody(httpapi.ServeHTTP(api.Route)))
	mux.Handle(httpapi.LinePath, withoutBody(httpapi.ServeHTTP(api.Route)))
	mux.HandleFunc("GET /healthz", r.healthz)
	onBatch, endStreams := r.visitorRoutes(mux, api, store)

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	r.URL = "http://" + ln.Addr().String()
	// Slow clients cannot hold connections: headers within 5 s, an idle
	// keep-alive connection for 2 min; bodies are bounded per request
	// (httpapi.ServeHTTP), not by ReadTimeout, which would cut the event
	// stream's long responses.
	r.srv = &http.Server{Handler: httpapi.LimitBodies(mux), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute}
	r.srv.RegisterOnShutdown(endStreams)
	go func() { _ = r.srv.Serve(ln) }()
	return onBatch, nil
}

func (r *Runner) healthz(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if err := r.rdb.Ping(req.Context()).Err(); err != nil {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":"unavailable","message":"the store cannot be reached"}`))
		return
	}
	_, _ = w.Write([]byte(`{"status":"ok"}`))
}

// useOrderRecord gives the gate ORDER_RECORD_TABLE's durable record, the
// table created when missing (a DynamoDB-compatible server at
// ORDER_RECORD_ENDPOINT, such as mk/dynalite.mk's; in AWS the stack makes it). Without it the store's
// lock and commit are the only record of a consumed token.
func useOrderRecord(api *httpapi.API, log *slog.Logger) error {
	record, err := orderrecord.Open(context.Background(), api.Config)
	if err != nil || record == nil {
		return err
	}
	if api.Config.OrderRecord.Endpoint != "" { // in AWS the stack makes the table
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := record.CreateTable(ctx); err != nil {
			return fmt.Errorf("ORDER_RECORD_TABLE: %w", err)
		}
	}
	api.Record = record
	log.Info("order record", "table", api.Config.OrderRecord.Table, "endpoint", api.Config.OrderRecord.Endpoint)
	return nil
}

// Close stops admission and the server, then everything started with it.
func (r *Runner) Close() {
	if r.cancel != nil {
		r.cancel()
		<-r.done
	}
	if r.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.srv.Shutdown(ctx)
	}
	r.closeAll()
}

func (r *Runner) closeAll() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
	r.closers = nil
}

// withoutBody serves h as if the request had no body.
func withoutBody(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.NoBody
		h.ServeHTTP(w, r)
	})
}

// AdmitForever invokes admission back to back until ctx ends, as the schedule
// does in AWS (where invocations overlap); the runner runs one, and tests run
// more to admit "from another process". An idle invocation returns after one
// batch; the next one then starts one interval after it, so that an idle room
// costs one batch per interval, not a busy loop, and a newcomer is admitted
// within about one interval, as in a running invocation.
func AdmitForever(ctx context.Context, log *slog.Logger, a *waitroom.Admitter) {
	for ctx.Err() == nil {
		start := time.Now()
		sum, err := a.Run(ctx)
		pause := time.Duration(0)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("admission failed; retrying in 1 s", "err", err)
			pause = time.Second
		case sum.Idle:
			pause = time.Until(start.Add(a.Interval))
		}
		if pause > 0 {
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
	}
}

// newAdminToken is 256 random bits, URL-safe.
func newAdminToken() (waitroom.Secret, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("admin token: %w", err)
	}
	return waitroom.Secret(base64.RawURLEncoding.EncodeToString(b[:])), nil
}

func serve(h http.Handler, closers *[]func()) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("demo order API stopped", "err", err)
		}
	}()
	*closers = append(*closers, func() { _ = srv.Close() })
	return "http://" + ln.Addr().String(), nil
}
