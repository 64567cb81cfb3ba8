package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom/e2e/gateway"
)

// recorder answers every invocation with a canned payload and keeps the events.
type recorder struct {
	answer gateway.Result
	calls  []string
	events []events.APIGatewayV2HTTPRequest
}

func (r *recorder) Invoke(_ context.Context, fn string, payload []byte) (gateway.Result, error) {
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(payload, &ev); err != nil {
		return gateway.Result{}, err
	}
	r.calls, r.events = append(r.calls, fn), append(r.events, ev)
	return r.answer, nil
}

func serve(t *testing.T, inv gateway.Invoker, req *http.Request) (*http.Response, string) {
	t.Helper()
	w := httptest.NewRecorder()
	gateway.New(inv).ServeHTTP(w, req)
	resp := w.Result()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func TestRoutesAndClaims(t *testing.T) {
	rec := &recorder{answer: gateway.Result{Payload: []byte(`{"statusCode":429,"headers":{"Retry-After":"10","Content-Type":"application/json"},"body":"{\"error\":\"queue_full\"}"}`)}}
	req := httptest.NewRequest("POST", "/queue/enter?room=sale", strings.NewReader(`{"a":1}`))
	req.Header.Set("Authorization", gateway.Bearer("alice"))
	resp, body := serve(t, rec, req)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "10" || body != `{"error":"queue_full"}` {
		t.Fatalf("got %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if len(rec.calls) != 1 || rec.calls[0] != gateway.Enter {
		t.Fatalf("calls %v", rec.calls)
	}
	ev := rec.events[0]
	if ev.Version != "2.0" || ev.RouteKey != "POST /queue/enter" || ev.QueryStringParameters["room"] != "sale" || ev.Body != `{"a":1}` {
		t.Errorf("event %+v", ev)
	}
	if ev.RequestContext.Authorizer == nil || ev.RequestContext.Authorizer.JWT.Claims["sub"] != "alice" || ev.RequestContext.Authorizer.JWT.Claims["iss"] != "waitroom-e2e" {
		t.Errorf("authorizer %+v", ev.RequestContext.Authorizer)
	}
	if ev.RequestContext.HTTP.Method != "POST" || ev.RawPath != "/queue/enter" {
		t.Errorf("http %+v", ev.RequestContext.HTTP)
	}
}

func TestNoAuthorizationReachesTheFunction(t *testing.T) {
	rec := &recorder{answer: gateway.Result{Payload: []byte(`{"statusCode":401,"body":"{}"}`)}}
	resp, _ := serve(t, rec, httptest.NewRequest("GET", "/queue/position", nil))
	if resp.StatusCode != 401 || len(rec.events) != 1 || rec.events[0].RequestContext.Authorizer != nil {
		t.Fatalf("got %d, events %+v", resp.StatusCode, rec.events)
	}
}

func TestGatewayErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		method string
		path   string
		auth   string
		answer gateway.Result
		status int
	}{
		{"unknown route", "GET", "/nope", "", gateway.Result{}, 404},
		{"wrong method", "DELETE", "/orders", "", gateway.Result{}, 404},
		{"bad token", "POST", "/orders", "Bearer x.y", gateway.Result{}, 401},
		{"function error", "POST", "/orders", "", gateway.Result{Payload: []byte(`{"errorMessage":"boom","errorType":"x"}`), FunctionError: "Unhandled"}, 500},
		{"not a payload 2.0 response", "POST", "/orders", "", gateway.Result{Payload: []byte(`"hello"`)}, 502},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(c.method, c.path, nil)
			if c.auth != "" {
				req.Header.Set("Authorization", c.auth)
			}
			resp, body := serve(t, &recorder{answer: c.answer}, req)
			if resp.StatusCode != c.status || !strings.Contains(body, `"message"`) {
				t.Errorf("got %d %s, want %d", resp.StatusCode, body, c.status)
			}
		})
	}
}

func TestFunctionErrorOf(t *testing.T) {
	for payload, want := range map[string]string{
		`{"errorMessage":"EOF","errorType":"errorString"}`: "errorString",
		`{"errorMessage":"x"}`:                             "Unhandled",
		`{"statusCode":400,"body":"{}"}`:                   "",
		`{"batches":10,"failed":0,"admitted":3}`:           "",
		`[]`:                                               "",
	} {
		if got := gateway.FunctionErrorOf([]byte(payload)); got != want {
			t.Errorf("%s: got %q, want %q", payload, got, want)
		}
	}
}
