package openapitest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/openapitest"
)

func TestProjectContractLoads(t *testing.T) {
	if _, err := openapitest.Project(); err != nil {
		t.Fatal(err)
	}
}

const (
	waiting  = `{"status":"WAITING","position":3,"estimatedWaitSeconds":0,"pollAfterMs":75}`
	ready    = `{"status":"READY","entryToken":"tv.AAAAAAAAAAAAAAAAAAAAAA","expiresAt":"2026-11-27T00:05:00Z","pollAfterMs":null}`
	notInQ   = `{"status":"NOT_IN_QUEUE","pollAfterMs":null}`
	token    = "tv.AAAAAAAAAAAAAAAAAAAAAA"
	jsonType = "application/json"
)

// exchange builds an exchange; headers are name, value pairs, with
// Content-Type application/json and Cache-Control no-store unless given.
type exchange struct {
	method, target string
	reqHeaders     []string
	status         int
	respHeaders    []string
	body           string
}

func (e exchange) build() openapitest.Exchange {
	req := httptest.NewRequest(e.method, e.target, nil)
	for i := 0; i+1 < len(e.reqHeaders); i += 2 {
		req.Header.Set(e.reqHeaders[i], e.reqHeaders[i+1])
	}
	h := http.Header{"Content-Type": {jsonType}, "Cache-Control": {"no-store"}}
	for i := 0; i+1 < len(e.respHeaders); i += 2 {
		if e.respHeaders[i+1] == "" {
			h.Del(e.respHeaders[i])
			continue
		}
		h.Set(e.respHeaders[i], e.respHeaders[i+1])
	}
	return openapitest.Exchange{Request: req, Status: e.status, Header: h, Body: []byte(e.body)}
}

func TestContractAllows(t *testing.T) {
	order := func(status int, ct, body string) exchange {
		return exchange{"POST", "/orders", []string{"X-Entry-Token", token}, status, []string{"Content-Type", ct}, body}
	}
	cases := map[string]exchange{
		"enter waiting":             {"POST", "/queue/enter?room=tv", []string{"X-User-Id", "alice"}, 200, nil, waiting},
		"enter ready":               {"POST", "/queue/enter", nil, 200, nil, ready},
		"position not in queue":     {"GET", "/queue/position", nil, 200, nil, notInQ},
		"queue full":                {"POST", "/queue/enter", nil, 429, []string{"Retry-After", "10"}, `{"error":"queue_full","message":"full"}`},
		"bad room refused":          {"GET", "/queue/position?room=Shoes", nil, 400, nil, `{"error":"invalid_room","message":"m"}`},
		"missing token refused":     {"POST", "/orders", nil, 403, nil, `{"error":"entry_token_invalid","message":"m"}`},
		"downstream created":        order(201, jsonType, `{"orderId":"ord-1"}`),
		"downstream 409 own body":   order(409, jsonType, `{"error":"out_of_stock"}`),
		"downstream 422 text":       order(422, "text/plain", "no such sku"),
		"downstream 503 no header":  order(503, jsonType, `{"message":"busy"}`),
		"gate timeout":              order(504, jsonType, `{"error":"order_timeout","message":"m"}`),
		"unknown path":              {"GET", "/nope", nil, 404, nil, `{"error":"not_found","message":"no route /nope"}`},
		"wrong method":              {"GET", "/queue/enter", nil, 405, []string{"Allow", "POST"}, `{"error":"method_not_allowed","message":"m"}`},
		"healthz":                   {"GET", "/healthz", nil, 200, []string{"Cache-Control", ""}, `{"status":"ok"}`},
		"healthz store unreachable": {"GET", "/healthz", nil, 503, []string{"Cache-Control", "", "Retry-After", "1"}, `{"error":"unavailable","message":"m"}`},
	}
	for name, c := range cases {
		if err := openapitest.Check(c.build()); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The check bites: each of these answers breaks the contract, for the
// reason given.
func TestContractRejects(t *testing.T) {
	order := func(status int, body string) exchange {
		return exchange{"POST", "/orders", []string{"X-Entry-Token", token}, status, nil, body}
	}
	const badBody = "response body doesn't match schema"
	cases := []struct {
		name, reason string
		ex           exchange
	}{
		{"undocumented status", "status is not supported", exchange{"GET", "/queue/position", nil, 418, nil, notInQ}},
		{"undocumented field", "additional properties 'extra'", exchange{"GET", "/queue/position", nil, 200, nil, `{"status":"NOT_IN_QUEUE","pollAfterMs":null,"extra":1}`}},
		{"missing pollAfterMs", "missing property 'pollAfterMs'", exchange{"GET", "/queue/position", nil, 200, nil, `{"status":"NOT_IN_QUEUE"}`}},
		{"unknown status value", "value must be 'NOT_IN_QUEUE'", exchange{"GET", "/queue/position", nil, 200, nil, `{"status":"ADMITTED","pollAfterMs":null}`}},
		{"ready without a token", "missing property 'entryToken'", exchange{"GET", "/queue/position", nil, 200, nil, `{"status":"READY","expiresAt":"2026-11-27T00:05:00Z","pollAfterMs":null}`}},
		{"ready expiry not UTC", "does not match pattern", exchange{"GET", "/queue/position", nil, 200, nil, `{"status":"READY","entryToken":"t","expiresAt":"2026-11-27T01:05:00+01:00","pollAfterMs":null}`}},
		{"waiting told to stop polling", "got null, want integer", exchange{"GET", "/queue/position", nil, 200, nil, `{"status":"WAITING","position":3,"estimatedWaitSeconds":0,"pollAfterMs":null}`}},
		{"position 0", "minimum: got 0, want 1", exchange{"GET", "/queue/position", nil, 200, nil, `{"status":"WAITING","position":0,"estimatedWaitSeconds":0,"pollAfterMs":75}`}},
		{"enter never answers NOT_IN_QUEUE", badBody, exchange{"POST", "/queue/enter", nil, 200, nil, notInQ}},
		{"no Cache-Control", `"Cache-Control" missing`, exchange{"POST", "/queue/enter", nil, 200, []string{"Cache-Control", ""}, waiting}},
		{"not JSON", `Content-Type has unexpected value`, exchange{"POST", "/queue/enter", nil, 200, []string{"Content-Type", "text/plain"}, waiting}},
		{"code of another status", "not one of the allowed values", exchange{"POST", "/queue/enter", nil, 400, nil, `{"error":"queue_full","message":"m"}`}},
		{"unknown error code", "not one of the allowed values", exchange{"POST", "/queue/enter", nil, 400, nil, `{"error":"oops","message":"m"}`}},
		{"error without message", "missing property 'message'", exchange{"POST", "/queue/enter", nil, 401, nil, `{"error":"unauthenticated"}`}},
		{"503 without Retry-After", `"Retry-After" missing`, exchange{"POST", "/queue/enter", nil, 503, nil, `{"error":"unavailable","message":"m"}`}},
		{"429 without Retry-After", `"Retry-After" missing`, exchange{"POST", "/queue/enter", nil, 429, nil, `{"error":"queue_full","message":"m"}`}},
		{"bad input accepted", "must be refused with a 4xx", exchange{"GET", "/queue/position?room=Shoes", nil, 200, nil, notInQ}},
		{"missing token answered 500", "must be refused with a 4xx", exchange{"POST", "/orders", nil, 500, nil, `{"error":"internal","message":"m"}`}},
		{"gate code of another status", "value must be 'entry_token_invalid'", order(403, `{"error":"order_in_progress","message":"m"}`)},
		{"gate error with extra field", "additional properties 'user'", order(409, `{"error":"order_in_progress","message":"m","user":"x"}`)},
		{"gate code on an unlisted status", `Doesn't match schema "not"`, order(418, `{"error":"queue_full","message":"m"}`)},
		{"405 without Allow", `"Allow" missing`, exchange{"GET", "/queue/enter", nil, 405, nil, `{"error":"method_not_allowed","message":"m"}`}},
		{"unknown path answered 200", "status is not supported", exchange{"GET", "/nope", nil, 200, nil, notInQ}},
	}
	for _, c := range cases {
		err := openapitest.Check(c.ex.build())
		switch {
		case err == nil:
			t.Errorf("%s: accepted", c.name)
		case !strings.Contains(err.Error(), "docs/openapi.yaml") || !strings.Contains(err.Error(), c.reason):
			t.Errorf("%s: rejected, but not because %q: %v", c.name, c.reason, err)
		}
	}
}

// A response to a real server goes through the checking client, and a
// breach is reported on t.
func TestClientReportsBreaches(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", jsonType)
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte(`{"status":"WAITING"}`))
	}))
	defer srv.Close()
	rec := &recorder{TB: t}
	resp, err := openapitest.Client(rec).Post(srv.URL+"/queue/enter", jsonType, strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], "docs/openapi.yaml") {
		t.Fatalf("breach not reported: %q", rec.errors)
	}
}

type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
