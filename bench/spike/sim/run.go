package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/awslambda"
	"github.com/waitroom/waitroom/orderapi"
	"github.com/waitroom/waitroom/redisstore"
)

// Result is what one strategy did to one scenario.
type Result struct {
	Group    string   `json:"group"` // which experiment of the report
	Strategy Strategy `json:"strategy"`
	Scenario Scenario `json:"scenario"`

	Users     int     `json:"users"`
	Ordered   int     `json:"ordered"`
	Abandoned int     `json:"abandoned"`
	GaveUp    int     `json:"gaveUp"`
	Seconds   float64 `json:"seconds"` // first arrival → last user done

	// Downstream (at the pool): arrival → answer, served requests only.
	OrderP50Ms, OrderP95Ms, OrderP99Ms, OrderMaxMs float64
	DownstreamRequests                             int `json:"downstreamRequests"`
	DownstreamCancelled                            int `json:"downstreamCancelled"` // callers that gave up while queued
	DownstreamMaxInFlight                          int `json:"downstreamMaxInFlight"`
	DownstreamMaxQueued                            int `json:"downstreamMaxQueued"`

	// Users: arrival → order answered 2xx.
	E2EP50Ms, E2EP95Ms, E2EP99Ms, E2EMaxMs float64

	AdmittedPerSec   float64 `json:"admittedPerSec"`   // 0 when not applicable
	ConfiguredPerSec float64 `json:"configuredPerSec"` // 0 when not applicable
	FIFOInversions   int64   `json:"fifoInversions"`
	UsersOvertaken   int     `json:"usersOvertaken"`

	Polls              int     `json:"polls"`
	WaitingUserMinutes float64 `json:"waitingUserMinutes"`
	PollsPerUserMinute float64 `json:"pollsPerUserMinute"`
	PollsPerUser       float64 `json:"pollsPerUser"` // position requests per user who waited

	Status           map[string]int   `json:"status"` // "POST /orders 201" → count
	RedisCommands    map[string]int64 `json:"redisCommands"`
	RedisCmdPerUser  float64          `json:"redisCommandsPerUser"` // all commands, scripts' inner calls included
	RedisEvalPerUser float64          `json:"redisScriptsPerUser"`  // EVALSHA/EVAL calls

	// Polling load over time (room, poll mode), one entry per PollStep:
	// position requests sent in that second, and the mean number of users
	// waiting (enter returned → READY seen) during it. Fixed 2 s polling of
	// the same users would send WaitingPerStep/2 requests per second.
	PollsPerStep        []int     `json:"pollsPerStep,omitempty"`
	WaitingPerStep      []float64 `json:"waitingPerStep,omitempty"`
	PeakPollsPerSec     int       `json:"peakPollsPerSec,omitempty"`     // the busiest second of position requests
	PeakPollsAtSec      int       `json:"peakPollsAtSec,omitempty"`      // which second (since the spike began)
	Fixed2sAtPeakPerSec float64   `json:"fixed2sAtPeakPerSec,omitempty"` // fixed 2 s polling in that same second
	PeakWaiting         float64   `json:"peakWaiting,omitempty"`         // the largest mean waiting population of a second
	Fixed2sPeakPerSec   float64   `json:"fixed2sPeakPerSec,omitempty"`   // fixed 2 s polling at that peak: PeakWaiting/2
	MaxWaitSeconds      float64   `json:"maxWaitSeconds,omitempty"`      // longest enter → READY seen

	Batches  [][3]float64 `json:"batches,omitempty"` // room: [ms since start, admitted, waiting after]
	InFlight []int        `json:"inFlight"`          // max in flight per TimelineStep
	Queued   []int        `json:"queued"`
}

// TimelineStep is the resolution of Result.InFlight and Queued.
const TimelineStep = 100 * time.Millisecond

// PollStep is the resolution of Result.PollsPerStep and WaitingPerStep.
const PollStep = time.Second

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
	polls               int
	abandon, ok, gaveUp bool
	waited              time.Duration
	admission           int64
	push                chan string // push mode: the token, at admission
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
	api    *awslambda.API
	orders *orderapi.Client
	users  []*user
	byID   map[string]*user
	rng    *rand.Rand

	mu      sync.Mutex
	status  map[string]int
	admSeq  int64
	batches []batchRec
	accepts []time.Duration // limiter: first accepts, in order
	pollAt  []int           // position requests per PollStep
	lim     *limiter
}

// Run plays one scenario with one strategy on a fresh Redis database.
func Run(ctx context.Context, env *Env, sc Scenario, st Strategy) (*Result, error) {
	if err := env.Admin.FlushAll(ctx).Err(); err != nil {
		return nil, fmt.Errorf("FLUSHALL: %w", err)
	}
	if err := env.Admin.ConfigResetStat(ctx).Err(); err != nil {
		return nil, fmt.Errorf("CONFIG RESETSTAT: %w", err)
	}
	arrivals, err := ArrivalTimes(sc.Curve, sc.Users, sc.Spike, sc.Seed)
	if err != nil {
		return nil, err
	}

	pool := NewPool(sc.Connections, sc.Service, sc.Seed)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: pool, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	orderURL := "http://" + ln.Addr().String()

	interval := st.Interval
	if interval == 0 {
		interval = 100 * time.Millisecond
	}
	cfg := waitroom.Config{
		RedisURL: env.Redis.URL, AdmitRatePerSec: sc.Rate(), AdmitInterval: interval, AdmitBatches: 1 << 30,
		EntryTokenTTL: sc.TokenTTL, QueueCapacity: 10_000_000, OrderAPIURL: orderURL,
		OrderTimeout: sc.OrderTimeout, TrustUserHeader: true, Addr: "127.0.0.1:0",
	}
	rdb, err := redisstore.NewClient(cfg, redisstore.Credentials{})
	if err != nil {
		return nil, err
	}
	defer rdb.Close()
	store := redisstore.New(rdb, cfg)
	r := &runner{sc: sc, st: st, status: map[string]int{}, byID: map[string]*user{},
		rng: rand.New(rand.NewPCG(sc.Seed, 99)), orders: orderapi.New(orderURL, sc.OrderTimeout)}
	r.api = &awslambda.API{Config: cfg, Queue: store, Orders: r.orders}
	if st.Kind == "limiter" {
		r.lim = newLimiter(sc.Rate(), sc.Rate()*sc.LimiterBurst)
	}
	for i, at := range arrivals {
		u := &user{id: fmt.Sprintf("user-%06d", i), arrive: at, abandon: r.rng.Float64() < sc.Abandon}
		if sc.Notify == "push" {
			u.push = make(chan string, 1)
		}
		r.users = append(r.users, u)
		r.byID[u.id] = u
	}

	// The whole run is bounded, whatever happens.
	limit := time.Duration(float64(sc.Users)/sc.Rate()*float64(time.Second))*3 + sc.Spike + 2*time.Minute
	runCtx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()

	r.epoch = time.Now()
	pool.Reset(r.epoch)
	admitCtx, stopAdmit := context.WithCancel(runCtx)
	admitDone := make(chan struct{})
	if st.Kind == "room" {
		// One long invocation stands for the chain of scheduled ones (the
		// local runner chains them back to back): no gap between invocations.
		adm := &waitroom.Admitter{Queue: store, Interval: interval, Batches: 1 << 30, OnBatch: r.onBatch}
		if !st.Jitter {
			adm.Rand = func() float64 { return 0 }
		}
		go func() { defer close(admitDone); _, _ = adm.Run(admitCtx) }()
	} else {
		close(admitDone)
	}

	var wg sync.WaitGroup
	for _, u := range r.users {
		wg.Add(1)
		go func(u *user) {
			defer wg.Done()
			if !sleep(runCtx, time.Until(r.epoch.Add(u.arrive))) {
				u.gaveUp = true
				return
			}
			switch st.Kind {
			case "direct":
				r.direct(runCtx, u)
			case "limiter":
				r.limited(runCtx, u)
			default:
				r.room(runCtx, u)
			}
		}(u)
	}
	wg.Wait()
	end := time.Since(r.epoch)
	stopAdmit()
	<-admitDone
	if runCtx.Err() != nil && ctx.Err() == nil {
		// Report what happened; users still out are counted as gave up.
		fmt.Printf("warning: %s did not finish within %s\n", st.Name, limit)
	}

	res := r.result(pool, end)
	cmds, err := CommandStats(ctx, env.Admin)
	if err == nil {
		delete(cmds, "info")
		delete(cmds, "config|resetstat")
		delete(cmds, "flushall")
		delete(cmds, "ping")
		delete(cmds, "hello")
		delete(cmds, "client|setinfo")
		res.RedisCommands = cmds
		var all, ev int64
		for name, n := range cmds {
			all += n
			if strings.HasPrefix(name, "eval") {
				ev += n
			}
		}
		res.RedisCmdPerUser = round2(float64(all) / float64(sc.Users))
		res.RedisEvalPerUser = round2(float64(ev) / float64(sc.Users))
	}
	return res, nil
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

func (r *runner) onBatch(b waitroom.Batch) {
	now := r.since()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rb := range b.Rooms {
		for _, a := range rb.Admitted {
			r.admSeq++
			if u := r.byID[a.User]; u != nil {
				u.admission = r.admSeq
				if u.push != nil {
					u.push <- a.Token
				}
			}
		}
		r.batches = append(r.batches, batchRec{at: now, admitted: len(rb.Admitted), waiting: rb.Waiting})
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
	PollAfterMs          *int64 `json:"pollAfterMs"`
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
	enter := func() bool {
		for {
			resp := r.call(ctx, http.MethodPost, "/queue/enter", u.id, nil, "")
			if resp.StatusCode == http.StatusOK {
				_ = json.Unmarshal([]byte(resp.Body), &st)
				return true
			}
			if !sleep(ctx, retryAfter(resp, time.Second)) {
				return false
			}
		}
	}
	if !enter() {
		u.gaveUp = true
		return
	}
	u.enterTo = r.since()
	waitFrom := u.enterTo
	token := ""
	for token == "" {
		switch st.Status {
		case "READY":
			token = st.EntryToken
			continue
		case "NOT_IN_QUEUE": // token expired or lost: join again
			if !enter() {
				u.gaveUp = true
				return
			}
			continue
		}
		if u.push != nil {
			select {
			case token = <-u.push:
			case <-ctx.Done():
				u.gaveUp = true
				return
			}
			continue
		}
		wait := time.Second
		if st.PollAfterMs != nil {
			wait = time.Duration(*st.PollAfterMs) * time.Millisecond
		}
		if r.sc.TierOnly && st.PollAfterMs != nil {
			// What-if: the server before poll-at-turn answered the plain tier.
			r.mu.Lock()
			f := r.rng.Float64()
			r.mu.Unlock()
			wait = time.Duration(r.api.Config.PollTiers.Ms(st.EstimatedWaitSeconds, f)) * time.Millisecond
		}
		if !sleep(ctx, wait) {
			u.gaveUp = true
			return
		}
		u.polls++
		r.pollSent()
		resp := r.call(ctx, http.MethodGet, "/queue/position", u.id, nil, "")
		if resp.StatusCode != http.StatusOK {
			st = standing{Status: "WAITING"}
			continue
		}
		st = standing{}
		_ = json.Unmarshal([]byte(resp.Body), &st)
	}
	u.readyAt = r.since()
	u.waited = u.readyAt - waitFrom
	if u.abandon {
		return
	}
	if !sleep(ctx, r.sc.Think) {
		u.gaveUp = true
		return
	}
	hdr := map[string]string{"x-entry-token": token, "idempotency-key": u.id + "-order"}
	for {
		resp := r.call(ctx, http.MethodPost, "/orders", u.id, hdr, `{"sku":"tv-55","qty":1}`)
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

// result turns the records into figures.
func (r *runner) result(pool *Pool, end time.Duration) *Result {
	res := &Result{Strategy: r.st, Scenario: r.sc, Users: len(r.users), Seconds: round2(end.Seconds()), Status: r.status}
	// Downstream.
	evs := pool.Events()
	var lat []float64
	var starts, ends, qs, qe []time.Duration
	firstServed := map[string]int64{}
	for _, e := range evs {
		res.DownstreamRequests++
		if !e.Served {
			res.DownstreamCancelled++
			continue
		}
		lat = append(lat, ms(e.End-e.Arrive))
		starts, ends = append(starts, e.Start), append(ends, e.End)
		qs, qe = append(qs, e.Arrive), append(qe, e.Start)
		if _, ok := firstServed[e.User]; !ok || e.ConnSeq < firstServed[e.User] {
			firstServed[e.User] = e.ConnSeq
		}
	}
	p := Percentiles(lat, 50, 95, 99, 100)
	res.OrderP50Ms, res.OrderP95Ms, res.OrderP99Ms, res.OrderMaxMs = round1(p[0]), round1(p[1]), round1(p[2]), round1(p[3])
	res.DownstreamMaxInFlight, res.DownstreamMaxQueued = pool.HighWater()
	res.InFlight = Timeline(starts, ends, TimelineStep, end)
	res.Queued = Timeline(qs, qe, TimelineStep, end)

	// Users.
	var e2e []float64
	var polls, pollers int
	var waited time.Duration
	arrivals := make([]Arrival, 0, len(r.users))
	poolArr := map[string]int64{}
	for _, e := range evs {
		if _, ok := poolArr[e.User]; !ok {
			poolArr[e.User] = e.ArrSeq
		}
	}
	for _, u := range r.users {
		switch {
		case u.ok:
			res.Ordered++
			e2e = append(e2e, ms(u.orderedAt-u.arrive))
		case u.gaveUp:
			res.GaveUp++
		case u.abandon:
			res.Abandoned++
		}
		if u.readyAt > 0 && u.push == nil {
			polls += u.polls
			pollers++
			waited += u.waited
		}
		switch r.st.Kind {
		case "room":
			arrivals = append(arrivals, Arrival{From: ms(u.enterFrom), To: ms(u.enterTo), Admission: u.admission})
		case "limiter":
			a := float64(r.lim.arrival(u.id))
			arrivals = append(arrivals, Arrival{From: a, To: a, Admission: u.admission})
		case "direct":
			a := float64(poolArr[u.id])
			arrivals = append(arrivals, Arrival{From: a, To: a, Admission: firstServed[u.id]})
		}
	}
	p = Percentiles(e2e, 50, 95, 99, 100)
	res.E2EP50Ms, res.E2EP95Ms, res.E2EP99Ms, res.E2EMaxMs = round1(p[0]), round1(p[1]), round1(p[2]), round1(p[3])
	res.FIFOInversions, res.UsersOvertaken = Inversions(arrivals)
	res.Polls = polls
	res.WaitingUserMinutes = round2(waited.Minutes())
	if waited > 0 {
		res.PollsPerUserMinute = round2(float64(polls) / waited.Minutes())
	}
	if pollers > 0 {
		res.PollsPerUser = round2(float64(polls) / float64(pollers))
	}
	if r.st.Kind == "room" && r.sc.Notify == "poll" {
		r.pollLoad(res, end)
	}

	// Admission rate while users were waiting.
	switch r.st.Kind {
	case "room":
		res.ConfiguredPerSec = round2(r.sc.Rate())
		res.AdmittedPerSec = round2(roomRate(r.batches))
		for _, b := range r.batches {
			res.Batches = append(res.Batches, [3]float64{round1(ms(b.at)), float64(b.admitted), float64(b.waiting)})
		}
	case "limiter":
		res.ConfiguredPerSec = round2(r.sc.Rate())
		res.AdmittedPerSec = round2(limiterRate(r.accepts, r.users, r.sc.Rate()))
	}
	return res
}

// roomRate is the admission rate over the batches after which users were
// still waiting: the first batch's users (the initial budget) are excluded,
// the span runs from the first admitting batch to the last backlogged one.
func roomRate(bs []batchRec) float64 {
	first, last := -1, -1
	for i, b := range bs {
		if b.admitted > 0 && first < 0 {
			first = i
		}
		if first >= 0 && b.waiting > 0 {
			last = i
		}
	}
	if first < 0 || last <= first {
		return 0
	}
	n := 0
	for _, b := range bs[first+1 : last+1] {
		n += b.admitted
	}
	return float64(n) / (bs[last].at - bs[first].at).Seconds()
}

// limiterRate is the pass rate while users were still being rejected: from
// the first pass to the pass after which fewer than one second's worth of
// users were left to pass (past that, retries are too sparse to use the rate).
func limiterRate(accepts []time.Duration, users []*user, rate float64) float64 {
	if len(accepts) < 2 {
		return 0
	}
	sort.Slice(accepts, func(i, j int) bool { return accepts[i] < accepts[j] })
	// Users who will want to pass: all who order.
	want := 0
	for _, u := range users {
		if !u.abandon {
			want++
		}
	}
	lastIdx := len(accepts) - 1
	for i := range accepts {
		if float64(want-(i+1)) < rate {
			lastIdx = i
			break
		}
	}
	if lastIdx < 1 {
		return 0
	}
	return float64(lastIdx) / (accepts[lastIdx] - accepts[0]).Seconds()
}

// pollLoad fills the polling load over time: position requests per second
// against fixed 2 s polling of the same waiting users.
func (r *runner) pollLoad(res *Result, end time.Duration) {
	var from, to []time.Duration
	for _, u := range r.users {
		if u.enterTo == 0 {
			continue // never entered
		}
		e := end
		if u.readyAt > 0 {
			e = u.readyAt
		}
		from, to = append(from, u.enterTo), append(to, e)
		res.MaxWaitSeconds = max(res.MaxWaitSeconds, round1((e - u.enterTo).Seconds()))
	}
	occ := Occupancy(from, to, PollStep, end)
	res.PollsPerStep = append([]int(nil), r.pollAt...)
	for i, w := range occ {
		occ[i] = round1(w)
		if w > res.PeakWaiting {
			res.PeakWaiting = round1(w)
		}
	}
	res.WaitingPerStep = occ
	for i, n := range res.PollsPerStep {
		if n > res.PeakPollsPerSec {
			res.PeakPollsPerSec, res.PeakPollsAtSec = n, i
		}
	}
	if res.PeakPollsAtSec < len(occ) {
		res.Fixed2sAtPeakPerSec = round1(occ[res.PeakPollsAtSec] / 2 * PollStep.Seconds())
	}
	res.Fixed2sPeakPerSec = round1(res.PeakWaiting / 2 * PollStep.Seconds())
}
