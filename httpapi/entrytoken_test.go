package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/entrytoken"
	"github.com/waitroom/waitroom/httpapi"
	"github.com/waitroom/waitroom/internal/redistest"
)

func signingHarness(t *testing.T, engine redistest.Engine) *harness {
	t.Helper()
	seed, err := entrytoken.GenerateSeed()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := entrytoken.ParseKeys(seed, "https://queue.test")
	if err != nil {
		t.Fatal(err)
	}
	return newHarness(t, engine, func(c *waitroom.Config) { c.Trust.EntryTokens = keys })
}

// readyToken is the entry token a READY user is shown.
func readyToken(t *testing.T, h *harness, user string) string {
	t.Helper()
	m := decode(t, h.position(user))
	tok, _ := m["entryToken"].(string)
	if m["status"] != "READY" || strings.Count(tok, ".") != 2 {
		t.Fatalf("position of %s: %v", user, m)
	}
	return tok
}

// An origin verifies the token the user was shown with the JWKS the
// waiting room publishes, over HTTP; the gate takes it once.
func TestSignedEntryTokens(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := signingHarness(t, engine)
		h.admitted(t, "alice", "bob")
		tok := readyToken(t, h, "alice")

		jwks := h.call(request("GET", httpapi.JWKSPath, "", nil))
		if jwks.StatusCode != 200 || jwks.Headers["Cache-Control"] != "public, max-age=300" {
			t.Fatalf("JWKS: %d %v %s", jwks.StatusCode, jwks.Headers, jwks.Body)
		}
		srv := httptest.NewServer(httpapi.ServeHTTP(h.api.WithJWKS(h.api.Position)))
		defer srv.Close()
		v := &entrytoken.Verifier{JWKSURL: srv.URL + httpapi.JWKSPath, Issuer: "https://queue.test", Room: "default"}
		c, err := v.Verify(context.Background(), tok)
		if err != nil || c.Subject != "alice" || c.Room != "default" || c.ID == "" {
			t.Fatalf("origin verification: %+v %v", c, err)
		}

		wantError(t, h.order("bob", tok, "", "{}"), 403, "entry_token_invalid") // alice's token
		if r := h.order("alice", tok, "", "{}"); r.StatusCode != 201 {
			t.Fatalf("order: %d %s", r.StatusCode, r.Body)
		}
		wantError(t, h.order("alice", tok, "", "{}"), 403, "entry_token_invalid") // single use by jti
		if n := h.down.calls.Load(); n != 1 {
			t.Fatalf("%d downstream calls, want 1", n)
		}
	})
}

// A token that does not verify is refused before any store call: with the
// store stopped the answer is still 403, not 503.
func TestForgedTokenCostsNoStoreCall(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := signingHarness(t, engine)
		tokens := h.admitted(t, "alice", "bob")
		good := readyToken(t, h, "alice")
		bobs := readyToken(t, h, "bob") // valid, signed, but not alice's
		otherSeed, _ := entrytoken.GenerateSeed()
		other, _ := entrytoken.ParseKeys(otherSeed, "https://queue.test")
		c := entrytoken.Claims{Subject: "alice", Room: "default", ID: strings.TrimPrefix(tokens["alice"], "default."), ExpiresAt: 1 << 40}
		forged, _ := other.Sign(c)
		parts := strings.Split(good, ".")
		h.redis.Stop()
		for name, tok := range map[string]string{
			"foreign key":   forged,
			"bob's token":   bobs,
			"opaque token":  tokens["alice"],
			"alg none":      "eyJhbGciOiJub25lIn0." + parts[1] + ".",
			"bad signature": parts[0] + "." + parts[1] + "." + strings.Repeat("A", 86),
			"empty":         "",
		} {
			r := h.order("alice", tok, "", "{}")
			if r.StatusCode != http.StatusForbidden {
				t.Errorf("%s: %d %s", name, r.StatusCode, r.Body)
			}
		}
	})
}

// Every answer for one admission carries the very same token, whenever it
// is asked for: iat is the admission (kept in the store's record), not the
// time of the answer, and Ed25519 signatures are deterministic.
func TestReadyAnswersCarryTheSameToken(t *testing.T) {
	t.Parallel() // sleeps a second; its bounds are read from the clock around it (own store)
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := signingHarness(t, engine)
		admitted := time.Now().Truncate(time.Second)
		h.admitted(t, "alice")
		first := readyToken(t, h, "alice")
		time.Sleep(1100 * time.Millisecond) // the next answer comes a second later
		if again := readyToken(t, h, "alice"); again != first {
			t.Fatalf("the token changed between two answers:\n%s\n%s", first, again)
		}
		if again := decode(t, h.enter("alice"))["entryToken"]; again != first {
			t.Fatalf("enter's READY answer carries another token: %v", again)
		}
		c, err := h.cfg.Trust.EntryTokens.Verify(first, time.Now())
		if err != nil || c.IssuedAt < admitted.Unix() || c.IssuedAt > time.Now().Unix() {
			t.Fatalf("iat %d, admitted at %d: %v", c.IssuedAt, admitted.Unix(), err)
		}
	})
}
