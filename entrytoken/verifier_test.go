package entrytoken_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/entrytoken"
)

// reply is how a fakeJWKS answers.
type reply struct {
	status     int           // 0: the JWKS, 200; else this status and no body
	retryAfter string        // the Retry-After header of a failing answer
	delay      time.Duration // waited before answering
	hold       chan struct{} // when non-nil, the answer waits until it is closed
}

// fakeJWKS serves keys like GET /.well-known/jwks.json, or fails as its
// reply says, and counts the requests.
type fakeJWKS struct {
	*httptest.Server
	fetches atomic.Int64
	keys    atomic.Pointer[entrytoken.Keys]
	reply   atomic.Pointer[reply]
}

func newJWKS(t testing.TB, ks entrytoken.Keys) *fakeJWKS {
	s := &fakeJWKS{}
	s.keys.Store(&ks)
	s.answer(reply{})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		rep := s.reply.Load()
		select {
		case <-time.After(rep.delay):
		case <-r.Context().Done():
			return
		}
		if rep.hold != nil {
			select {
			case <-rep.hold:
			case <-r.Context().Done():
				return
			}
		}
		if rep.status != 0 {
			if rep.retryAfter != "" {
				w.Header().Set("Retry-After", rep.retryAfter)
			}
			w.WriteHeader(rep.status)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=300")
		_ = json.NewEncoder(w).Encode(s.keys.Load().JWKS())
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *fakeJWKS) answer(r reply) { s.reply.Store(&r) }

// held makes the JWKS hold its answers (status, 0 for the JWKS) until the
// returned release is called; the test's cleanup releases them too, before
// the server closes.
func (s *fakeJWKS) held(t testing.TB, status int) (release func()) {
	hold := make(chan struct{})
	release = sync.OnceFunc(func() { close(hold) })
	t.Cleanup(release)
	s.answer(reply{status: status, hold: hold})
	return release
}

// waitFetches waits until the JWKS has been asked n times: a refresh in
// the background reaches the server a moment after Verify returned.
func (s *fakeJWKS) waitFetches(t testing.TB, n int64) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); s.fetches.Load() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d JWKS fetches after 5 s, want %d", s.fetches.Load(), n)
		}
	}
}

// settle returns once the fetch under way, if any, is over, so that the
// next step sees its outcome (a background refresh ends after the Verify
// that started it returned). It verifies a token of a key nobody has: such
// a caller waits for the fetch under way and, within MinRefresh of the
// last attempt (the clock has not moved since), starts none.
func settle(t *testing.T, v *entrytoken.Verifier, clk *clock) {
	t.Helper()
	if _, err := v.Verify(context.Background(), dayToken(t, keys(t, seed(t)), clk.Now())); !errors.Is(err, entrytoken.ErrUnknownKey) {
		t.Fatalf("a token of a key nobody has: %v, want %v", err, entrytoken.ErrUnknownKey)
	}
}

// clock is the verifier's Now, moved by the test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

// newClock starts at a whole second, so that HTTP dates (whole seconds)
// fall exactly where a test puts them.
func newClock() *clock { return &clock{t: time.Now().Truncate(time.Second)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// dayToken is a token of room tv-launch valid for a day from now, so that
// the tests' clocks can move by minutes.
func dayToken(t testing.TB, ks entrytoken.Keys, now time.Time) string {
	t.Helper()
	c := claims(now)
	c.ExpiresAt = now.Add(24 * time.Hour).Unix()
	tok, err := ks.Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// setup is a key, its JWKS and a verifier of room tv-launch on a test clock.
func setup(t *testing.T) (entrytoken.Keys, *fakeJWKS, *clock, *entrytoken.Verifier) {
	ks := keys(t, seed(t))
	s := newJWKS(t, ks)
	clk := newClock()
	return ks, s, clk, &entrytoken.Verifier{JWKSURL: s.URL, Issuer: issuer, Room: "tv-launch", Now: clk.Now}
}

// verifyAll verifies each token in its own goroutine, all at once, and
// returns their errors in order; a verification still running after 5 s
// fails the test (it waited for something it should not have).
func verifyAll(t *testing.T, v *entrytoken.Verifier, tokens ...string) []error {
	t.Helper()
	errs := make([]error, len(tokens))
	var wg sync.WaitGroup
	for i, tok := range tokens {
		wg.Go(func() { _, errs[i] = v.Verify(context.Background(), tok) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("verifications still running after 5 s")
	}
	return errs
}

// wantEach fails unless every error is want (errors.Is; nil: success).
func wantEach(t *testing.T, errs []error, want error, when string) {
	t.Helper()
	for i, err := range errs {
		if !errors.Is(err, want) {
			t.Fatalf("%s: verification %d: %v, want %v", when, i, err, want)
		}
	}
}

func repeat(tok string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = tok
	}
	return out
}

func wantFetches(t *testing.T, s *fakeJWKS, want int64, when string) {
	t.Helper()
	if n := s.fetches.Load(); n != want {
		t.Fatalf("%s: %d JWKS fetches, want %d", when, n, want)
	}
}

// Ten shops' requests at once on a cold verifier whose JWKS answers 503:
// one fetch, not ten in a row (the serialized refetches).
func TestFailingJWKSIsFetchedOnceForConcurrentCallers(t *testing.T) {
	ks, s, clk, v := setup(t)
	s.answer(reply{status: http.StatusServiceUnavailable})
	wantEach(t, verifyAll(t, v, repeat(dayToken(t, ks, clk.Now()), 10)...), entrytoken.ErrUnavailable, "cold against a 503")
	wantFetches(t, s, 1, "10 concurrent verifications against a 503")
}

// Ten cold verifications against a slow JWKS share one fetch and all
// succeed.
func TestSlowJWKSIsFetchedOnceForConcurrentColdCallers(t *testing.T) {
	ks, s, clk, v := setup(t)
	s.answer(reply{delay: 500 * time.Millisecond})
	wantEach(t, verifyAll(t, v, repeat(dayToken(t, ks, clk.Now()), 10)...), nil, "cold against a slow JWKS")
	wantFetches(t, s, 1, "10 concurrent cold verifications against a slow JWKS")
}

// Keys past CacheFor still verify at once while their refresh hangs, and
// again once it failed, without a fetch per verification.
func TestStaleKeysServedWhileTheRefreshFails(t *testing.T) {
	ks, s, clk, v := setup(t)
	tok := dayToken(t, ks, clk.Now())
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	release := s.held(t, http.StatusServiceUnavailable)
	clk.Add(6 * time.Minute) // past CacheFor: a refresh is due
	wantEach(t, verifyAll(t, v, repeat(tok, 10)...), nil, "stale keys during the refresh")
	s.waitFetches(t, 2)
	release()
	wantEach(t, verifyAll(t, v, repeat(tok, 10)...), nil, "stale keys after the refresh failed")
	wantFetches(t, s, 2, "20 verifications with stale keys and a failing JWKS")
}

// After each failed fetch no fetch is made for at least half the back-off
// (1 s doubling to 60 s, jittered down to half), and one is made once the
// whole back-off has passed; a success resets it to 1 s.
func TestBackoffGrowsAndResets(t *testing.T) {
	ks, s, clk, v := setup(t)
	s.answer(reply{status: http.StatusServiceUnavailable})
	v.MinRefresh = time.Millisecond
	tok := dayToken(t, ks, clk.Now())
	verify := func() error { _, err := v.Verify(context.Background(), tok); return err }
	unavailable := func() {
		t.Helper()
		if err := verify(); !errors.Is(err, entrytoken.ErrUnavailable) {
			t.Fatalf("without keys: %v, want %v", err, entrytoken.ErrUnavailable)
		}
	}
	unavailable()
	wantFetches(t, s, 1, "first verification")
	for k := int64(1); k <= 8; k++ {
		d := min(time.Second<<(k-1), time.Minute)
		clk.Add(d/2 - time.Millisecond)
		unavailable()
		wantFetches(t, s, k, fmt.Sprintf("within the back-off of failure %d", k))
		clk.Add(d/2 + time.Millisecond)
		unavailable()
		wantFetches(t, s, k+1, fmt.Sprintf("after the back-off of failure %d", k))
	}
	s.answer(reply{})
	clk.Add(time.Minute)
	if err := verify(); err != nil {
		t.Fatalf("after the JWKS recovered: %v", err)
	}
	wantFetches(t, s, 10, "the recovery")

	// Reset: a token of a key the verifier does not know asks for a
	// refresh; it fails, and the next attempt comes a second later at most.
	s.answer(reply{status: http.StatusServiceUnavailable})
	unknown := dayToken(t, keys(t, seed(t)), clk.Now())
	for i, c := range []struct {
		after time.Duration
		want  int64
	}{{time.Millisecond, 11}, {500*time.Millisecond - time.Millisecond, 11}, {500*time.Millisecond + time.Millisecond, 12}} {
		clk.Add(c.after)
		if _, err := v.Verify(context.Background(), unknown); !errors.Is(err, entrytoken.ErrUnknownKey) {
			t.Fatalf("unknown key %d: %v, want %v", i, err, entrytoken.ErrUnknownKey)
		}
		wantFetches(t, s, c.want, "unknown key after a success reset the back-off")
		if err := verify(); err != nil {
			t.Fatalf("known key while the JWKS fails: %v", err)
		}
	}
}

// Retry-After of a 503 or 429, in seconds or as a date, delays the next
// fetch that long, at most 60 s.
func TestRetryAfterIsHonoured(t *testing.T) {
	ks, s, clk, v := setup(t)
	tok := dayToken(t, ks, clk.Now())
	s.answer(reply{status: http.StatusServiceUnavailable, retryAfter: "10"})
	if _, err := v.Verify(context.Background(), tok); !errors.Is(err, entrytoken.ErrUnavailable) {
		t.Fatalf("without keys: %v, want %v", err, entrytoken.ErrUnavailable)
	}
	// retryIn checks that no fetch is made a second before wait has
	// passed and one is at wait, which gets next.
	retryIn := func(wait time.Duration, next reply) error {
		t.Helper()
		before := s.fetches.Load()
		s.answer(next)
		clk.Add(wait - time.Second)
		if _, err := v.Verify(context.Background(), tok); !errors.Is(err, entrytoken.ErrUnavailable) {
			t.Fatalf("while backing off: %v, want %v", err, entrytoken.ErrUnavailable)
		}
		wantFetches(t, s, before, fmt.Sprintf("a second before the %s of Retry-After", wait))
		clk.Add(time.Second)
		_, err := v.Verify(context.Background(), tok)
		wantFetches(t, s, before+1, fmt.Sprintf("at the %s of Retry-After", wait))
		return err
	}
	if err := retryIn(10*time.Second, reply{status: http.StatusTooManyRequests, retryAfter: "3600"}); !errors.Is(err, entrytoken.ErrUnavailable) {
		t.Fatalf("a 429: %v, want %v", err, entrytoken.ErrUnavailable)
	}
	// An hour is read as the back-off's cap, 60 s; then a date 20 s after
	// the next fetch.
	date := clk.Now().Add(time.Minute + 20*time.Second).UTC().Format(http.TimeFormat)
	if err := retryIn(time.Minute, reply{status: http.StatusTooManyRequests, retryAfter: date}); !errors.Is(err, entrytoken.ErrUnavailable) {
		t.Fatalf("a 429: %v, want %v", err, entrytoken.ErrUnavailable)
	}
	if err := retryIn(20*time.Second, reply{}); err != nil {
		t.Fatalf("after the JWKS recovered: %v", err)
	}
}

// countingTransport counts the requests a client makes, answered or not.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// Every kind of failed fetch is followed by the back-off, not only error
// statuses: a bad document and an unreachable JWKS too.
func TestEveryFailureBacksOff(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for name, url := range map[string]string{
		"500":         newFailing(t, func(w http.ResponseWriter) { w.WriteHeader(http.StatusInternalServerError) }),
		"404":         newFailing(t, func(w http.ResponseWriter) { w.WriteHeader(http.StatusNotFound) }),
		"bad JSON":    newFailing(t, func(w http.ResponseWriter) { _, _ = w.Write([]byte(`{"keys":[`)) }),
		"unreachable": closed.URL,
	} {
		var rt countingTransport
		v := &entrytoken.Verifier{JWKSURL: url, Issuer: issuer, Room: "tv-launch", Now: newClock().Now, Client: &http.Client{Transport: &rt}}
		tok := dayToken(t, keys(t, seed(t)), time.Now())
		for range 3 {
			if _, err := v.Verify(context.Background(), tok); !errors.Is(err, entrytoken.ErrUnavailable) {
				t.Fatalf("%s: %v, want %v", name, err, entrytoken.ErrUnavailable)
			}
		}
		if n := rt.n.Load(); n != 1 {
			t.Errorf("%s: %d fetches for 3 verifications, want 1", name, n)
		}
	}
}

func newFailing(t *testing.T, answer func(http.ResponseWriter)) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { answer(w) }))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A flood of tokens naming random key ids makes at most one fetch per
// MinRefresh even when the fetches fail; known tokens keep verifying.
func TestRandomKidFloodFetchesOncePerMinRefresh(t *testing.T) {
	ks, s, clk, v := setup(t)
	good := dayToken(t, ks, clk.Now())
	if _, err := v.Verify(context.Background(), good); err != nil {
		t.Fatal(err)
	}
	s.answer(reply{status: http.StatusServiceUnavailable})
	flood := []string{good}
	for range 20 {
		flood = append(flood, dayToken(t, keys(t, seed(t)), clk.Now()))
	}
	for window := int64(0); window < 3; window++ {
		for i, err := range verifyAll(t, v, flood...) {
			if i == 0 && err != nil {
				t.Fatalf("window %d: the known token: %v", window, err)
			}
			if i > 0 && !errors.Is(err, entrytoken.ErrUnknownKey) {
				t.Fatalf("window %d: random kid %d: %v, want %v", window, i, err, entrytoken.ErrUnknownKey)
			}
			// After a failed fetch the kid may be one it could not fetch.
			if i > 0 && errors.Is(err, entrytoken.ErrUnavailable) != (window > 0) {
				t.Fatalf("window %d: random kid %d: %v: ErrUnavailable only after a failed fetch", window, i, err)
			}
		}
		wantFetches(t, s, 1+window, "random-kid floods, one per 30 s window")
		clk.Add(30 * time.Second)
	}
}

// A waiting caller whose context ends stops waiting; the fetch it started
// goes on for the others.
func TestWaiterContextEndsOnlyItsWait(t *testing.T) {
	ks, s, clk, v := setup(t)
	release := s.held(t, 0)
	tok := dayToken(t, ks, clk.Now())
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { _, err := v.Verify(ctx, tok); first <- err }()
	s.waitFetches(t, 1)
	second := make(chan error, 1)
	go func() { _, err := v.Verify(context.Background(), tok); second <- err }()
	cancel()
	select {
	case err := <-first:
		if !errors.Is(err, context.Canceled) || !errors.Is(err, entrytoken.ErrUnavailable) {
			t.Fatalf("the cancelled caller: %v, want %v and %v", err, entrytoken.ErrUnavailable, context.Canceled)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled caller still waits after 5 s")
	}
	release()
	if err := <-second; err != nil {
		t.Fatalf("the caller that kept waiting: %v", err)
	}
	wantFetches(t, s, 1, "a cancelled first caller and a patient second one")
}

// A Verifier that names no room refuses, before any fetch, unless it says
// AnyRoom, so that a shop cannot forget to bind the tokens it takes to the
// room it sells; with a Room, AnyRoom changes nothing.
func TestVerifierWithoutRoomRefuses(t *testing.T) {
	ks := keys(t, seed(t))
	s := newJWKS(t, ks)
	tok := dayToken(t, ks, time.Now()) // room tv-launch
	if _, err := (&entrytoken.Verifier{JWKSURL: s.URL, Issuer: issuer}).Verify(context.Background(), tok); !errors.Is(err, entrytoken.ErrNoRoom) {
		t.Fatalf("no Room: %v, want %v", err, entrytoken.ErrNoRoom)
	}
	wantFetches(t, s, 0, "a verifier without Room")
	if c, err := (&entrytoken.Verifier{JWKSURL: s.URL, Issuer: issuer, AnyRoom: true}).Verify(context.Background(), tok); err != nil || c.Room != "tv-launch" {
		t.Fatalf("AnyRoom: %+v %v", c, err)
	}
	if _, err := (&entrytoken.Verifier{JWKSURL: s.URL, Issuer: issuer, Room: "shoes", AnyRoom: true}).Verify(context.Background(), tok); !errors.Is(err, entrytoken.ErrRoom) {
		t.Fatalf("Room shoes with AnyRoom: %v, want %v", err, entrytoken.ErrRoom)
	}
}

// A shop instance that starts while the JWKS is throttled verifies with
// the keys it was deployed with (Seed) at once, without waiting for the
// fetch; the first successful fetch replaces them (here after a rotation
// that dropped the seeded key).
func TestSeededKeysVerifyWhileTheJWKSIsDown(t *testing.T) {
	rotated, s, clk, v := setup(t)
	deployed := keys(t, seed(t))
	s.answer(reply{status: http.StatusTooManyRequests})
	doc, err := json.Marshal(deployed.JWKS())
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Seed(doc); err != nil {
		t.Fatal(err)
	}
	old := dayToken(t, deployed, clk.Now())
	wantEach(t, verifyAll(t, v, repeat(old, 10)...), nil, "seeded keys while the JWKS answers 429")
	settle(t, v, clk)
	wantEach(t, verifyAll(t, v, repeat(old, 10)...), nil, "seeded keys after the fetch failed")
	wantFetches(t, s, 1, "20 seeded verifications while the JWKS answers 429")

	s.answer(reply{})
	clk.Add(time.Minute) // past the back-off
	if _, err := v.Verify(context.Background(), dayToken(t, rotated, clk.Now())); err != nil {
		t.Fatalf("a token of the fetched key: %v", err)
	}
	if _, err := v.Verify(context.Background(), old); !errors.Is(err, entrytoken.ErrUnknownKey) {
		t.Fatalf("the seeded key after a successful fetch: %v, want %v", err, entrytoken.ErrUnknownKey)
	}
	if err := v.Seed(doc); err != nil { // fetched keys are newer: no effect
		t.Fatal(err)
	}
	if _, err := v.Verify(context.Background(), old); !errors.Is(err, entrytoken.ErrUnknownKey) {
		t.Fatalf("seeding again after a successful fetch: %v, want %v", err, entrytoken.ErrUnknownKey)
	}
	wantFetches(t, s, 2, "the recovery")
	for _, bad := range []string{`{"keys":[`, `{"keys":[]}`, `{"keys":[{"kty":"RSA","kid":"r","n":"AQAB","e":"AQAB"}]}`} {
		if err := (&entrytoken.Verifier{}).Seed([]byte(bad)); err == nil {
			t.Errorf("Seed(%s) accepted", bad)
		}
	}
}
