package entrytoken

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// ErrUnavailable is Verify's error when it has no key for a token because
// the JWKS could not be fetched (an error answer, a network error, a bad
// document, the caller's context ending first) or is not asked again yet
// (the back-off after a failure), and what an ErrUnknownKey also wraps
// while the last fetch failed. The token itself was not judged: an origin
// may answer "try again" rather than "join the queue".
var ErrUnavailable = errors.New("entrytoken: the JWKS cannot be fetched")

// ErrNoRoom is Verify's error, before any fetch, when the Verifier names no
// Room and does not say AnyRoom: a shop that sells one room must not take
// a token another room's line earned because it forgot to say which.
var ErrNoRoom = errors.New("entrytoken: the Verifier names no Room (set AnyRoom to accept every room)")

// Verifier checks entry tokens on an origin (a shop's checkout page)
// without calling Waitroom per request. It is safe for concurrent use, and
// its JWKS fetches follow a policy that neither piles up on a struggling
// waiting room nor refuses tokens it holds keys for:
//
//   - One fetch at a time, outside any lock, shared by every caller that
//     waits for it. Only callers without a usable key wait (a cold
//     verifier, or a token naming a key id it does not know), each for
//     as long as its context allows; the fetch is bounded by the client's
//     timeout (5 s when it has none), whoever waits.
//   - Keys older than CacheFor keep verifying while their refresh runs in
//     the background, and after it failed.
//   - A failed fetch (any status but 200, a network error, a bad document)
//     is followed by a back-off: 1 s doubling to 60 s, each a random
//     point of its upper half, or the Retry-After of a 429 or 503 when
//     longer (at most 60 s).
//     Meanwhile no fetch is made and callers without a key get
//     ErrUnavailable at once. A success resets it.
//   - A token naming an unknown key id (a rotation) asks for a fetch at
//     most once per MinRefresh since the last attempt, failed or not, so
//     a flood of made-up key ids cannot make it fetch more often.
//
// Seed gives a verifier keys before its first fetch. Room is required
// (AnyRoom says every room on purpose). Single use is not checked here:
// the order gate enforces it; an origin that needs it too records the jti
// of every token it takes.
type Verifier struct {
	JWKSURL    string        // https://<waiting room>/.well-known/jwks.json
	Issuer     string        // the waiting room's ENTRY_TOKEN_ISSUER; required
	Room       string        // the room this origin sells; required unless AnyRoom
	AnyRoom    bool          // with Room empty, accept tokens of every room
	Client     *http.Client  // nil means a client with a 5 s timeout
	CacheFor   time.Duration // 0 means 5 minutes (the JWKS's Cache-Control)
	MinRefresh time.Duration // 0 means 30 s
	Leeway     time.Duration // clock skew allowed on exp; 0 means none
	Now        func() time.Time

	mu        sync.Mutex
	keys      map[string]ed25519.PublicKey // fetched, or seeded
	fetched   time.Time                    // the last successful fetch; zero while seeded
	attempted time.Time                    // the start of the last fetch, failed or not
	failures  int                          // failed fetches since the last success
	retryAt   time.Time                    // no fetch before this, after a failure
	lastErr   error                        // the last failure, wrapping ErrUnavailable
	inflight  *fetchCall                   // the fetch under way, nil when none
}

// fetchCall is one JWKS fetch that any number of callers wait for.
type fetchCall struct {
	done chan struct{} // closed once keys and err are set
	keys map[string]ed25519.PublicKey
	err  error
}

const (
	defaultTimeout = 5 * time.Second
	minBackoff     = time.Second
	maxBackoff     = time.Minute
)

var defaultClient = &http.Client{Timeout: defaultTimeout}

// Verify returns the claims of a valid token for this issuer and room (any
// room with AnyRoom and no Room). A token whose key id is unknown while the
// last fetch failed is refused with ErrUnknownKey wrapping ErrUnavailable:
// its key may be a new one the verifier could not fetch.
func (v *Verifier) Verify(ctx context.Context, token string) (Claims, error) {
	if v.Room == "" && !v.AnyRoom {
		return Claims{}, ErrNoRoom
	}
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
	c, err = Parse(token, lookupIn(keys), now, v.Leeway)
	if isUnknownKey(err) {
		v.mu.Lock()
		last := v.lastErr
		v.mu.Unlock()
		if last != nil { // the key may be one the verifier could not fetch
			err = fmt.Errorf("%w (%w)", err, last)
		}
	}
	return v.check(c, err)
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

// Seed gives the verifier keys to start with: a JWKS document (the waiting
// room's /.well-known/jwks.json, saved when the shop is built or
// deployed), so that an instance that starts while the JWKS cannot be
// fetched still verifies. Seeded keys are trusted like fetched ones and
// used at once; they are never fresh, so the first Verify also starts a
// fetch in the background, and the first successful fetch replaces them.
// Seed after a successful fetch changes nothing: the fetched keys are
// newer. It fails on a document that is not a JWKS or holds no Ed25519
// signing key.
func (v *Verifier) Seed(jwks []byte) error {
	keys, err := publicKeys(jwks)
	if err != nil {
		return fmt.Errorf("entrytoken: seed: %w", err)
	}
	if len(keys) == 0 {
		return errors.New("entrytoken: seed: the JWKS holds no Ed25519 signing key")
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.fetched.IsZero() {
		v.keys = keys
	}
	return nil
}

// keySet returns the keys to verify with, starting a fetch when one is due
// and none is under way. A caller with usable keys never waits; one
// without (no keys, or unknownKid: its token names a key they lack) waits
// for the fetch under way, if any, else has what there is.
func (v *Verifier) keySet(ctx context.Context, now time.Time, unknownKid bool) (map[string]ed25519.PublicKey, error) {
	v.mu.Lock()
	keys, call := v.keys, v.inflight
	if call == nil && v.due(now, unknownKid) {
		call = v.start(ctx, now)
	}
	var backingOff error
	if call == nil && keys == nil {
		backingOff = fmt.Errorf("%w; next attempt in %s", v.lastErr, v.retryAt.Sub(now).Round(time.Millisecond))
	}
	v.mu.Unlock()
	switch {
	case keys != nil && !unknownKid:
		return keys, nil
	case call == nil && keys != nil:
		return keys, nil // the key id stays unknown until a fetch is allowed
	case call == nil:
		return nil, backingOff
	}
	select {
	case <-call.done:
		if call.err == nil {
			return call.keys, nil
		}
		if keys != nil {
			return keys, nil
		}
		return nil, call.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: gave up waiting: %w", ErrUnavailable, context.Cause(ctx))
	}
}

// due reports whether a fetch should start now; v.mu is held. Without keys
// only the back-off holds a fetch back, so a verifier without keys and
// without a fetch under way is backing off. Seeded keys are stale: fetched
// is zero.
func (v *Verifier) due(now time.Time, unknownKid bool) bool {
	switch {
	case now.Before(v.retryAt):
		return false
	case v.keys == nil || now.Sub(v.fetched) >= or(v.CacheFor, 5*time.Minute):
		return true
	}
	return unknownKid && now.Sub(v.attempted) >= or(v.MinRefresh, 30*time.Second)
}

// start runs a fetch in the background; v.mu is held. The fetch keeps the
// values of the context of the caller that started it but not its end:
// the other callers waiting for it must not fail because that one left.
func (v *Verifier) start(ctx context.Context, now time.Time) *fetchCall {
	call := &fetchCall{done: make(chan struct{})}
	v.inflight, v.attempted = call, now
	go v.run(context.WithoutCancel(ctx), call)
	return call
}

// run fetches the JWKS, records the outcome and wakes the waiting callers.
func (v *Verifier) run(ctx context.Context, call *fetchCall) {
	client := v.Client
	if client == nil {
		client = defaultClient
	}
	if client.Timeout == 0 { // one hung fetch would block every later one
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultTimeout)
		defer cancel()
	}
	keys, retryAfter, err := v.fetch(ctx, client)
	v.mu.Lock()
	now := v.now()
	if err == nil {
		v.keys, v.fetched = keys, now
		v.failures, v.retryAt, v.lastErr = 0, time.Time{}, nil
	} else {
		err = fmt.Errorf("%w: %w", ErrUnavailable, err)
		v.failures++
		v.retryAt, v.lastErr = now.Add(backoff(v.failures, retryAfter)), err
	}
	call.keys, call.err = keys, err
	v.inflight = nil
	v.mu.Unlock()
	close(call.done)
}

// backoff is the wait after the failures-th failed fetch in a row: 1 s
// doubling to 60 s, a random point of its upper half (so that the shop's
// instances spread their retries), or retryAfter when longer, at most 60 s.
func backoff(failures int, retryAfter time.Duration) time.Duration {
	d := maxBackoff
	if failures <= 6 { // 1 s << 6 is already past the cap
		d = min(minBackoff<<(failures-1), maxBackoff)
	}
	d = d/2 + rand.N(d/2+1)
	return max(d, min(retryAfter, maxBackoff))
}

// fetch gets and reads the JWKS; with a 429 or 503 it also returns the
// answer's Retry-After.
func (v *Verifier) fetch(ctx context.Context, client *http.Client) (map[string]ed25519.PublicKey, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.JWKSURL, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("JWKS URL: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("fetching: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var wait time.Duration
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			wait = parseRetryAfter(resp.Header.Get("Retry-After"), v.now())
		}
		return nil, wait, fmt.Errorf("status %d", resp.StatusCode)
	}
	doc, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, 0, fmt.Errorf("reading: %w", err)
	}
	keys, err := publicKeys(doc)
	return keys, 0, err
}

// parseRetryAfter reads Retry-After in seconds or as an HTTP date; 0 when
// absent or unreadable.
func parseRetryAfter(h string, now time.Time) time.Duration {
	if s, err := strconv.Atoi(h); err == nil && s > 0 {
		return time.Duration(min(s, int(maxBackoff/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return t.Sub(now)
	}
	return 0
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
