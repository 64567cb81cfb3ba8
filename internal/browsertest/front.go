package browsertest

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/web"
)

// Front stands for the AWS deployment in front of a local runner: the
// page's files as S3 holds them (config.json without the live stream, so
// the page follows the line and polls) and every other request passed to
// the runner, counted per method and path ("GET /queue/line"): what a
// visitor's page asks of the API.
type Front struct {
	URL    string
	mu     sync.Mutex
	counts map[string]int
	first  map[string]time.Time
}

// NewFront serves the page with continueURL in front of the runner at api,
// until the test ends.
func NewFront(tb testing.TB, api, continueURL string) *Front {
	tb.Helper()
	target, err := url.Parse(api)
	if err != nil {
		tb.Fatal(err)
	}
	f := &Front{counts: map[string]int{}, first: map[string]time.Time{}}
	page := web.Handler(web.Settings{ContinueURL: continueURL})
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" || r.URL.Path == "/index.html" || strings.HasPrefix(r.URL.Path, "/waitroom/") {
			page.ServeHTTP(w, r)
			return
		}
		route := r.Method + " " + r.URL.Path
		f.mu.Lock()
		if f.counts[route]++; f.counts[route] == 1 {
			f.first[route] = time.Now()
		}
		f.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// Count is how many requests reached route ("GET /queue/position").
func (f *Front) Count(route string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[route]
}

// First is when route was first asked (zero: never).
func (f *Front) First(route string) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.first[route]
}

// Counts is every route's count.
func (f *Front) Counts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.counts)
}
