package entrytoken_test

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/entrytoken"
)

const issuer = "https://queue.shop.example"

func keys(t testing.TB, seeds ...string) entrytoken.Keys {
	t.Helper()
	k, err := entrytoken.ParseKeys(strings.Join(seeds, ","), issuer)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func seed(t testing.TB) string {
	s, err := entrytoken.GenerateSeed()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func claims(now time.Time) entrytoken.Claims {
	return entrytoken.Claims{Subject: "user-4711", Source: "header", Room: "tv-launch", ID: "AAAAAAAAAAAAAAAAAAAAAA", IssuedAt: now.Unix(), ExpiresAt: now.Add(5 * time.Minute).Unix()}
}

func TestSignVerifyAndRefuse(t *testing.T) {
	now := time.Now()
	ks := keys(t, seed(t))
	srv := newJWKS(t, ks)
	v := &entrytoken.Verifier{JWKSURL: srv.URL, Issuer: issuer, Room: "tv-launch"}
	good, err := ks.Sign(claims(now))
	if err != nil {
		t.Fatal(err)
	}
	// ~270 bytes of header, src, jti, times and signature, plus 4/3 of
	// the issuer, sub and room: 335 with this 26-character issuer.
	if len(good) > 340 {
		t.Errorf("token of %d bytes, want at most 340 with these claims", len(good))
	}
	if c, err := v.Verify(context.Background(), good); err != nil || c.Subject != "user-4711" || c.Issuer != issuer {
		t.Fatalf("valid token: %+v %v", c, err)
	}
	expired := claims(now.Add(-time.Hour))
	other := claims(now)
	other.Room = "shoes"
	foreign := keys(t, seed(t))
	forged, _ := foreign.Sign(claims(now))
	wrongIss, _ := entrytoken.Keys{Current: ks.Current, Issuer: "https://evil.example"}.Sign(claims(now))
	exp, _ := ks.Sign(expired)
	room, _ := ks.Sign(other)
	parts := strings.Split(good, ".")
	b64 := base64.RawURLEncoding
	none := b64.EncodeToString([]byte(`{"alg":"none","kid":"`+ks.Current.ID+`"}`)) + "." + parts[1] + "."
	hsInput := b64.EncodeToString([]byte(`{"alg":"HS256","kid":"`+ks.Current.ID+`"}`)) + "." + parts[1]
	mac := hmac.New(sha256.New, ks.Current.Public()) // key confusion: the public key as an HMAC secret
	mac.Write([]byte(hsInput))
	hs256 := hsInput + "." + b64.EncodeToString(mac.Sum(nil))
	tampered := parts[0] + "." + b64.EncodeToString([]byte(`{"iss":"`+issuer+`","sub":"admin","room":"tv-launch","jti":"x","iat":1,"exp":9999999999}`)) + "." + parts[2]
	for name, c := range map[string]struct {
		token string
		want  error
	}{
		"expired":         {exp, entrytoken.ErrExpired},
		"wrong room":      {room, entrytoken.ErrRoom},
		"wrong issuer":    {wrongIss, entrytoken.ErrIssuer},
		"foreign key":     {forged, entrytoken.ErrUnknownKey},
		"alg none":        {none, entrytoken.ErrAlgorithm},
		"HS256 confusion": {hs256, entrytoken.ErrAlgorithm},
		"tampered claims": {tampered, entrytoken.ErrSignature},
		"garbage":         {"a.b", entrytoken.ErrMalformed},
		"empty":           {"", entrytoken.ErrMalformed},
	} {
		if _, err := v.Verify(context.Background(), c.token); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

// A rotation: tokens of the previous key stay valid, tokens of the new key
// are accepted as soon as the JWKS is fetched again (an unknown kid
// triggers it, at most once per MinRefresh).
func TestRotation(t *testing.T) {
	now := time.Now()
	oldSeed, newSeed := seed(t), seed(t)
	before := keys(t, oldSeed)
	srv := newJWKS(t, before)
	v := &entrytoken.Verifier{JWKSURL: srv.URL, Issuer: issuer, Room: "tv-launch", MinRefresh: time.Nanosecond}
	oldToken, _ := before.Sign(claims(now))
	if _, err := v.Verify(context.Background(), oldToken); err != nil {
		t.Fatal(err)
	}
	after := keys(t, newSeed, oldSeed)
	srv.keys.Store(&after)
	newToken, _ := after.Sign(claims(now))
	for _, tok := range []string{newToken, oldToken} {
		if _, err := v.Verify(context.Background(), tok); err != nil {
			t.Fatalf("after rotation: %v", err)
		}
	}
	if n := srv.fetches.Load(); n != 2 {
		t.Fatalf("%d JWKS fetches, want 2 (first use, unknown kid)", n)
	}
}

func TestParseKeys(t *testing.T) {
	s := seed(t)
	for _, bad := range []string{"x", "AAAA", s + "," + s, s + "," + s + "," + s} {
		if _, err := entrytoken.ParseKeys(bad, issuer); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The gate's own check, Keys.Verify, refuses a token of another issuer
// signed with the same key, as the shops' Verifier does.
func TestKeysVerifyChecksTheIssuer(t *testing.T) {
	now := time.Now()
	ks := keys(t, seed(t))
	good, err := ks.Sign(claims(now))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ks.Verify(good, now); err != nil {
		t.Fatalf("own token: %v", err)
	}
	wrongIss, err := entrytoken.Keys{Current: ks.Current, Issuer: "https://evil.example"}.Sign(claims(now))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ks.Verify(wrongIss, now); !errors.Is(err, entrytoken.ErrIssuer) {
		t.Fatalf("another issuer's token: %v, want %v", err, entrytoken.ErrIssuer)
	}
}

// The public keys of a seed (Keys.PublicKeys, ENTRY_TOKEN_PUBLIC_KEYS)
// verify what the seed signs, under the same key ids, during a rotation
// too, and publish the same JWKS; they never sign.
func TestPublicKeysVerifyButNeverSign(t *testing.T) {
	now := time.Now()
	current, previous := seed(t), seed(t)
	signer := keys(t, current, previous)
	public, err := entrytoken.ParsePublicKeys(signer.PublicKeys(), issuer)
	if err != nil {
		t.Fatal(err)
	}
	if !public.Enabled() || public.CanSign() || !signer.CanSign() {
		t.Fatalf("public keys: Enabled %v CanSign %v; seeds CanSign %v", public.Enabled(), public.CanSign(), signer.CanSign())
	}
	if _, err := public.Sign(claims(now)); !errors.Is(err, entrytoken.ErrVerifyOnly) {
		t.Errorf("public keys signed: %v", err)
	}
	old, err := keys(t, previous).Sign(claims(now))
	if err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{"current": mustSign(t, signer, now), "previous": old} {
		if c, err := public.Verify(tok, now); err != nil || c.Subject != "user-4711" {
			t.Errorf("%s key's token with the public keys: %+v %v", name, c, err)
		}
	}
	if js(t, public.JWKS()) != js(t, signer.JWKS()) || public.PublicKeys() != signer.PublicKeys() {
		t.Errorf("public keys publish %s, the seeds %s", js(t, public.JWKS()), js(t, signer.JWKS()))
	}
	for _, bad := range []string{current + "x", base64.StdEncoding.EncodeToString(make([]byte, 31)), "a,b,c"} {
		if _, err := entrytoken.ParsePublicKeys(bad, issuer); err == nil {
			t.Errorf("ParsePublicKeys(%q) took it", bad)
		}
	}
	if none, err := entrytoken.ParsePublicKeys(" ", issuer); err != nil || none.Enabled() {
		t.Errorf("empty: %+v %v", none, err)
	}
}

func mustSign(t *testing.T, k entrytoken.Keys, now time.Time) string {
	t.Helper()
	tok, err := k.Sign(claims(now))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func js(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Issue 37: a token's expiry to the nanosecond: valid until its exp plus
// the leeway, refused from that instant on.
func TestExpiryToTheInstant(t *testing.T) {
	ks := keys(t, seed(t))
	now := time.Unix(1_800_000_000, 0)
	token, err := ks.Sign(claims(now))
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(kid string) (ed25519.PublicKey, bool) { return ks.Current.Public(), kid == ks.Current.ID }
	exp := now.Add(5 * time.Minute)
	for _, leeway := range []time.Duration{0, 30 * time.Second} {
		if _, err := entrytoken.Parse(token, lookup, exp.Add(leeway-time.Nanosecond), leeway); err != nil {
			t.Errorf("leeway %v, a nanosecond before exp + leeway: %v; want valid", leeway, err)
		}
		if _, err := entrytoken.Parse(token, lookup, exp.Add(leeway), leeway); !errors.Is(err, entrytoken.ErrExpired) {
			t.Errorf("leeway %v, at exp + leeway: %v; want %v", leeway, err, entrytoken.ErrExpired)
		}
	}
}
