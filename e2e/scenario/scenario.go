// Package scenario is the end-to-end scenario of Waitroom, written once and
// run against every way the four Lambda functions can be hosted: the real
// bootstrap binaries under the AWS Lambda Runtime Interface Emulator, the
// same binaries deployed to LocalStack, or the handlers in-process (a quick
// self-test of the harness). Only the gateway.Invoker differs.
//
// The scenario talks HTTP to a test gateway (package gateway) for the routes,
// and invokes functions directly for what is not HTTP: admission, driven by
// EventBridge "Scheduled Event" payloads, and malformed events.
package scenario

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/e2e/gateway"
)

// Config is the configuration the functions run with, which the scenario
// must know to check them. FunctionEnv turns it into their environment.
type Config struct {
	Crowd           int     // users entering the room; QUEUE_CAPACITY is set to this, so the line is then full
	RatePerSec      float64 // ADMIT_RATE_PER_SEC
	IntervalMs      int     // ADMIT_INTERVAL_MS
	Batches         int     // ADMIT_BATCHES
	TokenTTLSeconds int     // ENTRY_TOKEN_TTL_SECONDS
	Clients         int     // concurrent HTTP clients while the crowd enters and orders
	// MinRateRatio is the lowest accepted ratio of measured to configured
	// admission rate. The contract says 2% over the long run; a short
	// measurement on a loaded CI machine gets some slack (0.9 by default).
	MinRateRatio float64
	// ClockSkew is how far apart the test's clock and the store's may be
	// when checking expiresAt.
	ClockSkew time.Duration
	// PollTiers is POLL_TIERS ("": the functions' default): tiers short
	// enough that the scenario's waits of a few seconds span more than one.
	PollTiers string
}

// Default is the scenario of `make e2e`: 200 users, admitted 20 a second in
// batches of 2, so that admission takes about 10 s and the estimated waits
// span two poll tiers.
func Default() Config {
	return Config{Crowd: 200, RatePerSec: 20, IntervalMs: 100, Batches: 10, TokenTTLSeconds: 120, Clients: 8, MinRateRatio: 0.9, ClockSkew: 10 * time.Second,
		PollTiers: "60:10000,10:5000,0:2000"}
}

// FunctionEnv is the environment every function gets, besides REDIS_URL and
// ORDER_API_URL which the host provides.
func (c Config) FunctionEnv() map[string]string {
	env := map[string]string{
		"ADMIT_RATE_PER_SEC":      strconv.FormatFloat(c.RatePerSec, 'f', -1, 64),
		"ADMIT_INTERVAL_MS":       strconv.Itoa(c.IntervalMs),
		"ADMIT_BATCHES":           strconv.Itoa(c.Batches),
		"ENTRY_TOKEN_TTL_SECONDS": strconv.Itoa(c.TokenTTLSeconds),
		"QUEUE_CAPACITY":          strconv.Itoa(c.Crowd),
		"ORDER_TIMEOUT_MS":        "5000",
		// The scenario's rooms are fresh random names nobody created with
		// the admin API: the functions must accept any room, and the
		// order gate sell in any (ORDER_ROOMS=*, since issue 32 no longer
		// the default).
		"OPEN_ROOMS":  "true",
		"ORDER_ROOMS": "*",
		// The crowd's places are checked one by one (1 to Crowd): every
		// enter queues, where instant admission would let the first batch's
		// worth of an empty room straight in. Instant admission is tested on
		// its own (redisstore, awslambda, the mode matrix, the README).
		"INSTANT_ADMIT": "false",
	}
	if c.PollTiers != "" {
		env["POLL_TIERS"] = c.PollTiers
	}
	return env
}

// batch is one batch per docs/API.md: rate × interval.
func (c Config) batch() float64 { return c.RatePerSec * float64(c.IntervalMs) / 1000 }

// ExpectedWait is docs/API.md's estimatedWaitSeconds for a position.
func (c Config) ExpectedWait(pos int64) int64 {
	if float64(pos) <= c.batch() {
		return 0
	}
	return int64(math.Ceil(float64(pos) / c.RatePerSec))
}

// PollRange is the range of pollAfterMs for a position: the tier of its
// estimated wait, base ±20% (docs/API.md), but never later than the user's turn,
// position / rate plus half to one interval (docs/API.md, "Estimated wait and when to ask again").
func (c Config) PollRange(pos int64) (lo, hi int64) {
	spec := c.PollTiers
	if spec == "" {
		spec = waitroom.DefaultPollTiers
	}
	tiers, err := waitroom.ParsePollTiers(spec)
	if err != nil {
		panic(fmt.Sprintf("scenario.Config.PollTiers: %v", err))
	}
	base := float64(tiers.Ms(c.ExpectedWait(pos), 0.5)) // the middle of ±20% is the tier itself
	turn := float64(pos) / c.RatePerSec * 1000
	lo = int64(math.Floor(math.Min(base*0.8, turn+float64(c.IntervalMs)*0.5)))
	hi = int64(math.Ceil(math.Min(base*1.2, turn+float64(c.IntervalMs))))
	return min(lo, c.claimPollMs()), min(hi, c.claimPollMs())
}

// claimPollMs is the latest any answer tells a visitor to come back: half
// the claim window, ENTRY_TOKEN_TTL_SECONDS (docs/API.md, "Estimated wait
// and when to ask again").
func (c Config) claimPollMs() int64 { return int64(c.TokenTTLSeconds) * 1000 / 2 }

// Env is one host of the functions.
type Env struct {
	Invoker    gateway.Invoker
	Downstream *Downstream
	Config     Config
	// Room is the room used; empty picks a fresh random one, so that a
	// scenario can run again against the same store.
	Room string
}

// ProcessWatcher is implemented by invokers that can tell which OS process
// serves a function; the scenario then checks that malformed events did not
// make the function's process exit and be replaced.
type ProcessWatcher interface {
	ProcessID(function string) (int, error)
}

// Report is what the scenario measured.
type Report struct {
	Room             string
	EnterDuration    time.Duration // the whole crowd entering
	RateInvocations  int           // admit invocations in the rate measurement
	RateWindow       time.Duration
	RateAdmitted     int
	RateRatio        float64 // admitted / (rate × window)
	AdmitInvocations int     // all admit invocations until the line was empty
	Orders           int
	DownstreamCalls  int64
}

// Run runs the whole scenario. Each step is a subtest; the scenario stops
// at the first step that fails, since the later ones build on it.
func Run(t *testing.T, env Env) Report {
	s := newRun(t, env)
	defer s.close()
	steps := []struct {
		name string
		fn   func(*testing.T)
	}{
		{"identity", s.identity},
		{"crowd enters", s.crowdEnters},
		{"refresh keeps place", s.refreshKeepsPlace},
		{"the line for everyone", s.theLine},
		{"full line answers 429", s.fullLine},
		{"admission is FIFO", s.admissionFIFO},
		{"admission rate", s.admissionRate},
		{"line drains", s.drain},
		{"order gate", s.orderGate},
		{"everyone orders", s.everyoneOrders},
		{"consumed tokens", s.consumedTokens},
		{"malformed events", s.malformedEvents},
	}
	for _, st := range steps {
		if !t.Run(st.name, st.fn) {
			t.Fatalf("scenario stopped after %q failed", st.name)
		}
	}
	t.Logf("room %s: %d users entered in %v; rate %.3f of %g/s over %v (%d admitted, %d invocations); %d admit invocations in all; %d orders, %d downstream calls",
		s.rep.Room, s.cfg.Crowd, s.rep.EnterDuration.Round(time.Millisecond), s.rep.RateRatio, s.cfg.RatePerSec,
		s.rep.RateWindow.Round(time.Millisecond), s.rep.RateAdmitted, s.rep.RateInvocations, s.rep.AdmitInvocations, s.rep.Orders, s.rep.DownstreamCalls)
	return s.rep
}

type run struct {
	env  Env
	cfg  Config
	room string
	gw   *httptest.Server
	http *http.Client
	rep  Report

	users  []string          // in line order once the crowd has entered (users[i] has position i+1)
	tokens map[string]string // entry tokens as first seen
	orders map[string]answer // each user's successful order
	mu     sync.Mutex
	// admitted is when the last admit invocation returned: long enough
	// before an answer, admission has stalled for the room and its users
	// may be told the far tier (docs/API.md, "Estimated wait and when to ask again").
	admitted time.Time
}

func newRun(t *testing.T, env Env) *run {
	room := env.Room
	if room == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		room = "e2e-" + hex.EncodeToString(b[:])
	}
	if env.Config.Clients < 1 {
		env.Config.Clients = 1
	}
	gw := httptest.NewServer(gateway.New(env.Invoker))
	return &run{
		env: env, cfg: env.Config, room: room, gw: gw,
		http:   &http.Client{Timeout: 60 * time.Second},
		rep:    Report{Room: room},
		tokens: map[string]string{},
		orders: map[string]answer{},
	}
}

func (s *run) close() { s.gw.Close() }

// answer is one HTTP answer of the gateway.
type answer struct {
	Status int
	Header http.Header
	Body   []byte
}

func (a answer) String() string { return fmt.Sprintf("%d %s", a.Status, a.Body) }

// request is one HTTP call through the gateway.
type request struct {
	method, path string
	user         string // "" sends no Authorization header
	room         *string
	headers      map[string]string
	body         string
}

func (s *run) do(t testing.TB, r request) answer {
	t.Helper()
	u := s.gw.URL + r.path
	q := url.Values{}
	if r.room != nil {
		q.Set("room", *r.room)
	} else if r.path != "/orders" {
		q.Set("room", s.room)
	}
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequest(r.method, u, strings.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	if r.user != "" {
		req.Header.Set("Authorization", gateway.Bearer(r.user))
	}
	if r.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.headers {
		req.Header.Set(k, v)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	return answer{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

func (s *run) enter(t testing.TB, user string) answer {
	return s.do(t, request{method: http.MethodPost, path: "/queue/enter", user: user})
}

func (s *run) position(t testing.TB, user string) answer {
	return s.do(t, request{method: http.MethodGet, path: "/queue/position", user: user})
}

func (s *run) order(t testing.TB, user, token, key, body string) answer {
	h := map[string]string{}
	if token != "" {
		h["X-Entry-Token"] = token
	}
	if key != "" {
		h["Idempotency-Key"] = key
	}
	return s.do(t, request{method: http.MethodPost, path: "/orders", user: user, headers: h, body: body})
}

// standing is the body of enter and position.
type standing struct {
	Status               string `json:"status"`
	Position             *int64 `json:"position"`
	EstimatedWaitSeconds *int64 `json:"estimatedWaitSeconds"`
	EntryToken           string `json:"entryToken"`
	ExpiresAt            string `json:"expiresAt"`
	PollAfterMs          *int64 `json:"pollAfterMs"`
	Number               int64  `json:"number"`
	pollAfterPresent     bool
}

func decodeStanding(a answer) (standing, error) {
	if a.Status != http.StatusOK {
		return standing{}, fmt.Errorf("want 200, got %s", a)
	}
	if ct := a.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return standing{}, fmt.Errorf("Content-Type %q", ct)
	}
	var st standing
	if err := json.Unmarshal(a.Body, &st); err != nil {
		return standing{}, fmt.Errorf("body %s: %v", a.Body, err)
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(a.Body, &fields)
	_, st.pollAfterPresent = fields["pollAfterMs"]
	return st, nil
}

// checkWaiting checks a WAITING answer at position want.
func (s *run) checkWaiting(a answer, want int64) error {
	st, err := decodeStanding(a)
	if err != nil {
		return err
	}
	if st.Status != "WAITING" || st.Position == nil || st.EstimatedWaitSeconds == nil || st.PollAfterMs == nil {
		return fmt.Errorf("want WAITING with position, estimatedWaitSeconds and pollAfterMs, got %s", a.Body)
	}
	if want > 0 && *st.Position != want {
		return fmt.Errorf("want position %d, got %s", want, a.Body)
	}
	if w := s.cfg.ExpectedWait(*st.Position); *st.EstimatedWaitSeconds != w {
		return fmt.Errorf("position %d: want estimatedWaitSeconds %d, got %s", *st.Position, w, a.Body)
	}
	lo, hi := s.cfg.PollRange(*st.Position)
	inRange := *st.PollAfterMs >= lo && *st.PollAfterMs <= hi
	if !inRange && s.mayBeStalled() {
		lo, hi = s.cfg.FarTierRange()
		inRange = *st.PollAfterMs >= lo && *st.PollAfterMs <= hi
	}
	if !inRange {
		return fmt.Errorf("position %d: want pollAfterMs in [%d, %d], got %s", *st.Position, lo, hi, a.Body)
	}
	return nil
}

// stallIntervals × ADMIT_INTERVAL_MS without a batch is stalled admission:
// every waiting user may then be told the far tier.
const stallIntervals = 5

// FarTierRange is the farthest POLL_TIERS tier ±20%: the answer of every
// waiting user while admission has stalled.
func (c Config) FarTierRange() (lo, hi int64) {
	spec := c.PollTiers
	if spec == "" {
		spec = waitroom.DefaultPollTiers
	}
	tiers, err := waitroom.ParsePollTiers(spec)
	if err != nil {
		panic(fmt.Sprintf("scenario.Config.PollTiers: %v", err))
	}
	return min(int64(math.Floor(float64(tiers[0].PollMs)*0.8)), c.claimPollMs()), min(int64(math.Ceil(float64(tiers[0].PollMs)*1.2)), c.claimPollMs())
}

// mayBeStalled: no admit invocation has returned for stallIntervals
// intervals, so the store may already count admission as stalled.
func (s *run) mayBeStalled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Since(s.admitted) > stallIntervals*time.Duration(s.cfg.IntervalMs)*time.Millisecond
}

// checkReady checks a READY answer and that the user's token never changes.
func (s *run) checkReady(a answer, user string) error {
	st, err := decodeStanding(a)
	if err != nil {
		return err
	}
	if st.Status != "READY" || st.EntryToken == "" || !st.pollAfterPresent || st.PollAfterMs != nil || st.Position != nil {
		return fmt.Errorf("want READY with entryToken and pollAfterMs null, got %s", a.Body)
	}
	if !strings.HasPrefix(st.EntryToken, s.room+".") {
		return fmt.Errorf("entry token %q is not bound to room %s", st.EntryToken, s.room)
	}
	exp, err := time.Parse(time.RFC3339, st.ExpiresAt)
	if err != nil {
		return fmt.Errorf("expiresAt %q: %v", st.ExpiresAt, err)
	}
	if until := time.Until(exp); until > time.Duration(s.cfg.TokenTTLSeconds)*time.Second+s.cfg.ClockSkew || until < -s.cfg.ClockSkew {
		return fmt.Errorf("expiresAt %s is not within ENTRY_TOKEN_TTL_SECONDS=%d of now", st.ExpiresAt, s.cfg.TokenTTLSeconds)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, ok := s.tokens[user]; ok && prev != st.EntryToken {
		return fmt.Errorf("%s's entry token changed from %q to %q", user, prev, st.EntryToken)
	}
	s.tokens[user] = st.EntryToken
	return nil
}

func (s *run) token(user string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokens[user]
}

func checkNotInQueue(a answer) error {
	st, err := decodeStanding(a)
	if err != nil {
		return err
	}
	if st.Status != "NOT_IN_QUEUE" || !st.pollAfterPresent || st.PollAfterMs != nil || st.Position != nil || st.EntryToken != "" {
		return fmt.Errorf("want NOT_IN_QUEUE with pollAfterMs null, got %s", a.Body)
	}
	return nil
}

// checkError checks an error answer of the contract.
func checkError(a answer, status int, code string) error {
	var e struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	if a.Status != status || json.Unmarshal(a.Body, &e) != nil || e.Error != code || e.Message == "" {
		return fmt.Errorf(`want %d {"error":%q,"message":...}, got %s`, status, code, a)
	}
	return nil
}

// errs collects failures of a loop over the crowd and reports the first few.
type errs struct {
	mu   sync.Mutex
	n    int
	list []string
}

func (e *errs) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	if len(e.list) < 10 {
		e.list = append(e.list, fmt.Sprintf(format, args...))
	}
}

func (e *errs) report(t testing.TB) {
	t.Helper()
	if e.n > 0 {
		t.Fatalf("%d failures, first ones:\n  %s", e.n, strings.Join(e.list, "\n  "))
	}
}

// parallel runs fn(i) for i in [0, n) on the configured number of clients.
func (s *run) parallel(n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for c := 0; c < s.cfg.Clients; c++ {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		})
	}
	wg.Wait()
}

func (s *run) user(i int) string { return fmt.Sprintf("user-%04d", i) }

// identity: who is asking comes from the JWT authorizer's sub claim only.
func (s *run) identity(t *testing.T) {
	bad := "Bad Room"
	long := strings.Repeat("x", 129)
	for _, c := range []struct {
		name   string
		req    request
		status int
		code   string
	}{
		{"enter without identity", request{method: "POST", path: "/queue/enter"}, 401, "unauthenticated"},
		{"position without identity", request{method: "GET", path: "/queue/position"}, 401, "unauthenticated"},
		{"order without identity", request{method: "POST", path: "/orders", headers: map[string]string{"X-Entry-Token": s.room + ".AAAAAAAAAAAAAAAAAAAAAA"}, body: "{}"}, 401, "unauthenticated"},
		{"X-User-Id is not trusted behind API Gateway", request{method: "POST", path: "/queue/enter", headers: map[string]string{"X-User-Id": "mallory"}}, 401, "unauthenticated"},
		{"user id too long", request{method: "POST", path: "/queue/enter", user: long}, 400, "invalid_user"},
		{"invalid room", request{method: "POST", path: "/queue/enter", user: "alice", room: &bad}, 400, "invalid_room"},
	} {
		if err := checkError(s.do(t, c.req), c.status, c.code); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if a := s.do(t, request{method: "GET", path: "/queue/enter", user: "alice"}); a.Status != http.StatusNotFound {
		t.Errorf("GET /queue/enter is no route: want the gateway's 404, got %s", a)
	}
}

// crowdEnters: the crowd enters concurrently; positions are exactly 1..N.
func (s *run) crowdEnters(t *testing.T) {
	n := s.cfg.Crowd
	s.users = make([]string, n)
	var e errs
	start := time.Now()
	s.parallel(n, func(i int) {
		user := s.user(i)
		a := s.enter(t, user)
		if err := s.checkWaiting(a, 0); err != nil {
			e.add("%s enter: %v", user, err)
			return
		}
		st, _ := decodeStanding(a)
		pos := *st.Position
		if pos < 1 || pos > int64(n) {
			e.add("%s: position %d out of 1..%d", user, pos, n)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if prev := s.users[pos-1]; prev != "" {
			e.add("position %d given to both %s and %s", pos, prev, user)
			return
		}
		s.users[pos-1] = user
	})
	s.rep.EnterDuration = time.Since(start)
	e.report(t)
	t.Logf("%d users entered in %v with %d clients: positions are exactly 1..%d", n, s.rep.EnterDuration.Round(time.Millisecond), s.cfg.Clients, n)
}

// refreshKeepsPlace: polling and entering again never move anyone.
func (s *run) refreshKeepsPlace(t *testing.T) {
	var e errs
	s.parallel(len(s.users), func(i int) {
		if err := s.checkWaiting(s.position(t, s.users[i]), int64(i+1)); err != nil {
			e.add("%s position: %v", s.users[i], err)
		}
	})
	for _, i := range []int{0, len(s.users) / 2, len(s.users) - 1} {
		if err := s.checkWaiting(s.enter(t, s.users[i]), int64(i+1)); err != nil {
			e.add("%s enters again: %v", s.users[i], err)
		}
	}
	e.report(t)
}

// theLine: GET /queue/line, served by the position function, is the same
// for everyone and cacheable for a second, and every waiting user's
// position is its number minus the line's front, plus one.
func (s *run) theLine(t *testing.T) {
	a := s.do(t, request{method: http.MethodGet, path: "/queue/line"})
	var line struct {
		Status string `json:"status"`
		Front  int64  `json:"front"`
		Exact  bool   `json:"exact"`
	}
	if err := json.Unmarshal(a.Body, &line); a.Status != http.StatusOK || err != nil || line.Status != "OPEN" || !line.Exact || line.Front < 1 {
		t.Fatalf("GET /queue/line: %s (%v)", a, err)
	}
	if cc := a.Header.Get("Cache-Control"); cc != "public, max-age=1" {
		t.Errorf("Cache-Control %q, want public, max-age=1", cc)
	}
	for _, i := range []int{0, len(s.users) / 2, len(s.users) - 1} {
		st, err := decodeStanding(s.position(t, s.users[i]))
		if err != nil || st.Position == nil || st.Number-line.Front+1 != *st.Position {
			t.Errorf("%s: number %d, front %d, position %v (%v)", s.users[i], st.Number, line.Front, st.Position, err)
		}
	}
}

// fullLine: the line holds QUEUE_CAPACITY = Crowd users; one more is refused
// with 429 and Retry-After, and nobody in line is affected.
func (s *run) fullLine(t *testing.T) {
	a := s.enter(t, "latecomer")
	if err := checkError(a, http.StatusTooManyRequests, "queue_full"); err != nil {
		t.Fatal(err)
	}
	if ra, err := strconv.Atoi(a.Header.Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("429 without a Retry-After of whole seconds: %q", a.Header.Get("Retry-After"))
	}
	if err := checkNotInQueue(s.position(t, "latecomer")); err != nil {
		t.Errorf("latecomer: %v", err)
	}
	last := len(s.users) - 1
	if err := s.checkWaiting(s.enter(t, s.users[last]), int64(last+1)); err != nil {
		t.Errorf("%s in a full line: %v", s.users[last], err)
	}
}

// AdmitResult is what the admit function answers.
type AdmitResult struct {
	Batches  int  `json:"batches"`
	Failed   int  `json:"failed"`
	Admitted int  `json:"admitted"`
	Idle     bool `json:"idle"`
}

// ScheduledEvent is the payload EventBridge sends on a schedule.
func ScheduledEvent() []byte {
	var id [16]byte
	_, _ = rand.Read(id[:])
	ev := map[string]any{
		"version":     "0",
		"id":          fmt.Sprintf("%x-%x-%x-%x-%x", id[0:4], id[4:6], id[6:8], id[8:10], id[10:]),
		"detail-type": "Scheduled Event",
		"source":      "aws.events",
		"account":     "000000000000",
		"time":        time.Now().UTC().Format(time.RFC3339),
		"region":      "us-east-1",
		"resources":   []string{"arn:aws:events:us-east-1:000000000000:rule/waitroom-admit"},
		"detail":      map[string]any{},
	}
	b, _ := json.Marshal(ev)
	return b
}

// admit invokes the admit function once, as the schedule does.
func (s *run) admit(t testing.TB) (AdmitResult, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	res, err := s.env.Invoker.Invoke(ctx, gateway.Admit, ScheduledEvent())
	took := time.Since(start)
	s.mu.Lock()
	s.admitted = time.Now()
	s.mu.Unlock()
	s.rep.AdmitInvocations++
	if err != nil {
		t.Fatalf("invoke admit: %v", err)
	}
	if res.FunctionError != "" {
		t.Fatalf("admit failed (%s): %s", res.FunctionError, res.Payload)
	}
	var ar AdmitResult
	if err := json.Unmarshal(res.Payload, &ar); err != nil {
		t.Fatalf("admit answered %s: %v", res.Payload, err)
	}
	// Someone waits whenever the scenario admits, so the invocation covers
	// ADMIT_BATCHES × ADMIT_INTERVAL_MS; the jitter only shortens gaps, so
	// at least ADMIT_BATCHES batches run.
	if ar.Idle || ar.Batches < s.cfg.Batches || ar.Failed != 0 {
		t.Errorf("admit ran %d batches (%d failed, idle %v), want at least %d", ar.Batches, ar.Failed, ar.Idle, s.cfg.Batches)
	}
	return ar, took
}

// verifyLine polls everyone and checks that the admitted are exactly a
// prefix of the line (FIFO) and the others moved up by as many places.
// It returns how many are admitted.
func (s *run) verifyLine(t testing.TB) int {
	t.Helper()
	n := len(s.users)
	ready := make([]bool, n)
	answers := make([]answer, n)
	s.parallel(n, func(i int) {
		answers[i] = s.position(t, s.users[i])
		st, err := decodeStanding(answers[i])
		ready[i] = err == nil && st.Status == "READY"
	})
	k := 0
	for k < n && ready[k] {
		k++
	}
	var e errs
	for i := 0; i < n; i++ {
		if i < k {
			if err := s.checkReady(answers[i], s.users[i]); err != nil {
				e.add("%s (entered %d.): %v", s.users[i], i+1, err)
			}
			continue
		}
		if ready[i] {
			e.add("not FIFO: %s (entered %d.) is READY while %s (entered %d.) still waits", s.users[i], i+1, s.users[k], k+1)
			continue
		}
		if err := s.checkWaiting(answers[i], int64(i+1-k)); err != nil {
			e.add("%s (entered %d., %d admitted): %v", s.users[i], i+1, k, err)
		}
	}
	e.report(t)
	return k
}

// admissionFIFO: admission takes the front of the line, in order.
func (s *run) admissionFIFO(t *testing.T) {
	admitted := 0
	for i := 0; i < 2; i++ {
		ar, took := s.admit(t)
		k := s.verifyLine(t)
		if k <= admitted {
			t.Fatalf("invocation %d admitted nobody (%+v)", i+1, ar)
		}
		if ar.Admitted < k-admitted {
			t.Errorf("admit reported %d admitted, the line shows %d", ar.Admitted, k-admitted)
		}
		t.Logf("invocation %d: %d admitted in %v; the first %d of the line are READY, the rest moved up", i+1, k-admitted, took.Round(time.Millisecond), k)
		admitted = k
	}
}

// admissionRate: back-to-back invocations admit at the configured rate: at
// most rate × window + one batch (the contract's bound, rounded up to a
// whole user), and at least MinRateRatio of rate × window.
func (s *run) admissionRate(t *testing.T) {
	before := s.verifyLine(t)
	perInvocation := s.cfg.RatePerSec*float64(s.cfg.Batches*s.cfg.IntervalMs)/1000 + math.Max(1, s.cfg.batch())
	waiting := len(s.users) - before
	n := int(float64(waiting)/perInvocation) - 1 // the line must not run dry during the measurement
	if n > 5 {
		n = 5
	}
	if n < 1 {
		t.Skipf("crowd too small to measure the rate: %d waiting, %.0f per invocation", waiting, perInvocation)
	}
	start := time.Now()
	for i := 0; i < n; i++ {
		s.admit(t)
	}
	window := time.Since(start)
	after := s.verifyLine(t)
	if after == len(s.users) {
		t.Fatalf("the line ran dry during the measurement: raise Crowd or lower Batches")
	}
	got := after - before
	want := s.cfg.RatePerSec * window.Seconds()
	s.rep.RateInvocations, s.rep.RateWindow, s.rep.RateAdmitted, s.rep.RateRatio = n, window, got, float64(got)/want
	t.Logf("%d invocations back to back: %d admitted in %v, rate × window = %.1f, ratio %.3f", n, got, window.Round(time.Millisecond), want, s.rep.RateRatio)
	// Admissions are whole users: the bound is rate × window + one batch,
	// rounded up.
	if limit := math.Ceil(want + math.Max(1, s.cfg.batch()) - 1e-9); float64(got) > limit {
		t.Errorf("admitted %d in %v: more than rate × window + one batch, rounded up = %.0f", got, window, limit)
	}
	if s.rep.RateRatio < s.cfg.MinRateRatio {
		t.Errorf("admitted %d in %v: %.3f of the configured rate, below %.2f", got, window, s.rep.RateRatio, s.cfg.MinRateRatio)
	}
}

// drain: admission goes on until the whole crowd is READY, still in order.
func (s *run) drain(t *testing.T) {
	last := s.users[len(s.users)-1]
	limit := 5 + int(float64(len(s.users))/math.Max(1, s.cfg.RatePerSec*float64(s.cfg.Batches*s.cfg.IntervalMs)/1000))
	for i := 0; ; i++ {
		st, err := decodeStanding(s.position(t, last))
		if err != nil {
			t.Fatalf("%s: %v", last, err)
		}
		if st.Status == "READY" {
			break
		}
		if i == limit {
			t.Fatalf("the line did not drain in %d invocations", limit)
		}
		s.admit(t)
	}
	if k := s.verifyLine(t); k != len(s.users) {
		t.Fatalf("%d of %d READY after the last one was admitted", k, len(s.users))
	}
}

// orderGate: the gate's refusals and a failure that keeps the token.
func (s *run) orderGate(t *testing.T) {
	a, b := s.users[0], s.users[1]
	ta, tb := s.token(a), s.token(b)
	calls := s.env.Downstream.Calls()
	for _, c := range []struct {
		name   string
		token  string
		key    string
		status int
		code   string
	}{
		{"no entry token", "", "", 403, "entry_token_invalid"},
		{"forged entry token", s.room + ".AAAAAAAAAAAAAAAAAAAAAA", "", 403, "entry_token_invalid"},
		{"malformed entry token", "not-a-token", "", 403, "entry_token_invalid"},
		{"another user's entry token", tb, "", 403, "entry_token_invalid"},
		{"Idempotency-Key too long", ta, strings.Repeat("k", 129), 400, "invalid_idempotency_key"},
	} {
		if err := checkError(s.order(t, a, c.token, c.key, `{"sku":"tee","qty":1}`), c.status, c.code); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if got := s.env.Downstream.Calls(); got != calls {
		t.Errorf("refused orders reached the downstream: %d calls", got-calls)
	}
	// A downstream failure is passed through and the token survives.
	sold := s.order(t, a, ta, "sold-out-"+a, SoldOut)
	if sold.Status != http.StatusConflict || !strings.Contains(string(sold.Body), "out_of_stock") {
		t.Errorf("sold out: want the downstream's 409 out_of_stock, got %s", sold)
	}
	if got := s.env.Downstream.Calls(); got != calls+1 {
		t.Errorf("sold out: want 1 downstream call, got %d", got-calls)
	}
	if err := s.checkReady(s.position(t, a), a); err != nil {
		t.Errorf("after a failed order the token must survive: %v", err)
	}
}

// everyoneOrders: every READY user orders once through the gate.
func (s *run) everyoneOrders(t *testing.T) {
	calls := s.env.Downstream.Calls()
	demo := s.env.Downstream.Demo.Stats().Orders
	var e errs
	var orders atomic.Int64
	s.parallel(len(s.users), func(i int) {
		user := s.users[i]
		a := s.order(t, user, s.token(user), "order-"+user, `{"sku":"tee","qty":1}`)
		var o struct {
			OrderID string `json:"orderId"`
			UserID  string `json:"userId"`
		}
		if a.Status != http.StatusCreated || json.Unmarshal(a.Body, &o) != nil || o.OrderID == "" || o.UserID != user {
			e.add("%s: want 201 with an order of %s, got %s", user, user, a)
			return
		}
		orders.Add(1)
		s.mu.Lock()
		s.orders[user] = a
		s.mu.Unlock()
	})
	e.report(t)
	s.rep.Orders = int(orders.Load())
	if got := s.env.Downstream.Calls() - calls; got != int64(len(s.users)) {
		t.Errorf("%d orders made %d downstream calls", len(s.users), got)
	}
	if got := s.env.Downstream.Demo.Stats().Orders - demo; got != int64(len(s.users)) {
		t.Errorf("the order API took %d orders, want %d", got, len(s.users))
	}
}

// consumedTokens: a consumed token is refused, an idempotent retry replays
// the stored answer without the downstream, and the user's place is freed.
func (s *run) consumedTokens(t *testing.T) {
	a := s.users[0]
	calls := s.env.Downstream.Calls()
	first := s.orders[a]
	for i := 0; i < 2; i++ {
		again := s.order(t, a, s.token(a), "order-"+a, `{"sku":"tee","qty":1}`)
		if again.Status != first.Status || string(again.Body) != string(first.Body) {
			t.Errorf("idempotent retry: want the stored answer %s again, got %s", first, again)
		}
	}
	if err := checkError(s.order(t, a, s.token(a), "another-key", `{"sku":"tee","qty":1}`), 403, "entry_token_invalid"); err != nil {
		t.Errorf("consumed token, new Idempotency-Key: %v", err)
	}
	if err := checkError(s.order(t, a, s.token(a), "", `{"sku":"tee","qty":1}`), 403, "entry_token_invalid"); err != nil {
		t.Errorf("consumed token, no Idempotency-Key: %v", err)
	}
	if got := s.env.Downstream.Calls(); got != calls {
		t.Errorf("replays and refusals made %d downstream calls", got-calls)
	}
	var e errs
	s.parallel(len(s.users), func(i int) {
		if err := checkNotInQueue(s.position(t, s.users[i])); err != nil {
			e.add("%s after ordering: %v", s.users[i], err)
		}
	})
	e.report(t)
	// With the order done, the user may queue again, at the back.
	if err := s.checkWaiting(s.enter(t, a), 1); err != nil {
		t.Errorf("%s enters again after ordering: %v", a, err)
	}
	s.rep.DownstreamCalls = s.env.Downstream.Calls()
}

// malformedEvents: events API Gateway would never send get a 4xx answer and
// never take the function's process down; it keeps answering afterwards.
func (s *run) malformedEvents(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pids := s.processIDs(t)
	claims := `"requestContext":{"authorizer":{"jwt":{"claims":{"sub":"malformed"}}}}`
	garbage := `{"isBase64Encoded":true,"body":"%%% not base64 %%%","headers":{"x-entry-token":"` + s.room + `.AAAAAAAAAAAAAAAAAAAAAA"},` + claims + `}`
	// status says what each function answers; nil means any 4xx from the
	// three HTTP functions, and functions missing from a map are skipped.
	cases := []struct {
		payload string
		status  map[string]int
	}{
		{`[]`, nil}, {`"an event"`, nil}, {`42`, nil}, {`true`, nil}, {`null`, nil},
		{`{"headers":{"x-entry-token":1}}`, nil},
		{`{"requestContext":"nope"}`, nil},
		{`{"requestContext":{"authorizer":{"jwt":{"claims":{"sub":7}}}}}`, nil},
		{`{"queryStringParameters":{"room":["a"]},` + claims + `}`, nil},
		{`{"queryStringParameters":{"room":"../../etc"},` + claims + `}`, map[string]int{gateway.Enter: 400, gateway.Position: 400, gateway.OrderGate: 403}},
		{garbage, map[string]int{gateway.OrderGate: 400}},
	}
	for _, fn := range []string{gateway.Enter, gateway.Position, gateway.OrderGate} {
		for _, c := range cases {
			want, exact := c.status[fn]
			if c.status != nil && !exact {
				continue
			}
			res, err := s.env.Invoker.Invoke(ctx, fn, []byte(c.payload))
			if err != nil {
				t.Errorf("%s %.60s: %v", fn, c.payload, err)
				continue
			}
			var resp struct {
				StatusCode int `json:"statusCode"`
			}
			if res.FunctionError != "" || json.Unmarshal(res.Payload, &resp) != nil {
				t.Errorf("%s %.60s: want a 4xx answer, got a function error %q: %s", fn, c.payload, res.FunctionError, res.Payload)
				continue
			}
			if (exact && resp.StatusCode != want) || (!exact && (resp.StatusCode < 400 || resp.StatusCode > 499)) {
				t.Errorf("%s %.60s: want %s, got %s", fn, c.payload, map[bool]string{true: strconv.Itoa(want), false: "a 4xx"}[exact], res.Payload)
			}
		}
	}
	// Bytes that are not JSON at all: the Lambda Invoke API refuses them
	// before any function runs; an emulator passes them on and the runtime
	// answers with a function error. Either way the process stays up.
	for _, fn := range gateway.Functions {
		for _, payload := range []string{"not json", "{", ""} {
			res, err := s.env.Invoker.Invoke(ctx, fn, []byte(payload))
			if err == nil && strings.Contains(res.FunctionError, "Runtime.") {
				t.Errorf("%s %q: the runtime failed: %s %s", fn, payload, res.FunctionError, res.Payload)
			}
		}
	}
	// Admission does not need its event: odd payloads admit as usual (a
	// whole invocation, or one batch when nobody waits and no token is live).
	for _, payload := range []string{`[]`, `{"source":"not-events"}`, `"x"`} {
		res, err := s.env.Invoker.Invoke(ctx, gateway.Admit, []byte(payload))
		var ar AdmitResult
		if err != nil || res.FunctionError != "" || json.Unmarshal(res.Payload, &ar) != nil || ar.Batches < 1 || (!ar.Idle && ar.Batches < s.cfg.Batches) {
			t.Errorf("admit %s: want an admission result, got %v %s %s", payload, err, res.FunctionError, res.Payload)
		}
		s.rep.AdmitInvocations++
	}
	// Every function still answers, from the same process.
	if err := s.checkWaiting(s.enter(t, "after-malformed"), 0); err != nil {
		t.Errorf("enter after malformed events: %v", err)
	}
	if _, err := decodeStanding(s.position(t, "after-malformed")); err != nil {
		t.Errorf("position after malformed events: %v", err)
	}
	s.admit(t)
	if err := checkError(s.order(t, "after-malformed", s.room+".AAAAAAAAAAAAAAAAAAAAAA", "", "{}"), 403, "entry_token_invalid"); err != nil {
		t.Errorf("order gate after malformed events: %v", err)
	}
	if pids == nil {
		return
	}
	watcher := s.env.Invoker.(ProcessWatcher)
	for _, fn := range gateway.Functions {
		if pid, err := watcher.ProcessID(fn); err != nil || pid != pids[fn] {
			t.Errorf("%s: the function's process changed (%d → %d, %v): it crashed", fn, pids[fn], pid, err)
		}
	}
	t.Logf("every function kept its process: %v", pids)
}

// processIDs returns the process serving each function, or nil when the
// invoker cannot tell processes apart.
func (s *run) processIDs(t *testing.T) map[string]int {
	watcher, ok := s.env.Invoker.(ProcessWatcher)
	if !ok {
		t.Logf("the invoker cannot tell processes apart: checking answers only")
		return nil
	}
	pids := map[string]int{}
	for _, fn := range gateway.Functions {
		pid, err := watcher.ProcessID(fn)
		if err != nil {
			t.Fatalf("%s: %v", fn, err)
		}
		pids[fn] = pid
	}
	return pids
}
