// Package openapitest checks HTTP exchanges against docs/openapi.yaml, so
// that tests fail when a handler answers something the contract does not
// describe. The handler tests and the local runner's tests pass every
// request and response they exchange through it.
//
// An exchange passes when:
//   - its path and method are in the contract and the response is one the
//     operation documents (status, headers, Content-Type, body schema);
//     undocumented statuses fail;
//   - or the path is not in the contract and the answer is the documented
//     404 not_found, or the method is not and the answer is the documented
//     405 method_not_allowed with Allow;
//   - and a request the contract rejects (a bad room, a missing entry token,
//     an over-long Idempotency-Key, ...) is answered with a 4xx: bad input
//     gets a clear refusal, never a success or a 5xx.
package openapitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/waitroom/waitroom/docs"
)

// Exchange is one request and the response it got.
type Exchange struct {
	Request     *http.Request // method, URL and headers; its Body is not read
	RequestBody []byte
	Status      int
	Header      http.Header
	Body        []byte
}

// Contract is a loaded OpenAPI description.
type Contract struct {
	doc    *openapi3.T
	router routers.Router
}

// Load parses and validates an OpenAPI 3.1 document.
func Load(spec []byte) (*Contract, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(spec)
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("openapi: invalid document: %w", err)
	}
	// Tests serve on any port: match paths, not the documented servers.
	doc.Servers = nil
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	return &Contract{doc: doc, router: router}, nil
}

// project is docs/openapi.yaml, loaded once per test binary.
var project = sync.OnceValues(func() (*Contract, error) { return Load(docs.OpenAPI) })

// Project returns the project's contract, docs/openapi.yaml.
func Project() (*Contract, error) { return project() }

// Check checks one exchange against the project's contract.
func Check(ex Exchange) error {
	c, err := project()
	if err != nil {
		return err
	}
	return c.Check(ex)
}

// Check checks one exchange; the error says what the contract does not allow.
func (c *Contract) Check(ex Exchange) error {
	ctx := context.Background()
	req := ex.Request.Clone(ctx)
	req.Body = io.NopCloser(bytes.NewReader(ex.RequestBody))
	req.ContentLength = int64(len(ex.RequestBody))
	opts := &openapi3filter.Options{
		IncludeResponseStatus: true, // an undocumented status is a breach
		SkipSettingDefaults:   true,
		MultiError:            true,
		// Identity is the handler's business (401 when absent); the
		// contract checks the answer it gives.
		AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
	}
	where := fmt.Sprintf("%s %s → %d", ex.Request.Method, ex.Request.URL.RequestURI(), ex.Status)

	route, params, err := c.router.FindRoute(req)
	var reqErr error
	switch {
	case isRouteError(err, routers.ErrPathNotFound) && c.otherMethod(req):
		route = c.unrouted(http.StatusMethodNotAllowed, "MethodNotAllowed")
	case isRouteError(err, routers.ErrPathNotFound):
		route = c.unrouted(http.StatusNotFound, "NotFound")
	case isRouteError(err, routers.ErrMethodNotAllowed):
		route = c.unrouted(http.StatusMethodNotAllowed, "MethodNotAllowed")
	case err != nil:
		return fmt.Errorf("%s: %w", where, err)
	default:
		reqErr = openapi3filter.ValidateRequest(ctx, &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route, Options: opts,
		})
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: ex.Status, Header: ex.Header, Options: opts}
	out.SetBodyBytes(ex.Body)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return fmt.Errorf("%s: the response breaks docs/openapi.yaml: %w\nbody: %s", where, err, ex.Body)
	}
	if reqErr != nil && (ex.Status < 400 || ex.Status > 499) {
		return fmt.Errorf("%s: the request breaks docs/openapi.yaml (%v), so it must be refused with a 4xx", where, reqErr)
	}
	return nil
}

// unrouted is a route whose only answer is the named response of
// components/responses: what the contract says of unlisted paths and methods.
func (c *Contract) unrouted(status int, name string) *routers.Route {
	op := &openapi3.Operation{Responses: openapi3.NewResponses(openapi3.WithStatus(status, c.doc.Components.Responses[name]))}
	return &routers.Route{Spec: c.doc, PathItem: &openapi3.PathItem{}, Operation: op}
}

// otherMethod reports whether req's path is in the contract under another
// method: the legacy router says "path not found" for a templated path
// (/admin/rooms/{room}) whose method is not listed.
func (c *Contract) otherMethod(req *http.Request) bool {
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if m == req.Method {
			continue
		}
		other := req.Clone(req.Context())
		other.Method = m
		if _, _, err := c.router.FindRoute(other); err == nil {
			return true
		}
	}
	return false
}

func isRouteError(err, want error) bool {
	var re *routers.RouteError
	return errors.As(err, &re) && re.Reason == want.Error()
}

// Client returns an HTTP client whose every exchange is checked against the
// project's contract; a breach fails t (from any goroutine).
func Client(t testing.TB) *http.Client {
	return &http.Client{Transport: &transport{t: t, base: http.DefaultTransport}}
}

type transport struct {
	t    testing.TB
	base http.RoundTripper
}

func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		reqBody = b
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	resp, err := tr.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err := Check(Exchange{Request: req, RequestBody: reqBody, Status: resp.StatusCode, Header: resp.Header, Body: body}); err != nil {
		tr.t.Errorf("contract: %v", err)
	}
	return resp, nil
}
