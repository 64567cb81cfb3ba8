package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/awslambda"
	"github.com/waitroom/waitroom/entrytoken"
	"github.com/waitroom/waitroom/httpapi"
	"github.com/waitroom/waitroom/internal/redistest"
)

// contractStatuses are the statuses docs/API.md lets Waitroom answer (the
// downstream's 201 included); a 500 here is a handler panic or a bug.
var contractStatuses = map[int]bool{200: true, 201: true, 400: true, 401: true, 403: true, 404: true, 405: true,
	409: true, 413: true, 422: true, 428: true, 429: true, 502: true, 503: true, 504: true}

// fuzzEvents seed the event fuzzer: one real request of every route.
var fuzzEvents = []string{
	`{"version":"2.0","rawPath":"/queue/enter","rawQueryString":"room=tv","queryStringParameters":{"room":"tv"},"headers":{"x-user-id":"alice"},"requestContext":{"http":{"method":"POST","path":"/queue/enter","sourceIp":"192.0.2.1"}}}`,
	`{"version":"2.0","rawPath":"/queue/position","headers":{"x-user-id":"alice"},"requestContext":{"http":{"method":"GET","path":"/queue/position","sourceIp":"192.0.2.1"},"authorizer":{"jwt":{"claims":{"sub":"bob","groups":["a"],"exp":1}}}}}`,
	`{"version":"2.0","rawPath":"/orders","headers":{"x-user-id":"alice","x-entry-token":"eyJhbGciOiJFZERTQSJ9.e30.AA","idempotency-key":"k1","content-type":"application/json"},"body":"eyJza3UiOiJ0diJ9","isBase64Encoded":true,"requestContext":{"http":{"method":"POST","path":"/orders"}}}`,
	`{"version":"2.0","rawPath":"/.well-known/jwks.json","requestContext":{"http":{"method":"GET","path":"/.well-known/jwks.json"}}}`,
	`{"version":"2.0","rawPath":"/queue/enter","headers":{"x-queue-challenge":"c1.AAAAAAAA.default.AAAAAAAAAAAAAAAAAAAAAA.8.9999999999.AAAA.1"},"requestContext":{"http":{"method":"POST","path":"/queue/enter","sourceIp":"192.0.2.1"}}}`,
	`{"rawQueryString":"room=tv%ZZ","requestContext":{"http":{"method":"POST","path":"/queue/enter"},"authorizer":{"lambda":{"userId":7}}}}`,
	`{}`, `[]`, `null`, `{"requestContext":7}`,
}

// Any event, through every handler and the router, with a real store and
// downstream: never a panic, always a JSON body, a status of the contract.
func FuzzHTTPEvent(f *testing.F) {
	for _, e := range fuzzEvents {
		f.Add([]byte(e))
	}
	seed, _ := entrytoken.GenerateSeed()
	keys, _ := entrytoken.ParseKeys(seed, "https://queue.test")
	h := newHarness(f, redistest.RedisServer, func(c *waitroom.Config) { c.Trust.EntryTokens = keys })
	var logs bytes.Buffer
	h.api.Log = slog.New(slog.NewTextHandler(&logs, nil))
	pow := *h.api // new visitors solve a challenge first (CHALLENGE=pow)
	pow.Config.Visitor.Challenge, pow.Config.Visitor.ChallengeBits = waitroom.ChallengePoW, 4
	handlers := map[string]httpapi.Handler{"route": h.api.Route, "enter": h.api.Enter, "position": h.api.WithJWKS(h.api.Position), "order": h.api.Order, "pow enter": pow.Enter}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for name, handler := range handlers {
			logs.Reset()
			resp, err := awslambda.HTTPFunction(handler)(context.Background(), raw)
			switch {
			case err != nil:
				t.Fatalf("%s: the function failed: %v", name, err)
			case strings.Contains(logs.String(), "handler panic"):
				t.Fatalf("%s: panic: %s", name, logs.String())
			case !contractStatuses[resp.StatusCode]:
				t.Fatalf("%s: status %d: %s", name, resp.StatusCode, resp.Body)
			case !json.Valid([]byte(resp.Body)):
				t.Fatalf("%s: body is not JSON: %q", name, resp.Body)
			}
		}
	})
}
