package scenario

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/localrun/demoorder"
)

// SoldOut is an order body the downstream refuses with 409 out_of_stock:
// a failure that is not the user's fault, after which the token must survive.
const SoldOut = `{"sku":"sold-out","qty":1}`

// Downstream is the order API behind the gate in the scenario: the demo
// order service (a pool of 20 connections), with a short service time so
// that a crowd orders quickly, a scripted out-of-stock answer, and a count
// of every request that reached it.
type Downstream struct {
	Demo  *demoorder.Service
	URL   string // what the functions get as ORDER_API_URL
	calls atomic.Int64
	srv   *http.Server
}

// StartDownstream listens on listen (e.g. "127.0.0.1:0", or "0.0.0.0:0" for
// Lambda containers) and advertises host (empty: the listening address) in
// URL. It stops when the test ends.
func StartDownstream(tb testing.TB, listen, host string) *Downstream {
	tb.Helper()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		tb.Fatalf("downstream: %v", err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	if host == "" {
		host = addr.IP.String()
	}
	d := &Downstream{
		Demo: demoorder.New(20, func() time.Duration { return 2 * time.Millisecond }),
		URL:  "http://" + net.JoinHostPort(host, strconv.Itoa(addr.Port)),
	}
	d.srv = &http.Server{Handler: d, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = d.srv.Serve(ln) }()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = d.srv.Shutdown(ctx)
	})
	return d
}

// Calls is how many requests reached the downstream so far.
func (d *Downstream) Calls() int64 { return d.calls.Load() }

func (d *Downstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.calls.Add(1)
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if strings.Contains(string(body), `"sold-out"`) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		_, _ = io.WriteString(w, `{"error":"out_of_stock","message":"this item is sold out"}`)
		return
	}
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	d.Demo.ServeHTTP(w, r)
}
