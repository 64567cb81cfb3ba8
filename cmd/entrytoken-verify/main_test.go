package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/entrytoken"
)

// The command takes a token only for a named room, or for any with
// -any-room said out loud; naming neither is a usage error.
func TestRoomOrAnyRoom(t *testing.T) {
	seed, err := entrytoken.GenerateSeed()
	if err != nil {
		t.Fatal(err)
	}
	ks, err := entrytoken.ParseKeys(seed, "https://queue.test")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(ks.JWKS())
	}))
	defer srv.Close()
	now := time.Now()
	tok, err := ks.Sign(entrytoken.Claims{Subject: "shopper-1", Room: "tv", ID: "AAAAAAAAAAAAAAAAAAAAAA", IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Minute).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		flags []string
		code  int
		out   string
	}{
		{nil, 2, "usage"},
		{[]string{"-room", "tv", "-any-room"}, 2, "usage"},
		{[]string{"-room", "tv"}, 0, `"sub":"shopper-1"`},
		{[]string{"-room", "shoes"}, 1, "wrong room"},
		{[]string{"-any-room"}, 0, `"room":"tv"`},
	} {
		var out bytes.Buffer
		args := append([]string{"-jwks", srv.URL, "-issuer", "https://queue.test"}, c.flags...)
		if code := run(append(args, tok), &out, &out); code != c.code || !strings.Contains(out.String(), c.out) {
			t.Errorf("%v: exit %d, want %d with %q:\n%s", c.flags, code, c.code, c.out, out.String())
		}
	}
}
