package localrun_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/openapitest"
	"github.com/waitroom/waitroom/internal/runnertest"
	"github.com/waitroom/waitroom/localrun"
)

// reverseProxy is a same-host reverse proxy in front of the runner, as an
// operator self-hosts it: Go's httputil.ReverseProxy, which appends the
// client's address to X-Forwarded-For and relays every other header as the
// client wrote it. header, when set, adds the operator's own headers.
func reverseProxy(t *testing.T, r *localrun.Runner, header http.Header) *httptest.Server {
	t.Helper()
	target, err := url.Parse(r.URL)
	if err != nil {
		t.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(target)
	direct := p.Director
	p.Director = func(req *http.Request) {
		direct(req)
		for k, v := range header {
			req.Header[k] = v
		}
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv
}

// Issue 32: a local runner on loopback believes X-User-Id without
// PROXY_SECRET, as only this machine can send it. Behind a same-host
// reverse proxy the internet can: a forged X-User-Id: carol read carol's
// entry token and ordered with it. A request that came through a proxy
// (it carries X-Forwarded-For) has its X-User-Id refused now, unless the
// proxy proves itself with PROXY_SECRET.
func TestForgedUserHeaderThroughAProxyIsRefused(t *testing.T) {
	r := runnertest.Start(t, runnertest.Config(t, map[string]string{}))
	code, body := do(t, "POST", r.URL+"/queue/enter", "carol", nil) // carol, on this machine
	var a answer
	if code != 200 || json.Unmarshal([]byte(body), &a) != nil || a.Status != "READY" {
		t.Fatalf("carol's enter: %d %s", code, body)
	}
	proxy := reverseProxy(t, r, nil)

	code, body = do(t, "GET", proxy.URL+"/queue/position", "carol", nil)
	if code != 403 || !strings.Contains(body, `"error":"forbidden"`) || strings.Contains(body, a.EntryToken) {
		t.Fatalf("X-User-Id: carol through the proxy read %d %s; want 403 forbidden", code, body)
	}
	code, body = do(t, "POST", proxy.URL+"/orders", "carol", map[string]string{"X-Entry-Token": a.EntryToken, "Idempotency-Key": "forged"})
	if code != 403 || !strings.Contains(body, `"error":"forbidden"`) {
		t.Fatalf("an order as carol through the proxy: %d %s; want 403 forbidden", code, body)
	}
	if n := r.Demo.Stats().Orders; n != 0 {
		t.Fatalf("the order API took %d orders", n)
	}
	// Anonymous visitors through the same proxy still join.
	req, _ := http.NewRequest("POST", proxy.URL+"/queue/enter", nil)
	resp, err := openapitest.Client(t).Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a visitor through the proxy: %v %v", resp, err)
	}
	resp.Body.Close()
	// carol on this machine keeps her place and her token.
	if code, body := do(t, "GET", r.URL+"/queue/position", "carol", nil); code != 200 || !strings.Contains(body, a.EntryToken) {
		t.Fatalf("carol from this machine: %d %s", code, body)
	}
}

// Issue 32: self-hosting behind a proxy works. The proxy proves itself with
// PROXY_SECRET, so X-User-Id is its word; with TRUSTED_PROXIES the limiter
// and the stream caps count each client by the address the proxy reports,
// not all of them by the proxy's.
func TestSelfHostedBehindAProxy(t *testing.T) {
	const secret = "the-operators-proxy-secret-0123456"
	r := runnertest.Start(t, runnertest.Config(t, withEnv(map[string]string{
		"PROXY_SECRET": secret, "TRUSTED_PROXIES": "127.0.0.1/32", "STREAMS_PER_IP": "1", "ADMIT_RATE_PER_SEC": "0.001",
	})))
	proxy := reverseProxy(t, r, http.Header{"X-Proxy-Secret": {secret}})
	// Two clients on two addresses (127.0.0.2, 127.0.0.3: Linux routes all
	// of 127/8 to lo), each with one stream: STREAMS_PER_IP=1 is per client.
	for i, user := range []string{"ahead", "u1", "u2"} {
		req, _ := http.NewRequest("POST", proxy.URL+"/queue/enter?room=tv", nil)
		req.Header.Set("X-User-Id", user)
		resp, err := from(fmt.Sprintf("127.0.0.%d", i+2)).Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s through the proxy: %v %v", user, resp, err)
		}
		resp.Body.Close()
	}
	for i, user := range []string{"u1", "u2"} {
		resp, ch := openStream(t, from(fmt.Sprintf("127.0.0.%d", i+3)), proxy.URL+"/queue/events?room=tv", userHeader(user))
		if resp.StatusCode != 200 || (<-ch).Status != "WAITING" {
			t.Fatalf("%s's stream through the proxy: %d", user, resp.StatusCode)
		}
	}
	resp, _ := openStream(t, from("127.0.0.3"), proxy.URL+"/queue/events?room=tv", userHeader("u3"))
	refused(t, "a second stream from 127.0.0.3 through the proxy", resp)

	// New visitors: each client has its own bucket, not the proxy's.
	anonymous := func(ip string) int {
		req, _ := http.NewRequest("POST", proxy.URL+"/queue/enter", nil)
		resp, err := from(ip).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	limited := 0
	for i := 0; i < 20; i++ {
		if anonymous("127.0.0.9") == 429 {
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("one client made 20 visitors through the proxy: the bucket is not per client")
	}
	if code := anonymous("127.0.0.10"); code != 200 {
		t.Fatalf("another client through the proxy, after the first used its bucket: %d", code)
	}
}
