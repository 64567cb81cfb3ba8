// Package entrytoken issues and verifies Waitroom's entry tokens: compact
// JWS (RFC 7515) signed with Ed25519 (alg "EdDSA", RFC 8037), with a key id
// in the header and the claims iss, sub, room, jti, iat and exp. The
// waiting room signs them with Keys; an origin verifies them offline with
// a Verifier that fetches the room's JWKS (GET /.well-known/jwks.json).
//
// Only the standard library (and b64url, the module's one strict
// base64url) is used: the one algorithm accepted is fixed,
// so "alg":"none" and HS256 key confusion (an HMAC keyed with the public
// key) are refused before any key is looked at.
package entrytoken

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/waitroom/waitroom/b64url"
)

// Alg is the one JWS algorithm of entry tokens.
const Alg = "EdDSA"

// MaxTokenLength bounds what is parsed at all: real tokens are ~300 bytes.
const MaxTokenLength = 2048

// Claims are an entry token's claims.
type Claims struct {
	Issuer    string `json:"iss"`
	Subject   string `json:"sub"`           // the user or visitor id, as its source gave it
	Source    string `json:"src,omitempty"` // where sub comes from: authorizer, header or visitor
	Room      string `json:"room"`          // the room whose line the holder waited in
	ID        string `json:"jti"`           // single use: the gate consumes it
	IssuedAt  int64  `json:"iat"`           // Unix seconds
	ExpiresAt int64  `json:"exp"`           // Unix seconds
}

// Expires is exp as a time.
func (c Claims) Expires() time.Time { return time.Unix(c.ExpiresAt, 0) }

// Errors of Parse and Verify; wrapped with details.
var (
	ErrMalformed  = errors.New("entrytoken: malformed token")
	ErrAlgorithm  = errors.New("entrytoken: algorithm is not EdDSA")
	ErrUnknownKey = errors.New("entrytoken: unknown key id")
	ErrSignature  = errors.New("entrytoken: bad signature")
	ErrExpired    = errors.New("entrytoken: expired")
	ErrIssuer     = errors.New("entrytoken: wrong issuer")
	ErrRoom       = errors.New("entrytoken: wrong room")
)

type header struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
}

// sign returns the compact JWS of claims under key.
func sign(key *Key, c Claims) (string, error) {
	h, err := json.Marshal(header{Alg: Alg, Kid: key.ID})
	if err != nil {
		return "", err
	}
	p, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	input := b64url.Encode(h) + "." + b64url.Encode(p)
	return input + "." + b64url.Encode(ed25519.Sign(key.private, []byte(input))), nil
}

// Parse checks token's form, algorithm and signature with the key that
// lookup finds for its kid, then its expiry at now (with leeway for clock
// skew), and returns its claims. Issuer and room are the caller's to check.
func Parse(token string, lookup func(kid string) (ed25519.PublicKey, bool), now time.Time, leeway time.Duration) (Claims, error) {
	if len(token) > MaxTokenLength {
		return Claims{}, fmt.Errorf("%w: %d bytes", ErrMalformed, len(token))
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return Claims{}, fmt.Errorf("%w: %d parts", ErrMalformed, len(parts))
	}
	var h header
	if err := decodePart(parts[0], &h); err != nil {
		return Claims{}, err
	}
	if h.Alg != Alg {
		return Claims{}, fmt.Errorf("%w: %q", ErrAlgorithm, h.Alg)
	}
	pub, ok := lookup(h.Kid)
	if !ok || len(pub) != ed25519.PublicKeySize {
		return Claims{}, fmt.Errorf("%w: %q", ErrUnknownKey, h.Kid)
	}
	sig, err := b64url.Decode(parts[2])
	if err != nil || len(sig) != ed25519.SignatureSize {
		return Claims{}, fmt.Errorf("%w: signature encoding", ErrMalformed)
	}
	if !ed25519.Verify(pub, []byte(parts[0]+"."+parts[1]), sig) {
		return Claims{}, ErrSignature
	}
	var c Claims
	if err := decodePart(parts[1], &c); err != nil {
		return Claims{}, err
	}
	if c.ID == "" || c.Subject == "" || c.Room == "" || c.ExpiresAt == 0 {
		return Claims{}, fmt.Errorf("%w: a claim of sub, room, jti, exp is missing", ErrMalformed)
	}
	if !now.Before(c.Expires().Add(leeway)) {
		return Claims{}, ErrExpired
	}
	return c, nil
}

// decodePart decodes one base64url JSON part strictly: unknown shapes fail.
func decodePart(part string, v any) error {
	raw, err := b64url.Decode(part)
	if err != nil {
		return fmt.Errorf("%w: base64", ErrMalformed)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: trailing data", ErrMalformed)
	}
	return nil
}
