package entrytoken

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// Verifier checks entry tokens on an origin (a shop's checkout page)
// without calling Waitroom per request: it fetches the JWKS once, keeps it
// for CacheFor, and fetches again early, at most once per MinRefresh, when
// a token names a key it does not know (a rotation). It is safe for
// concurrent use. Single use is not checked here: the order gate enforces
// it; an origin that needs it too records the jti of every token it takes.
type Verifier struct {
	JWKSURL    string        // https://<waiting room>/.well-known/jwks.json
	Issuer     string        // the waiting room's ENTRY_TOKEN_ISSUER; required
	Room       string        // the room this origin sells; empty accepts every room
	Client     *http.Client  // nil means a client with a 5 s timeout
	CacheFor   time.Duration // 0 means 5 minutes (the JWKS's Cache-Control)
	MinRefresh time.Duration // 0 means 30 s
	Leeway     time.Duration // clock skew allowed on exp; 0 means none
	Now        func() time.Time

	mu      sync.Mutex
	keys    map[string]ed25519.PublicKey
	fetched time.Time
}

var defaultClient = &http.Client{Timeout: 5 * time.Second}

// Verify returns the claims of a valid token for this issuer and room.
func (v *Verifier) Verify(ctx context.Context, token string) (Claims, error) {
	now := v.now()
	keys, err := v.keySet(ctx, now, false)
	if err != nil {
		return Claims{}, err
	}
	c, err := Parse(token, lookupIn(keys), now, v.Leeway)
	if err == nil || !isUnknownKey(err) {
		return v.check(c, err)
	}
	if keys, err = v.keySet(ctx, now, true); err != nil {
		return Claims{}, err
	}
	return v.check(Parse(token, lookupIn(keys), now, v.Leeway))
}

func (v *Verifier) check(c Claims, err error) (Claims, error) {
	switch {
	case err != nil:
		return Claims{}, err
	case c.Issuer != v.Issuer || v.Issuer == "":
		return Claims{}, ErrIssuer
	case v.Room != "" && c.Room != v.Room:
		return Claims{}, ErrRoom
	}
	return c, nil
}

// keySet returns the cached keys, fetching when they are stale or, with
// unknownKid, when the last fetch is older than MinRefresh.
func (v *Verifier) keySet(ctx context.Context, now time.Time, unknownKid bool) (map[string]ed25519.PublicKey, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	age := now.Sub(v.fetched)
	stale := v.keys == nil || age >= or(v.CacheFor, 5*time.Minute)
	if unknownKid && age >= or(v.MinRefresh, 30*time.Second) {
		stale = true
	}
	if !stale {
		return v.keys, nil
	}
	keys, err := v.fetch(ctx)
	if err != nil {
		if v.keys != nil { // keep verifying with the last good keys
			return v.keys, nil
		}
		return nil, err
	}
	v.keys, v.fetched = keys, now
	return keys, nil
}

func (v *Verifier) fetch(ctx context.Context) (map[string]ed25519.PublicKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.JWKSURL, nil)
	if err != nil {
		return nil, fmt.Errorf("entrytoken: JWKS URL: %w", err)
	}
	client := v.Client
	if client == nil {
		client = defaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("entrytoken: fetching the JWKS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("entrytoken: fetching the JWKS: status %d", resp.StatusCode)
	}
	doc, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("entrytoken: reading the JWKS: %w", err)
	}
	return publicKeys(doc)
}

func (v *Verifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

func lookupIn(keys map[string]ed25519.PublicKey) func(string) (ed25519.PublicKey, bool) {
	return func(kid string) (ed25519.PublicKey, bool) { k, ok := keys[kid]; return k, ok }
}

func isUnknownKey(err error) bool { return errors.Is(err, ErrUnknownKey) }

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
