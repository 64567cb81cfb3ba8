// Package orderapi forwards admitted users' orders to the downstream order
// API over HTTP, with the gate's timeout.
package orderapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/waitroom/waitroom"
)

// maxAnswer bounds how much of a downstream answer is read and kept.
const maxAnswer = 1 << 20

// Request is one order on its way downstream.
type Request struct {
	User string // X-User-Id: the id as its source gave it
	// The gate's word on the token, so that the shop can check the product
	// against the room and take each token once (docs/API.md, POST /orders).
	Room           string // X-Waitroom-Room
	WaitroomUser   string // X-Waitroom-User: the user in its source's namespace
	TokenID        string // X-Waitroom-Token-Id: the token's jti
	IdempotencyKey string
	ContentType    string
	Body           []byte
	// Headers are the caller's headers passed on (Authorization and
	// ORDER_FORWARD_HEADERS); the gate's own headers are set after them.
	Headers http.Header
}

// Client posts orders to BaseURL + "/orders".
type Client struct {
	BaseURL string
	Timeout time.Duration
	HTTP    *http.Client
}

// New returns a client with its own connection pool.
func New(baseURL string, timeout time.Duration) *Client {
	return &Client{
		BaseURL: strings.TrimRight(baseURL, "/"),
		Timeout: timeout,
		HTTP: &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
		}},
	}
}

// PlaceOrder forwards the order. Any answer the downstream gives, 2xx or
// not, is returned as is; only an unreachable or slow downstream is an error
// (EOrderUpstream, EOrderTimeout).
func (c *Client) PlaceOrder(ctx context.Context, r Request) (waitroom.StoredAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+"/orders", bytes.NewReader(r.Body))
	if err != nil {
		return waitroom.StoredAnswer{}, &waitroom.Error{Code: waitroom.EOrderUpstream, Message: "the order service cannot be reached", Err: err}
	}
	for name, values := range r.Headers {
		req.Header[name] = values
	}
	ct := r.ContentType
	if ct == "" {
		ct = "application/json"
	}
	req.Header.Set("Content-Type", ct)
	req.Header.Set("X-User-Id", r.User)
	for name, v := range map[string]string{"X-Waitroom-Room": r.Room, "X-Waitroom-User": r.WaitroomUser, "X-Waitroom-Token-Id": r.TokenID} {
		if v != "" {
			req.Header.Set(name, v)
		}
	}
	if r.IdempotencyKey != "" {
		req.Header.Set("Idempotency-Key", r.IdempotencyKey)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return waitroom.StoredAnswer{}, classify(ctx, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return waitroom.StoredAnswer{}, classify(ctx, err)
	}
	return waitroom.StoredAnswer{Status: resp.StatusCode, Body: string(body), ContentType: resp.Header.Get("Content-Type")}, nil
}

func classify(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return &waitroom.Error{Code: waitroom.EOrderTimeout, Message: "the order service did not answer in time; your entry token is kept, please retry", Err: err}
	}
	return &waitroom.Error{Code: waitroom.EOrderUpstream, Message: "the order service cannot be reached; your entry token is kept, please retry", Err: err}
}
