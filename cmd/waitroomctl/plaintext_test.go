package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// redirects answers every https request with a redirect to the same URL
// over plain http, and records what it was sent.
type redirects struct{ urls []string }

func (s *redirects) RoundTrip(r *http.Request) (*http.Response, error) {
	s.urls = append(s.urls, r.URL.String())
	if r.URL.Scheme != "https" {
		return nil, errors.New("no network in this test")
	}
	plain := *r.URL
	plain.Scheme = "http"
	h := http.Header{"Location": {plain.String()}}
	return &http.Response{StatusCode: http.StatusFound, Header: h, Body: http.NoBody, Request: r}, nil
}

// An https URL that redirects to plain http is not followed: Go's client
// would send the token again to the same host, in the clear.
func TestAdminTokenNotFollowedToPlainHTTP(t *testing.T) {
	rt := &redirects{}
	var out, errOut bytes.Buffer
	vars := map[string]string{"WAITROOM_URL": "https://waitroom.example.com", "WAITROOM_ADMIN_TOKEN": "ctl-test-admin-token-0123456789"}
	code := run(context.Background(), []string{"rooms"}, env{stdout: &out, stderr: &errOut,
		getenv: func(k string) string { return vars[k] }, http: &http.Client{Transport: rt}})
	if len(rt.urls) != 1 || code != exitFailed || !strings.Contains(errOut.String(), "refused the redirect") {
		t.Fatalf("sent %v, code %d, stderr %q; want one https request and the redirect refused", rt.urls, code, errOut.String())
	}
}

// sentNothing is a transport that records every request and answers none:
// what waitroomctl would have put on the wire.
type sentNothing struct{ urls []string }

func (s *sentNothing) RoundTrip(r *http.Request) (*http.Response, error) {
	s.urls = append(s.urls, r.URL.String())
	return nil, errors.New("no network in this test")
}

// Issue 32: waitroomctl sent the admin token over plain http:// to any
// host, where anyone on the path reads it. It refuses now, before sending
// anything, unless the host is this machine (loopback) or the URL is https.
func TestAdminTokenNeverInPlainTextToAnotherHost(t *testing.T) {
	for _, c := range []struct {
		url  string
		sent bool
	}{
		{"http://waitroom.example.com", false},
		{"http://203.0.113.7:8080", false},
		{"http://[2001:db8::1]:8080/", false},
		{"HTTP://waitroom.example.com", false},
		{"http://127.0.0.1.example.com", false},
		{"http://127.0.0.1:8080", true},
		{"http://127.9.9.9:8080", true},
		{"http://localhost:8080", true},
		{"http://[::1]:8080", true},
		{"https://waitroom.example.com", true},
	} {
		rt := &sentNothing{}
		var out, errOut bytes.Buffer
		vars := map[string]string{"WAITROOM_URL": c.url, "WAITROOM_ADMIN_TOKEN": "ctl-test-admin-token-0123456789"}
		code := run(context.Background(), []string{"rooms"}, env{stdout: &out, stderr: &errOut,
			getenv: func(k string) string { return vars[k] }, http: &http.Client{Transport: rt}})
		if sent := len(rt.urls) > 0; sent != c.sent {
			t.Errorf("%s: sent %v (%v), want sent %v; stderr %q", c.url, sent, rt.urls, c.sent, errOut.String())
		}
		if !c.sent && (code != exitFailed || !strings.Contains(errOut.String(), "https") || strings.Count(errOut.String(), "\n") != 1) {
			t.Errorf("%s: code %d, stderr %q; want one line saying to use https", c.url, code, errOut.String())
		}
	}
}
