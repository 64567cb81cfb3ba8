package httpapi

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
)

// MaxRequestBody is the largest body a self-hosted run (the local runner)
// takes: an order is a few hundred bytes, and a larger body is refused
// before anything routes or authenticates it (LimitBodies). API Gateway
// has its own limit, 10 MB.
const MaxRequestBody = 64 << 10

// bodyReadTimeout bounds reading one request's body: a client trickling
// bytes cannot hold a connection (API Gateway buffers bodies itself).
const bodyReadTimeout = 10 * time.Second

// EventFromHTTP builds the payload 2.0 event API Gateway would send for r.
func EventFromHTTP(r *http.Request, body []byte) events.APIGatewayV2HTTPRequest {
	headers, cookies := headersOf(r)
	query := map[string]string{}
	for name, values := range r.URL.Query() {
		query[name] = strings.Join(values, ",")
	}
	if len(query) == 0 {
		query = nil
	}
	ip, _, _ := net.SplitHostPort(r.RemoteAddr)
	now := time.Now()
	ev := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              r.Method + " " + r.URL.Path,
		RawPath:               r.URL.Path,
		RawQueryString:        r.URL.RawQuery,
		Headers:               headers,
		Cookies:               cookies,
		QueryStringParameters: query,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:   r.Method + " " + r.URL.Path,
			Stage:      "$default",
			RequestID:  strconv.FormatInt(now.UnixNano(), 36),
			DomainName: r.Host,
			Time:       now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:  now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: r.Method, Path: r.URL.Path, Protocol: r.Proto, SourceIP: ip, UserAgent: r.UserAgent(),
			},
		},
	}
	if utf8.Valid(body) {
		ev.Body = string(body)
	} else {
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	return ev
}

// headersOf is r's headers as API Gateway hands them over: names in lower
// case, values joined by commas, cookies apart, and the host among them.
func headersOf(r *http.Request) (headers map[string]string, cookies []string) {
	headers = make(map[string]string, len(r.Header))
	for name, values := range r.Header {
		if name == "Cookie" { // API Gateway moves cookies out of the headers
			for _, v := range values {
				cookies = append(cookies, strings.Split(v, "; ")...)
			}
			continue
		}
		headers[strings.ToLower(name)] = strings.Join(values, ",")
	}
	if r.Host != "" {
		headers["host"] = r.Host
	}
	return headers, cookies
}

// WriteHTTP writes a payload 2.0 response the way API Gateway would.
func WriteHTTP(w http.ResponseWriter, resp events.APIGatewayV2HTTPResponse) {
	for name, value := range resp.Headers {
		w.Header().Set(name, value)
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	for name, values := range resp.MultiValueHeaders {
		for _, v := range values {
			w.Header().Add(name, v)
		}
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if b, err := base64.StdEncoding.DecodeString(resp.Body); err == nil {
			body = b
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// LimitBodies refuses a request whose body is over MaxRequestBody before h
// sees it: by its Content-Length, unread; without one (chunked), by reading
// at most one byte more than the limit, within bodyReadTimeout.
func LimitBodies(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tooLarge := ErrorResponse(waitroom.Errorf(waitroom.EPayloadTooLarge, "the request body is over %d KB", MaxRequestBody>>10))
		if r.ContentLength > MaxRequestBody {
			w.Header().Set("Connection", "close") // the body stays unread
			WriteHTTP(w, tooLarge)
			return
		}
		if r.ContentLength < 0 {
			rc := http.NewResponseController(w)
			_ = rc.SetReadDeadline(time.Now().Add(bodyReadTimeout))
			body, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBody+1))
			_ = rc.SetReadDeadline(time.Time{})
			switch {
			case err != nil:
				WriteHTTP(w, ErrorResponse(waitroom.Errorf(waitroom.EInvalidRequest, "the request body could not be read in time")))
				return
			case len(body) > MaxRequestBody:
				w.Header().Set("Connection", "close")
				WriteHTTP(w, tooLarge)
				return
			}
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		}
		h.ServeHTTP(w, r)
	})
}

// ServeHTTP turns HTTP requests into events for h, as API Gateway does.
func ServeHTTP(h Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(bodyReadTimeout)) // not every writer supports it
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBody))
		_ = rc.SetReadDeadline(time.Time{})
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			WriteHTTP(w, ErrorResponse(waitroom.Errorf(waitroom.EPayloadTooLarge, "the request body is over %d KB", MaxRequestBody>>10)))
			return
		case err != nil:
			WriteHTTP(w, ErrorResponse(waitroom.Errorf(waitroom.EInvalidRequest, "the request body could not be read in time")))
			return
		}
		WriteHTTP(w, h(r.Context(), EventFromHTTP(r, body)))
	})
}
