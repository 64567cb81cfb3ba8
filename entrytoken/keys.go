package entrytoken

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/waitroom/waitroom/b64url"
)

// Key is one Ed25519 key and its id (derived from the public key, so that
// operators rotate by changing the seed alone). A key made of a public key
// alone (NewPublicKey) verifies and never signs: the order gate holds such
// keys, so that a process that only checks tokens cannot mint them.
type Key struct {
	ID      string
	private ed25519.PrivateKey // nil for a verify-only key
	public  ed25519.PublicKey
}

// String and LogValue name the key by its id only: a key printed or
// logged by accident never shows its private half.
func (k *Key) String() string { return "entrytoken.Key(" + k.ID + ")" }

// LogValue implements slog.LogValuer.
func (k *Key) LogValue() slog.Value { return slog.StringValue(k.String()) }

// Public is the key's public half.
func (k *Key) Public() ed25519.PublicKey { return k.public }

// NewKey makes a key of a 32-byte Ed25519 seed.
func NewKey(seed []byte) (*Key, error) {
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("an Ed25519 seed is %d bytes, got %d", ed25519.SeedSize, len(seed))
	}
	priv := ed25519.NewKeyFromSeed(seed)
	k := publicKey(priv.Public().(ed25519.PublicKey))
	k.private = priv
	return k, nil
}

// NewPublicKey makes a verify-only key of a 32-byte Ed25519 public key.
func NewPublicKey(pub []byte) (*Key, error) {
	if len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("an Ed25519 public key is %d bytes, got %d", ed25519.PublicKeySize, len(pub))
	}
	return publicKey(append(ed25519.PublicKey(nil), pub...)), nil
}

// publicKey names pub by the first 6 bytes of its SHA-256: a seed and its
// public key alone get the same id, so that tokens signed with the one
// verify with the other.
func publicKey(pub ed25519.PublicKey) *Key {
	sum := sha256.Sum256(pub)
	return &Key{ID: b64url.Encode(sum[:6]), public: pub}
}

// Keys sign with Current and publish Current and Previous: a rotation
// makes the new key current and the old one previous for at least one
// token TTL plus the JWKS cache time, so that no live token loses its key.
type Keys struct {
	Current  *Key
	Previous *Key // nil when no rotation is under way
	Issuer   string
}

// ParseKeys reads ENTRY_TOKEN_KEYS: a base64 32-byte seed, or
// "current,previous" during a rotation. Empty means no keys (Enabled false).
func ParseKeys(s, issuer string) (Keys, error) { return parseKeys(s, issuer, NewKey) }

// ParsePublicKeys reads ENTRY_TOKEN_PUBLIC_KEYS: the base64 32-byte Ed25519
// public key of each seed of ENTRY_TOKEN_KEYS, in the same order
// ("current,previous" during a rotation; Keys.PublicKeys writes it). The
// keys verify and publish, never sign (CanSign false).
func ParsePublicKeys(s, issuer string) (Keys, error) { return parseKeys(s, issuer, NewPublicKey) }

// parseKeys reads one or two base64 keys, current first, each made by newKey.
func parseKeys(s, issuer string, newKey func([]byte) (*Key, error)) (Keys, error) {
	if strings.TrimSpace(s) == "" {
		return Keys{Issuer: issuer}, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > 2 {
		return Keys{}, fmt.Errorf("holds %d keys; at most two, current first then previous", len(parts))
	}
	var keys []*Key
	for i, p := range parts {
		raw, err := decodeBase64(strings.TrimSpace(p))
		if err != nil {
			return Keys{}, fmt.Errorf("key %d: %w", i+1, err)
		}
		k, err := newKey(raw)
		if err != nil {
			return Keys{}, fmt.Errorf("key %d: %w", i+1, err)
		}
		keys = append(keys, k)
	}
	ks := Keys{Current: keys[0], Issuer: issuer}
	if len(keys) == 2 {
		if keys[1].ID == keys[0].ID {
			return Keys{}, errors.New("the previous key is the current key")
		}
		ks.Previous = keys[1]
	}
	return ks, nil
}

// GenerateSeed returns a fresh ENTRY_TOKEN_KEYS value (one key).
func GenerateSeed() (string, error) {
	var b [ed25519.SeedSize]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b[:]), nil
}

func decodeBase64(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

// Enabled reports whether entry tokens are JWTs: there is a key to verify
// them with (and, unless the keys are public only, to sign them).
func (k Keys) Enabled() bool { return k.Current != nil }

// CanSign reports whether the current key has its private half.
func (k Keys) CanSign() bool { return k.Current != nil && k.Current.private != nil }

// ErrVerifyOnly is Sign's error for keys made of public keys alone.
var ErrVerifyOnly = errors.New("entrytoken: these keys are public keys alone: they verify, signing needs the seed")

// Sign issues a token for claims (Issuer is set from the keys).
func (k Keys) Sign(c Claims) (string, error) {
	switch {
	case !k.Enabled():
		return "", errors.New("entrytoken: no signing key")
	case !k.CanSign():
		return "", ErrVerifyOnly
	}
	c.Issuer = k.Issuer
	return sign(k.Current, c)
}

// PublicKeys is the ENTRY_TOKEN_PUBLIC_KEYS of these keys: each public key
// in standard base64, current first, comma-separated ("" without keys).
func (k Keys) PublicKeys() string {
	var out []string
	for _, key := range []*Key{k.Current, k.Previous} {
		if key != nil {
			out = append(out, base64.StdEncoding.EncodeToString(key.Public()))
		}
	}
	return strings.Join(out, ",")
}

// Lookup finds a published key by id.
func (k Keys) Lookup(kid string) (ed25519.PublicKey, bool) {
	for _, key := range []*Key{k.Current, k.Previous} {
		if key != nil && key.ID == kid {
			return key.Public(), true
		}
	}
	return nil, false
}

// Verify checks a token signed by these keys, as the gate does: signature,
// expiry and issuer (room and single use are the gate's).
func (k Keys) Verify(token string, now time.Time) (Claims, error) {
	c, err := Parse(token, k.Lookup, now, 0)
	if err != nil {
		return Claims{}, err
	}
	if c.Issuer != k.Issuer {
		return Claims{}, ErrIssuer
	}
	return c, nil
}

// JWK is one public key of a JWKS (RFC 8037: kty OKP, crv Ed25519).
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// JWKS is the document of GET /.well-known/jwks.json.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// JWKS publishes the current and previous public keys.
func (k Keys) JWKS() JWKS {
	set := JWKS{Keys: []JWK{}}
	for _, key := range []*Key{k.Current, k.Previous} {
		if key != nil {
			set.Keys = append(set.Keys, JWK{Kty: "OKP", Crv: "Ed25519", X: b64url.Encode(key.Public()), Kid: key.ID, Alg: Alg, Use: "sig"})
		}
	}
	return set
}

// publicKeys reads the Ed25519 signing keys of a JWKS document; other
// keys are skipped, so a shared JWKS with RSA keys still works.
func publicKeys(doc []byte) (map[string]ed25519.PublicKey, error) {
	var set JWKS
	if err := json.Unmarshal(doc, &set); err != nil {
		return nil, fmt.Errorf("not a JWKS: %w", err)
	}
	keys := map[string]ed25519.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "OKP" || k.Crv != "Ed25519" || (k.Alg != "" && k.Alg != Alg) || (k.Use != "" && k.Use != "sig") {
			continue
		}
		x, err := b64url.Decode(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			continue
		}
		keys[k.Kid] = ed25519.PublicKey(x)
	}
	return keys, nil
}
