package httpapi_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
)

const proxySecret = "0123456789abcdef-proxy-secret-XYZ"

func behindProxy(cfg *waitroom.Config) {
	cfg.TrustUserHeader = true
	cfg.ProxySecret = proxySecret
}

func withHeader(req events.APIGatewayV2HTTPRequest, name, value string) events.APIGatewayV2HTTPRequest {
	req.Headers[name] = value
	return req
}

// With PROXY_SECRET, X-User-Id names the caller only on requests that carry
// the secret: a caller of the public endpoint who sends X-User-Id: victim
// learns nothing of the victim's place or token.
func TestProxySecretGuardsTheUserHeader(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine, behindProxy)
		tokens := admitDirect(t, h, "victim")

		for name, req := range map[string]events.APIGatewayV2HTTPRequest{
			"no secret":           request("GET", "/queue/position", "victim", nil),
			"empty secret":        request("GET", "/queue/position", "victim", map[string]string{"x-proxy-secret": ""}),
			"wrong, same length":  request("GET", "/queue/position", "victim", map[string]string{"x-proxy-secret": strings.Repeat("x", len(proxySecret))}),
			"prefix":              request("GET", "/queue/position", "victim", map[string]string{"x-proxy-secret": proxySecret[:len(proxySecret)-1]}),
			"longer":              request("GET", "/queue/position", "victim", map[string]string{"x-proxy-secret": proxySecret + "0"}),
			"other case":          request("GET", "/queue/position", "victim", map[string]string{"x-proxy-secret": strings.ToUpper(proxySecret)}),
			"repeated header":     request("GET", "/queue/position", "victim", map[string]string{"x-proxy-secret": proxySecret + "," + proxySecret}),
			"order without":       request("POST", "/orders", "victim", map[string]string{"x-entry-token": tokens["victim"], "idempotency-key": "k1"}),
			"enter as someone":    request("POST", "/queue/enter", "someone", nil),
			"secret in user only": request("GET", "/queue/position", proxySecret, nil),
		} {
			wantError(t, h.call(req), 401, "unauthenticated")
			if name == "order without" && h.down.calls.Load() != 0 {
				t.Fatalf("%s: the order API was called", name)
			}
		}

		withSecret := request("GET", "/queue/position", "victim", map[string]string{"x-proxy-secret": proxySecret})
		if r := h.call(withSecret); r.StatusCode != 200 || decode(t, r)["entryToken"] != tokens["victim"] {
			t.Fatalf("the proxy's request: %d %s", r.StatusCode, r.Body)
		}
		// Hosts other than API Gateway may keep the header's case.
		mixed := request("GET", "/queue/position", "victim", nil)
		mixed = withHeader(mixed, "X-Proxy-Secret", proxySecret)
		if r := h.call(mixed); r.StatusCode != 200 {
			t.Fatalf("X-Proxy-Secret in mixed case: %d %s", r.StatusCode, r.Body)
		}
	})
}

// An authorizer's identity does not need the proxy; the header then plays
// no part, with or without the secret.
func TestProxySecretLeavesAuthorizersAlone(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine, behindProxy)
		req := request("POST", "/queue/enter", "victim", nil)
		req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "alice"}},
		}
		if r := h.call(req); r.StatusCode != 200 {
			t.Fatalf("JWT caller: %d %s", r.StatusCode, r.Body)
		}
		if st, err := h.store.Position(context.Background(), waitroom.DefaultRoom, waitroom.Unlimited("a:alice")); err != nil || st.Status != waitroom.Waiting {
			t.Fatalf("alice: %+v %v", st, err)
		}
		if st, _ := h.store.Position(context.Background(), waitroom.DefaultRoom, waitroom.Unlimited("h:victim")); st.Status != waitroom.NotInQueue {
			t.Fatalf("the header's user was queued: %+v", st)
		}
	})
}

// Without PROXY_SECRET, trusted-header mode believes X-User-Id as before
// (the operator vouches for every caller).
func TestTrustedHeaderWithoutProxySecret(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine, func(c *waitroom.Config) { c.TrustUserHeader = true })
		if r := h.enter("bob"); r.StatusCode != 200 {
			t.Fatalf("%d %s", r.StatusCode, r.Body)
		}
		h = newHarness(t, engine, func(c *waitroom.Config) { c.TrustUserHeader = false })
		wantError(t, h.call(request("POST", "/queue/enter", "bob", map[string]string{"x-proxy-secret": proxySecret})), 401, "unauthenticated")
	})
}

// The secret never reaches a log, also when requests fail and are logged.
func TestProxySecretNotLogged(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine, behindProxy)
		var logs safeBuffer
		h.api.Log = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		good := map[string]string{"x-proxy-secret": proxySecret}
		h.call(request("POST", "/queue/enter", "carol", good))
		h.redis.Stop()
		wantError(t, h.call(request("POST", "/queue/enter", "dave", good)), 503, "unavailable")
		h.redis.Restart()
		h.call(request("POST", "/queue/enter", "eve", map[string]string{"x-proxy-secret": proxySecret + "!"}))
		if logs.Len() == 0 {
			t.Fatal("nothing was logged: the test proves nothing")
		}
		if strings.Contains(logs.String(), proxySecret) {
			t.Fatalf("the secret is in the log: %s", logs.String())
		}
	})
}

// admitDirect queues and admits users through the store, past the API.
func admitDirect(t *testing.T, h *harness, users ...string) map[string]string {
	t.Helper()
	ctx := context.Background()
	for _, u := range users {
		if _, err := h.store.Enter(ctx, waitroom.DefaultRoom, waitroom.Unlimited("h:"+u)); err != nil { // as the header names u
			t.Fatal(err)
		}
	}
	return h.collectTokens(t, users...)
}

type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *safeBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
func (s *safeBuffer) Len() int       { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Len() }
