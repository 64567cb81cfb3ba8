// Package gateway is a small stand-in for API Gateway HTTP API in end-to-end
// tests: it turns HTTP calls into payload 2.0 events, fills
// requestContext.authorizer.jwt.claims the way a JWT authorizer does, invokes
// a Lambda function through an Invoker (the runtime interface emulator, the
// LocalStack Invoke API, or in-process handlers) and turns the function's
// answer back into an HTTP response.
//
// It is a test double, not a security boundary: it decodes the bearer JWT
// without verifying its signature, as if an authorizer had already done so.
package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/waitroom/waitroom/httpapi"
)

// Function names, as the invokers know them.
const (
	Enter     = "enter"
	Position  = "position"
	Admit     = "admit"
	OrderGate = "order-gate"
)

// Functions are the four Lambda functions of Waitroom.
var Functions = []string{Enter, Position, Admit, OrderGate}

// Result is what one Lambda invocation answered.
type Result struct {
	Payload []byte
	// FunctionError is Lambda's X-Amz-Function-Error: empty when the handler
	// returned normally, otherwise the error type (e.g. "Unhandled").
	FunctionError string
}

// Invoker invokes a Lambda function by name with a raw event payload.
// Implementations must be safe for concurrent use.
type Invoker interface {
	Invoke(ctx context.Context, function string, payload []byte) (Result, error)
}

// Routes maps "METHOD /path" to a function name, as the CDK stack does.
var Routes = map[string]string{
	"POST /queue/enter":   Enter,
	"GET /queue/position": Position,
	"GET /queue/line":     Position,
	"POST /orders":        OrderGate,
}

// maxBody is API Gateway's payload limit.
const maxBody = 10 << 20

// Gateway is an http.Handler standing in for API Gateway HTTP API.
type Gateway struct {
	Invoker Invoker
	// Timeout bounds one invocation, like API Gateway's 30 s integration timeout.
	Timeout time.Duration
}

// New returns a gateway over inv with API Gateway's 30 s integration timeout.
func New(inv Invoker) *Gateway { return &Gateway{Invoker: inv, Timeout: 30 * time.Second} }

func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	function := Routes[r.Method+" "+r.URL.Path]
	if function == "" {
		writeMessage(w, http.StatusNotFound, "Not Found")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeMessage(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
		return
	}
	ev := httpapi.EventFromHTTP(r, body)
	ev.RouteKey = r.Method + " " + r.URL.Path
	ev.RequestContext.RouteKey = ev.RouteKey
	if auth := r.Header.Get("Authorization"); auth != "" {
		claims, err := Claims(auth)
		if err != nil {
			// A JWT authorizer answers a bad token itself; the function never runs.
			writeMessage(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims},
		}
	}
	// Requests without Authorization are passed on without an authorizer
	// context, as on a route without an authorizer, so that the function's
	// own 401 is what the caller sees.
	payload, err := json.Marshal(ev)
	if err != nil {
		writeMessage(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), g.timeout())
	defer cancel()
	res, err := g.Invoker.Invoke(ctx, function, payload)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		writeMessage(w, http.StatusServiceUnavailable, "Service Unavailable")
		return
	case err != nil || res.FunctionError != "":
		writeMessage(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(res.Payload, &resp); err != nil || resp.StatusCode == 0 {
		// Payload 2.0 would guess a format here; our functions always answer
		// with a statusCode, so anything else is a broken function.
		writeMessage(w, http.StatusBadGateway, "Bad Gateway")
		return
	}
	httpapi.WriteHTTP(w, resp)
}

func (g *Gateway) timeout() time.Duration {
	if g.Timeout > 0 {
		return g.Timeout
	}
	return 30 * time.Second
}

// writeMessage answers the way API Gateway does for its own errors.
func writeMessage(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"message":%q}`, msg)
}

// Claims decodes the claims of "Bearer <jwt>" into the string map that API
// Gateway puts in requestContext.authorizer.jwt.claims. The signature is not
// checked: this is a test gateway.
func Claims(authorization string) (map[string]string, error) {
	token, ok := strings.CutPrefix(authorization, "Bearer ")
	if !ok {
		return nil, errors.New("not a bearer token")
	}
	parts := strings.Split(strings.TrimSpace(token), ".")
	if len(parts) != 3 {
		return nil, errors.New("not a JWT")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, fmt.Errorf("JWT payload: %w", err)
	}
	var values map[string]any
	if err := json.Unmarshal(raw, &values); err != nil {
		return nil, fmt.Errorf("JWT payload: %w", err)
	}
	claims := make(map[string]string, len(values))
	for k, v := range values {
		switch v := v.(type) {
		case string:
			claims[k] = v
		default:
			b, _ := json.Marshal(v)
			claims[k] = string(b)
		}
	}
	return claims, nil
}

// Token mints an unsigned JWT for sub, for the gateway's Authorization header.
func Token(sub string) string {
	enc := base64.RawURLEncoding
	header := enc.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
	payload, _ := json.Marshal(map[string]any{"sub": sub, "iss": "waitroom-e2e", "aud": "waitroom", "exp": time.Now().Add(time.Hour).Unix()})
	return header + "." + enc.EncodeToString(payload) + "."
}

// Bearer is the Authorization header value for sub.
func Bearer(sub string) string { return "Bearer " + Token(sub) }

// FunctionErrorOf recognises the answer Lambda runtimes give for a handler
// error, {"errorMessage": ..., "errorType": ...}, for invokers that do not
// get an X-Amz-Function-Error header (the runtime interface emulator).
func FunctionErrorOf(payload []byte) string {
	var v struct {
		ErrorMessage *string `json:"errorMessage"`
		ErrorType    string  `json:"errorType"`
		StatusCode   *int    `json:"statusCode"`
	}
	if json.Unmarshal(payload, &v) != nil || v.ErrorMessage == nil || v.StatusCode != nil {
		return ""
	}
	if v.ErrorType == "" {
		return "Unhandled"
	}
	return v.ErrorType
}
