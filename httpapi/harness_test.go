package httpapi_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/envconfig"
	"github.com/waitroom/waitroom/httpapi"
	"github.com/waitroom/waitroom/internal/openapitest"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/orderapi"
	"github.com/waitroom/waitroom/redisstore"
)

// downstream is a scripted order API on a real HTTP server.
type downstream struct {
	srv   *httptest.Server
	calls atomic.Int64
	// status and delay of the next answers; set before requests are sent.
	status atomic.Int64
	delay  atomic.Int64 // nanoseconds
	last   atomic.Pointer[http.Request]
	body   atomic.Pointer[string]
	// onCall, when set, runs as each order arrives (failure injection).
	onCall atomic.Pointer[func()]
}

func newDownstream(t testing.TB) *downstream {
	d := &downstream{}
	d.status.Store(http.StatusCreated)
	d.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := d.calls.Add(1)
		if f := d.onCall.Load(); f != nil {
			(*f)()
		}
		b, _ := io.ReadAll(r.Body)
		s := string(b)
		d.body.Store(&s)
		d.last.Store(r)
		select {
		case <-time.After(time.Duration(d.delay.Load())):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(d.status.Load()))
		_ = json.NewEncoder(w).Encode(map[string]any{"orderId": n, "user": r.Header.Get("X-User-Id")})
	}))
	t.Cleanup(d.srv.Close)
	return d
}

type harness struct {
	t     testing.TB
	api   *httpapi.API
	store *redisstore.Store
	redis *redistest.Instance
	down  *downstream
	cfg   waitroom.Config
}

func newHarness(t testing.TB, engine redistest.Engine, mutate ...func(*waitroom.Config)) *harness {
	t.Helper()
	srv := engine.Start(t)
	cfg, err := envconfig.Load(func(k string) (string, bool) {
		if k == "REDIS_URL" {
			return srv.URL(), true
		}
		return "", false
	}, envconfig.Local)
	if err != nil {
		t.Fatal(err)
	}
	cfg.OrderTimeout = 2 * time.Second
	// The harness's rooms queue every enter, so that a test sees the line it
	// builds; instant admission (INSTANT_ADMIT, on by default) has its own
	// tests (instant_test.go) and the README's journey runs the defaults.
	cfg.InstantAdmit = false
	// The harness's tests order in rooms of their own that no operator
	// created: ORDER_ROOMS=* sells in every room. The default (only rooms
	// an operator created) has its own tests (ordergate_test.go).
	cfg.OrderRooms = []string{waitroom.AnyRoom}
	for _, m := range mutate {
		m(&cfg)
	}
	rdb, err := redisstore.NewClient(cfg, redisstore.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	store := redisstore.New(rdb, cfg)
	down := newDownstream(t)
	api := &httpapi.API{Config: cfg, Queue: store, Orders: orderapi.New(down.srv.URL, cfg.OrderTimeout), Rand: func() float64 { return 0.5 }}
	return &harness{t: t, api: api, store: store, redis: srv, down: down, cfg: cfg}
}

// request builds a payload 2.0 event like API Gateway's.
func request(method, path, user string, headers map[string]string) events.APIGatewayV2HTTPRequest {
	h := map[string]string{"content-type": "application/json"}
	if user != "" {
		h["x-user-id"] = user
	}
	for k, v := range headers {
		h[k] = v
	}
	req := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: method + " " + path, RawPath: path, Headers: h}
	req.RequestContext.HTTP.Method = method
	req.RequestContext.HTTP.Path = path
	return req
}

func withRoom(req events.APIGatewayV2HTTPRequest, room string) events.APIGatewayV2HTTPRequest {
	req.QueryStringParameters = map[string]string{"room": room}
	req.RawQueryString = "room=" + room
	return req
}

// call sends req through the router, as the local runner does, and checks
// the exchange against the contract.
func (h *harness) call(req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	return h.checked(req, h.api.Route(context.Background(), req))
}

// checked fails the test when the exchange breaks docs/openapi.yaml, and
// returns resp. Every response a test looks at passes through it.
func (h *harness) checked(req events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse) events.APIGatewayV2HTTPResponse {
	if err := openapitest.Check(exchange(req, resp)); err != nil {
		h.t.Errorf("contract: %v", err) // Errorf: callers may be other goroutines
	}
	return resp
}

// exchange is the HTTP request and response API Gateway would see around
// a payload 2.0 event and the handler's answer.
func exchange(req events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse) openapitest.Exchange {
	query := req.RawQueryString
	if query == "" && len(req.QueryStringParameters) > 0 {
		q := url.Values{}
		for k, v := range req.QueryStringParameters {
			q.Set(k, v)
		}
		query = q.Encode()
	}
	path := req.RawPath
	if path == "" {
		path = req.RequestContext.HTTP.Path
	}
	r := &http.Request{Method: req.RequestContext.HTTP.Method, URL: &url.URL{Path: path, RawQuery: query}, Header: http.Header{}}
	for k, v := range req.Headers {
		r.Header.Set(k, v)
	}
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		if b, err := base64.StdEncoding.DecodeString(req.Body); err == nil {
			body = b
		}
	}
	header := http.Header{}
	for k, v := range resp.Headers {
		header.Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		header[http.CanonicalHeaderKey(k)] = vs
	}
	respBody := []byte(resp.Body)
	if resp.IsBase64Encoded {
		respBody, _ = base64.StdEncoding.DecodeString(resp.Body)
	}
	return openapitest.Exchange{Request: r, RequestBody: body, Status: resp.StatusCode, Header: header, Body: respBody}
}

func (h *harness) enter(user string) events.APIGatewayV2HTTPResponse {
	return h.call(request("POST", "/queue/enter", user, nil))
}

func (h *harness) position(user string) events.APIGatewayV2HTTPResponse {
	return h.call(request("GET", "/queue/position", user, nil))
}

func (h *harness) order(user, token, key, body string) events.APIGatewayV2HTTPResponse {
	hdr := map[string]string{}
	if token != "" {
		hdr["x-entry-token"] = token
	}
	if key != "" {
		hdr["idempotency-key"] = key
	}
	req := request("POST", "/orders", user, hdr)
	req.Body = body
	return h.call(req)
}

// admitted enters users and admits them, returning their tokens.
func (h *harness) admitted(t *testing.T, users ...string) map[string]string {
	t.Helper()
	for _, u := range users {
		if r := h.enter(u); r.StatusCode != 200 {
			t.Fatalf("enter %s: %d %s", u, r.StatusCode, r.Body)
		}
	}
	return h.collectTokens(t, users...)
}

// admitWithin bounds collectTokens: every test admits a handful of users at
// 10 a batch, so a few batches do; a store that never admits them fails the
// test at once instead of hanging it until go test's timeout.
const admitWithin = 10 * time.Second

// collectTokens runs admission batches until every one of users (the ids
// the tests send as X-User-Id, the store's "h:<id>") is admitted, each
// claiming its turn as its next poll would (docs/API.md, "Claiming one's
// turn"; asked of the store, past the API and its identity checks), and
// returns their tokens as the store keeps them.
func (h *harness) collectTokens(t *testing.T, users ...string) map[string]string {
	t.Helper()
	tokens := map[string]string{}
	deadline := time.Now().Add(admitWithin)
	for len(tokens) < len(users) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d users admitted within %v: %v", len(tokens), len(users), admitWithin, tokens)
		}
		if _, err := h.store.AdmitBatch(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, u := range users {
			if tokens[u] != "" {
				continue
			}
			st, err := h.store.Position(context.Background(), waitroom.DefaultRoom, waitroom.Unlimited("h:"+u))
			if err != nil {
				t.Fatal(err)
			}
			if st.Status == waitroom.Ready {
				tokens[u] = st.Token
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return tokens
}

// admitNumbers runs admission batches until n numbers were admitted,
// whoever holds them (their holders claim at their next call).
func (h *harness) admitNumbers(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(admitWithin)
	for admitted := 0; admitted < n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d admitted within %v", admitted, n, admitWithin)
		}
		b, err := h.store.AdmitBatch(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range b.Rooms {
			admitted += len(r.Admitted)
		}
	}
}

func decode(t *testing.T, r events.APIGatewayV2HTTPResponse) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.Body), &m); err != nil {
		t.Fatalf("body is not JSON: %q", r.Body)
	}
	return m
}

// wantError checks status, error code and that a human message is present.
func wantError(t *testing.T, r events.APIGatewayV2HTTPResponse, status int, code string) {
	t.Helper()
	if r.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", r.StatusCode, status, r.Body)
	}
	m := decode(t, r)
	if m["error"] != code || m["message"] == "" || m["message"] == nil {
		t.Fatalf("body %s, want error %q with a message", r.Body, code)
	}
	if r.Headers["Content-Type"] != "application/json" {
		t.Fatalf("content type %q", r.Headers["Content-Type"])
	}
}

func awslambdaOrders(t *testing.T, url string) httpapi.OrderPlacer {
	t.Helper()
	return orderapi.New(url, time.Second)
}
