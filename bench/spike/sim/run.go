package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/httpapi"
	"github.com/waitroom/waitroom/localrun"
	"github.com/waitroom/waitroom/orderapi"
	"github.com/waitroom/waitroom/redisstore"
)

// TimelineStep is the resolution of Result.InFlight and Queued.
const TimelineStep = 100 * time.Millisecond

// PollStep is the resolution of Result.PollsPerStep and WaitingPerStep.
const PollStep = time.Second

// simAdminToken is the admin API's bearer token in the simulation, whose
// admin requests never leave the process.
const simAdminToken waitroom.Secret = "spike-simulator-admin-token"

// Env is what runs share: a Redis server.
type Env struct {
	Redis *Redis
	Admin *redis.Client
}

// NewEnv connects to REDIS_URL when given, else spawns redis-server.
func NewEnv(redisURL string) (*Env, error) {
	var r *Redis
	var err error
	if redisURL != "" {
		r, err = UseRedis(redisURL)
	} else {
		r, err = StartRedis()
	}
	if err != nil {
		return nil, err
	}
	opt, err := redis.ParseURL(r.URL)
	if err != nil {
		r.Stop()
		return nil, err
	}
	return &Env{Redis: r, Admin: redis.NewClient(opt)}, nil
}

// Close stops what NewEnv started.
func (e *Env) Close() {
	_ = e.Admin.Close()
	e.Redis.Stop()
}

type user struct {
	id                  string
	arrive              time.Duration
	enterFrom, enterTo  time.Duration
	readyAt, orderedAt  time.Duration
	admittedAt          time.Duration // when Admitter.OnBatch reported the user (room)
	polls               int
	requests            int // enter, position and order requests sent
	abandon, ok, gaveUp bool
	waited              time.Duration
	admission           int64
	push                chan string   // push mode: the token at a draw's admission, "" at its number's (claimed then)
	spot                string        // the signed place its answers give, sent back as X-Queue-Place (docs/API.md, "An account's place")
	instant             bool          // enter answered READY (instant admission): no batch admitted it
	expiresAt           time.Duration // the entry token's expiry (0: no token seen)
	orderTries          int           // orders sent to the gate
	orderFails          int           // of which answered 5xx (the order API's 503, 502, a 504 timeout)
}

// passedNumber is a batch's admission of a number whose holder is not
// known yet.
type passedNumber struct {
	seq           int64
	at, expiresAt time.Duration
}

type batchRec struct {
	at       time.Duration
	admitted int
	waiting  int64
}

type runner struct {
	sc     Scenario
	st     Strategy
	epoch  time.Time
	api    *httpapi.API
	orders *orderapi.Client
	users  []*user
	byID   map[string]*user // by the store's user (httpapi.HeaderUser)
	rng    *rand.Rand
	// numbers are the users by the number their enter was told, passed
	// the numbers a batch admitted before their holder's enter answered.
	numbers map[int64]*user
	passed  map[int64]passedNumber

	mu      sync.Mutex
	status  map[string]int
	admSeq  int64
	strays  int // admissions that named no user of the run
	batches []batchRec
	accepts []time.Duration // limiter: first accepts, in order
	pollAt  []int           // position requests per PollStep
	lim     *limiter
	// attackers (by the store's user) hold tokens to steer the law
	// (attack.go); counts are the control windows' calls handed over.
	attackers    map[string]bool
	attackOrders int
	attackOK     int // attackers' orders answered 2xx
	counts       counted
}

// Run plays one scenario with one strategy on a fresh Redis database.
func Run(ctx context.Context, env *Env, sc Scenario, st Strategy) (*Result, error) {
	if err := env.fresh(ctx); err != nil {
		return nil, err
	}
	pool := NewPool(sc.Connections, sc.Service, sc.Seed)
	url, stopPool, err := servePool(pool)
	if err != nil {
		return nil, err
	}
	defer stopPool()
	arrivals, err := ArrivalTimes(sc.Curve, sc.Users, sc.Spike, sc.Seed)
	if err != nil {
		return nil, err
	}
	r, store, err := newRunner(env, sc, st, url, arrivals)
	if err != nil {
		return nil, err
	}
	defer store.Close()

	// The whole run is bounded, whatever happens.
	limit := time.Duration(float64(sc.Users)/sc.Rate()*float64(time.Second))*3 + sc.Spike + 2*time.Minute
	runCtx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	r.epoch = time.Now()
	pool.Reset(r.epoch)
	stopAdmit := r.startAdmitter(runCtx, store)
	r.playUsers(runCtx)
	end := time.Since(r.epoch)
	stopAdmit()
	if runCtx.Err() != nil && ctx.Err() == nil {
		// Report what happened; users still out are counted as gave up.
		fmt.Printf("warning: %s did not finish within %s\n", st.Name, limit)
	}
	if err := r.strayed(); err != nil {
		return nil, err
	}
	res := r.result(pool, end)
	if cmds, err := CommandStats(ctx, env.Admin); err == nil {
		res.redisStats(cmds)
	}
	return res, nil
}

// fresh empties the Redis database and its statistics for a run.
func (e *Env) fresh(ctx context.Context) error {
	if err := e.Admin.FlushAll(ctx).Err(); err != nil {
		return fmt.Errorf("FLUSHALL: %w", err)
	}
	if err := e.Admin.ConfigResetStat(ctx).Err(); err != nil {
		return fmt.Errorf("CONFIG RESETSTAT: %w", err)
	}
	return nil
}

// servePool serves the order API on a loopback port; stop closes it.
func servePool(pool *Pool) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: pool, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// roomStore is the Redis side of a run: the store and its client.
type roomStore struct {
	*redisstore.Store
	rdb redis.UniversalClient
}

func (s roomStore) Close() { _ = s.rdb.Close() }

// newRunner configures the handlers as a deployment would (the scenario's
// rate, interval and poll tiers) and draws the users, one per arrival.
func newRunner(env *Env, sc Scenario, st Strategy, orderURL string, arrivals []time.Duration) (*runner, roomStore, error) {
	tiers, err := waitroom.ParsePollTiers(sc.Tiers())
	if err != nil {
		return nil, roomStore{}, err
	}
	tickets, err := simTicketKeys()
	if err != nil {
		return nil, roomStore{}, err
	}
	cfg := waitroom.Config{
		Visitor: waitroom.VisitorConfig{Tickets: tickets}, // signs accounts' places
		// The run's room sells: no operator creates it (ORDER_ROOMS, issue 32).
		OrderRooms: []string{waitroom.DefaultRoom},
		RedisURL:   env.Redis.URL, AdmitRatePerSec: sc.Rate(), AdmitInterval: st.AdmitInterval(), AdmitBatches: 1 << 30,
		EntryTokenTTL: sc.TokenTTL, QueueCapacity: 10_000_000, OrderAPIURL: orderURL, PollTiers: tiers,
		OrderTimeout: sc.OrderTimeout, TrustUserHeader: true, Addr: "127.0.0.1:0", OpenRooms: true,
	}
	rdb, err := redisstore.NewClient(cfg, redisstore.Credentials{})
	if err != nil {
		return nil, roomStore{}, err
	}
	store := roomStore{redisstore.New(rdb, cfg), rdb}
	r := &runner{sc: sc, st: st, status: map[string]int{}, byID: map[string]*user{}, attackers: map[string]bool{},
		numbers: map[int64]*user{}, passed: map[int64]passedNumber{},
		rng: rand.New(rand.NewPCG(sc.Seed, 99)), orders: orderapi.New(orderURL, sc.OrderTimeout)}
	r.sc.PollTiers = tiers.String()
	r.api = &httpapi.API{Config: cfg, Queue: store, Orders: r.orders,
		Admin: &httpapi.Admin{Config: cfg, Rooms: store, Token: simAdminToken}}
	if st.Kind == "limiter" {
		r.lim = newLimiter(sc.Rate(), sc.Rate()*sc.LimiterBurst)
	}
	for i, at := range arrivals {
		u := &user{id: fmt.Sprintf("user-%06d", i), arrive: at, abandon: r.rng.Float64() < sc.Abandon}
		if sc.Notify == "push" {
			u.push = make(chan string, 1)
		}
		r.users = append(r.users, u)
		r.byID[httpapi.HeaderUser(u.id)] = u
	}
	return r, store, nil
}

// simTicketKeys is a fresh TICKET_SECRET for one run: with it the handlers
// give each waiting account its place, as a deployment does.
func simTicketKeys() (waitroom.TicketKeys, error) {
	secret, err := waitroom.GenerateTicketSecret()
	if err != nil {
		return waitroom.TicketKeys{}, err
	}
	return waitroom.ParseTicketKeys(secret)
}

// startAdmitter runs the admission schedule of a room strategy; the
// returned func stops it and waits for it.
func (r *runner) startAdmitter(ctx context.Context, store roomStore) (stop func()) {
	if r.st.Kind != "room" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	// One long invocation stands for the chain of scheduled ones, chained
	// as the local runner chains them: no gap between invocations, and an
	// invocation that found the room idle (before the first enter) followed
	// by the next one an interval later.
	adm := &waitroom.Admitter{Queue: store, Interval: r.st.AdmitInterval(), Batches: 1 << 30, OnBatch: r.onBatch}
	if !r.st.Jitter {
		adm.Rand = func() float64 { return 0 }
	}
	go func() { defer close(done); localrun.AdmitForever(ctx, slog.New(slog.DiscardHandler), adm) }()
	return func() { cancel(); <-done }
}

// playUsers starts every user at its arrival time and waits for all.
func (r *runner) playUsers(ctx context.Context) {
	var wg sync.WaitGroup
	for _, u := range r.users {
		wg.Add(1)
		go func(u *user) {
			defer wg.Done()
			if !sleep(ctx, time.Until(r.epoch.Add(u.arrive))) {
				u.gaveUp = true
				return
			}
			switch r.st.Kind {
			case "direct":
				r.direct(ctx, u)
			case "limiter":
				r.limited(ctx, u)
			default:
				r.room(ctx, u)
			}
		}(u)
	}
	wg.Wait()
}

// redisStats fills the Redis command counts, the bookkeeping of the run
// itself left out.
func (res *Result) redisStats(cmds map[string]int64) {
	for _, c := range []string{"info", "config|resetstat", "flushall", "ping", "hello", "client|setinfo"} {
		delete(cmds, c)
	}
	res.RedisCommands = cmds
	var all, ev int64
	for name, n := range cmds {
		all += n
		if strings.HasPrefix(name, "eval") {
			ev += n
		}
	}
	res.RedisCmdPerUser = round2(float64(all) / float64(res.Users))
	res.RedisEvalPerUser = round2(float64(ev) / float64(res.Users))
}

func (r *runner) since() time.Duration { return time.Since(r.epoch) }

func (r *runner) count(key string) {
	r.mu.Lock()
	r.status[key]++
	r.mu.Unlock()
}

// pollSent counts one position request in its PollStep.
func (r *runner) pollSent() {
	i := int(r.since() / PollStep)
	r.mu.Lock()
	for len(r.pollAt) <= i {
		r.pollAt = append(r.pollAt, 0)
	}
	r.pollAt[i]++
	r.mu.Unlock()
}

// strayed fails a run whose batches admitted users it cannot name: its
// admission order, times and tokens would be silently missing (the store
// names a user as its identity keeps it, httpapi.HeaderUser).
func (r *runner) strayed() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.strays > 0 {
		return fmt.Errorf("%d admissions named no user of the run (the store's user ids differ from the runner's)", r.strays)
	}
	return nil
}

func (r *runner) onBatch(b waitroom.Batch) {
	now := r.since()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rb := range b.Rooms {
		for _, a := range rb.Admitted {
			r.admSeq++
			if a.User == "" { // a number: its holder claims its token (docs/API.md, "Claiming one's turn")
				p := passedNumber{r.admSeq, now, a.ExpiresAt.Sub(r.epoch)}
				if u := r.numbers[a.Number]; u != nil {
					r.admitted(u, p, "")
				} else {
					r.passed[a.Number] = p
				}
				continue
			}
			u := r.byID[a.User]
			if u == nil && r.attackers[a.User] {
				continue
			}
			if u == nil {
				r.strays++
				continue
			}
			r.admitted(u, passedNumber{r.admSeq, now, a.ExpiresAt.Sub(r.epoch)}, a.Token)
		}
		r.batches = append(r.batches, batchRec{at: now, admitted: len(rb.Admitted), waiting: rb.Waiting})
		if rb.Downstream != nil {
			r.counts.add(rb.Downstream)
		}
	}
}

// admitted records u's admission (r.mu held); a push-mode user is told:
// its token (a draw's), or that its number passed, which it then claims.
func (r *runner) admitted(u *user, p passedNumber, token string) {
	u.admission, u.admittedAt, u.expiresAt = p.seq, p.at, p.expiresAt
	if u.push != nil {
		select {
		case u.push <- token:
		default: // told already
		}
	}
}

// numbered keeps the number u's answer gave, and applies an admission of
// it that came first.
func (r *runner) numbered(u *user, n int64) {
	if n == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.numbers[n] = u
	if p, ok := r.passed[n]; ok {
		delete(r.passed, n)
		r.admitted(u, p, "")
	}
}

// call sends one request through the same router the local runner and a
// single-function deployment use.
func (r *runner) call(ctx context.Context, method, path, userID string, hdr map[string]string, body string) events.APIGatewayV2HTTPResponse {
	h := map[string]string{"x-user-id": userID, "content-type": "application/json"}
	for k, v := range hdr {
		h[k] = v
	}
	req := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: method + " " + path, RawPath: path, Headers: h, Body: body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path}},
	}
	resp := r.api.Route(ctx, req)
	r.count(fmt.Sprintf("%s %s %d", method, path, resp.StatusCode))
	return resp
}

type standing struct {
	Status               string `json:"status"`
	Position             int64  `json:"position"`
	EstimatedWaitSeconds int64  `json:"estimatedWaitSeconds"`
	EntryToken           string `json:"entryToken"`
	ExpiresAt            string `json:"expiresAt"` // READY: RFC 3339, whole seconds
	PollAfterMs          *int64 `json:"pollAfterMs"`
	Place                string `json:"place"`  // an account's signed place while it waits
	Number               int64  `json:"number"` // its number while it waits
}

// placeHeader sends back the last place u was given, as a client does.
func placeHeader(u *user) map[string]string {
	if u.spot == "" {
		return nil
	}
	return map[string]string{waitroom.PlaceHeader: u.spot}
}

// keepPlace keeps the place an answer gives for u's next requests.
func keepPlace(u *user, st standing) {
	if st.Place != "" {
		u.spot = st.Place
	}
}

func retryAfter(resp events.APIGatewayV2HTTPResponse, def time.Duration) time.Duration {
	if s, err := strconv.Atoi(resp.Headers["Retry-After"]); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return def
}

func (r *runner) backoff() time.Duration {
	r.mu.Lock()
	f := r.rng.Float64()
	r.mu.Unlock()
	return r.sc.RetryMin + time.Duration(f*float64(r.sc.RetryMax-r.sc.RetryMin))
}

// room is a user of the waiting room: enter, poll as told, order when READY.
func (r *runner) room(ctx context.Context, u *user) {
	u.enterFrom = r.since()
	var st standing
	if !r.enter(ctx, u, &st) {
		u.gaveUp = true
		return
	}
	u.enterTo = r.since()
	if st.Status == "READY" { // instant admission: ready in the enter's answer
		r.mu.Lock()
		u.instant, u.admittedAt = true, u.enterTo
		r.mu.Unlock()
	}
	token, ok := r.waitReady(ctx, u, st)
	if !ok {
		u.gaveUp = true
		return
	}
	u.readyAt = r.since()
	u.waited = u.readyAt - u.enterTo
	if u.abandon {
		return
	}
	if !sleep(ctx, r.sc.Think) {
		u.gaveUp = true
		return
	}
	r.order(ctx, u, token)
}

// enter joins the line, retrying after Retry-After; false when stopped.
func (r *runner) enter(ctx context.Context, u *user, st *standing) bool {
	for {
		u.requests++
		resp := r.call(ctx, http.MethodPost, "/queue/enter", u.id, placeHeader(u), "")
		if resp.StatusCode == http.StatusOK {
			*st = standing{}
			_ = json.Unmarshal([]byte(resp.Body), st)
			keepPlace(u, *st)
			r.numbered(u, st.Number)
			return true
		}
		if !sleep(ctx, retryAfter(resp, time.Second)) {
			return false
		}
	}
}

// waitReady polls as the answers say (or waits for the push) until READY
// and returns the entry token; false when stopped.
func (r *runner) waitReady(ctx context.Context, u *user, st standing) (string, bool) {
	told := false // pushed that its number passed: it polls from then on
	for {
		switch st.Status {
		case "READY":
			r.tokenSeen(u, st)
			return st.EntryToken, true
		case "NOT_IN_QUEUE": // token expired or lost: join again
			if !r.enter(ctx, u, &st) {
				return "", false
			}
			continue
		}
		if u.push != nil && !told {
			select {
			case token := <-u.push:
				if token != "" {
					return token, true
				}
				told = true
				st = r.position(ctx, u) // the stream's read, which claims the turn
				continue
			case <-ctx.Done():
				return "", false
			}
		}
		if !sleep(ctx, r.pollWait(st)) {
			return "", false
		}
		u.polls++
		u.requests++
		r.pollSent()
		st = r.position(ctx, u)
	}
}

// position asks where u stands, carrying its place; a failed request reads
// as still WAITING (polled again after a second).
func (r *runner) position(ctx context.Context, u *user) standing {
	resp := r.call(ctx, http.MethodGet, "/queue/position", u.id, placeHeader(u), "")
	if resp.StatusCode != http.StatusOK {
		return standing{Status: "WAITING"}
	}
	var st standing
	_ = json.Unmarshal([]byte(resp.Body), &st)
	keepPlace(u, st)
	return st
}

// tokenSeen records the expiry of a READY answer's token when no batch
// reported it (instant admission).
func (r *runner) tokenSeen(u *user, st standing) {
	exp, err := time.Parse(time.RFC3339, st.ExpiresAt)
	r.mu.Lock()
	defer r.mu.Unlock()
	if u.expiresAt == 0 && err == nil {
		u.expiresAt = exp.Sub(r.epoch)
	}
}

// pollWait is how long a waiting user sleeps: pollAfterMs, or with the
// tier-only what-if the plain tier of its estimated wait.
func (r *runner) pollWait(st standing) time.Duration {
	if st.PollAfterMs == nil {
		return time.Second
	}
	if !r.sc.TierOnly {
		return time.Duration(*st.PollAfterMs) * time.Millisecond
	}
	// What-if: the server before poll-at-turn answered the plain tier.
	r.mu.Lock()
	f := r.rng.Float64()
	r.mu.Unlock()
	return time.Duration(r.api.Config.PollTiers.Ms(st.EstimatedWaitSeconds, f)) * time.Millisecond
}

// order posts the order with the entry token until it is answered 2xx.
func (r *runner) order(ctx context.Context, u *user, token string) {
	hdr := map[string]string{"x-entry-token": token, "idempotency-key": u.id + "-order"}
	for {
		u.requests++
		resp := r.call(ctx, http.MethodPost, "/orders", u.id, hdr, `{"sku":"tv-55","qty":1}`)
		u.orderTries++
		if resp.StatusCode >= 500 {
			u.orderFails++
		}
		switch {
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			u.ok, u.orderedAt = true, r.since()
			return
		case resp.StatusCode == http.StatusForbidden:
			u.gaveUp = true // token expired: out of the simulation's scope
			return
		}
		if !sleep(ctx, r.backoff()) {
			u.gaveUp = true
			return
		}
	}
}

// readyToOrder starts a user who needs no line (direct, rate limiter): it
// "enters" on arrival, then thinks; false if it abandons or is stopped.
func (r *runner) readyToOrder(ctx context.Context, u *user) bool {
	u.enterFrom = r.since()
	u.enterTo = u.enterFrom
	if u.abandon {
		return false
	}
	if !sleep(ctx, r.sc.Think) {
		u.gaveUp = true
		return false
	}
	return true
}

// direct is a user without a waiting room: order at once, retry on failure.
func (r *runner) direct(ctx context.Context, u *user) {
	if !r.readyToOrder(ctx, u) {
		return
	}
	for attempt := 1; ; attempt++ {
		if r.place(ctx, u, "direct") {
			return
		}
		if attempt >= r.sc.MaxAttempts || !sleep(ctx, r.backoff()) {
			u.gaveUp = true
			return
		}
	}
}

// limited is a user behind a 429 rate limiter: rejected users retry.
func (r *runner) limited(ctx context.Context, u *user) {
	if !r.readyToOrder(ctx, u) {
		return
	}
	for {
		ok, seq := r.lim.allow(u.id)
		if ok {
			r.count("POST /orders (limiter) pass")
			r.mu.Lock()
			if u.admission == 0 {
				u.admission = seq
				r.accepts = append(r.accepts, r.since())
			}
			r.mu.Unlock()
			if r.place(ctx, u, "limiter") {
				return
			}
		} else {
			r.count("POST /orders (limiter) 429")
		}
		if !sleep(ctx, r.backoff()) {
			u.gaveUp = true
			return
		}
	}
}

func (r *runner) place(ctx context.Context, u *user, via string) bool {
	ans, err := r.orders.PlaceOrder(ctx, orderapi.Request{User: u.id, IdempotencyKey: u.id + "-order", Body: []byte(`{"sku":"tv-55","qty":1}`)})
	code := ans.Status
	if err != nil {
		code = http.StatusBadGateway
		if waitroom.ErrorCode(err) == waitroom.EOrderTimeout {
			code = http.StatusGatewayTimeout
		}
	}
	r.count(fmt.Sprintf("POST /orders (%s) %d", via, code))
	if code >= 200 && code < 300 {
		u.ok, u.orderedAt = true, r.since()
		return true
	}
	return false
}

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// limiter is a token bucket in front of the order API, the alternative the
// seeds rejected. It is in process and exact: it costs no Redis command.
type limiter struct {
	mu          sync.Mutex
	rate, burst float64
	avail       float64
	last        time.Time
	arrived     map[string]int64
	passed      int64
}

func newLimiter(rate, burst float64) *limiter {
	if burst < 1 {
		burst = 1
	}
	return &limiter{rate: rate, burst: burst, avail: burst, last: time.Now(), arrived: map[string]int64{}}
}

// allow takes one token if there is one; seq is the order of passing.
func (l *limiter) allow(user string) (bool, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.arrived[user]; !ok {
		l.arrived[user] = int64(len(l.arrived) + 1)
	}
	now := time.Now()
	l.avail = min(l.burst, l.avail+now.Sub(l.last).Seconds()*l.rate)
	l.last = now
	if l.avail < 1 {
		return false, 0
	}
	l.avail--
	l.passed++
	return true, l.passed
}

func (l *limiter) arrival(user string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.arrived[user]
}
