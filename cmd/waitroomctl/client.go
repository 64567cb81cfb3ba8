package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
)

// requestTimeout bounds one call: an operator wants an answer, not a hang.
const requestTimeout = 10 * time.Second

// client calls the admin API with a bearer token or a SigV4 signature.
type client struct {
	base   string
	token  string
	http   *http.Client
	creds  aws.CredentialsProvider // with --aws
	region string
}

func newClient(ctx context.Context, o options, hc *http.Client) (*client, error) {
	u, err := url.Parse(o.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--url %q is not an http(s) URL", o.url)
	}
	c := &client{base: strings.TrimSuffix(o.url, "/"), token: o.token, http: hc}
	if !o.aws {
		if c.token == "" {
			return nil, errors.New("no admin token: set --token or WAITROOM_ADMIN_TOKEN (the local runner prints one at start), or use --aws")
		}
		if !private(u) {
			return nil, fmt.Errorf("--url %s is plain http to another host, where anyone on the way could read the admin token: use https://, or http:// to this machine (localhost, 127.0.0.1, [::1])", c.base)
		}
		c.http = noPlainRedirects(hc)
		return c, nil
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("AWS credentials: %w", err)
	}
	c.creds, c.region = cfg.Credentials, cfg.Region
	if c.region == "" { // https://{api}.execute-api.{region}.amazonaws.com
		if parts := strings.Split(u.Hostname(), "."); len(parts) > 3 && parts[1] == "execute-api" {
			c.region = parts[2]
		}
	}
	if c.region == "" {
		return nil, errors.New("--aws needs a region: set AWS_REGION")
	}
	return c, nil
}

// private reports whether the token sent to u stays private: https, or
// http to this machine.
func private(u *url.URL) bool { return u.Scheme == "https" || loopbackHost(u.Hostname()) }

// noPlainRedirects is hc refusing to follow a redirect that would carry the
// token over plain http to another host (Go's client keeps Authorization
// on a redirect to the same host, whatever its scheme).
func noPlainRedirects(hc *http.Client) *http.Client {
	c := *hc
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !private(req.URL) {
			return fmt.Errorf("refused the redirect to %s: plain http to another host would carry the admin token", req.URL.Redacted())
		}
		if len(via) >= 10 { // net/http's own limit
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &c
}

// loopbackHost reports whether host is this machine: localhost or a
// loopback address, where plain http never leaves the machine.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && addr.Unmap().IsLoopback()
}

// apiError is the admin API's error body.
type apiError struct {
	Status  int
	Code    string `json:"error"`
	Message string `json:"message"`
}

func (e *apiError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("the server answered HTTP %d", e.Status)
	}
	return fmt.Sprintf("%s (%s, HTTP %d)", e.Message, e.Code, e.Status)
}

func (c *client) get(ctx context.Context, path string) ([]byte, error) {
	return c.send(ctx, http.MethodGet, path, nil)
}

// set creates the room with the given settings (PUT: the others take the
// defaults), or, when it exists, changes only those (PATCH).
func (c *client) set(ctx context.Context, room string, settings map[string]any) ([]byte, error) {
	body, err := json.Marshal(settings)
	if err != nil {
		return nil, err
	}
	_, err = c.get(ctx, "/admin/rooms/"+room)
	var ae *apiError
	if errors.As(err, &ae) && ae.Code == "room_not_found" {
		return c.send(ctx, http.MethodPut, "/admin/rooms/"+room, body)
	}
	if err != nil {
		return nil, err
	}
	return c.send(ctx, http.MethodPatch, "/admin/rooms/"+room, body)
}

// send makes one call and returns the body of a 2xx, or the error.
func (c *client) send(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if err := c.authorize(ctx, req, body); err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach %s: %w", c.base, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the answer of %s: %w", c.base, err)
	}
	if resp.StatusCode/100 != 2 {
		ae := &apiError{Status: resp.StatusCode}
		if json.Unmarshal(out, ae) != nil || ae.Message == "" { // API Gateway's own {"message":…}
			var gw struct{ Message string }
			_ = json.Unmarshal(out, &gw)
			ae.Message = gw.Message
		}
		return nil, ae
	}
	return out, nil
}

func (c *client) authorize(ctx context.Context, req *http.Request, body []byte) error {
	if c.creds == nil {
		req.Header.Set("Authorization", "Bearer "+c.token)
		return nil
	}
	creds, err := c.creds.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("AWS credentials: %w", err)
	}
	sum := sha256.Sum256(body)
	return v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "execute-api", c.region, time.Now())
}
