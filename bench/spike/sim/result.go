package sim

import (
	"sort"
	"time"
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
	DownstreamCancelled                            int `json:"downstreamCancelled"`         // callers that gave up while queued
	DownstreamRefused                              int `json:"downstreamRefused,omitempty"` // answered 503 (Conditions.Down)
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

	// Room strategies: admission (Admitter.OnBatch) → the user's first
	// answer showing READY, over users admitted by a batch.
	ReadyLearnP50Ms float64 `json:"readyLearnP50Ms,omitempty"`
	ReadyLearnP95Ms float64 `json:"readyLearnP95Ms,omitempty"`
	ReadyLearnP99Ms float64 `json:"readyLearnP99Ms,omitempty"`
	ReadyLearnMaxMs float64 `json:"readyLearnMaxMs,omitempty"`

	// Requests per visitor: enter + position + order requests, mean over
	// the users who ordered; ByWait breaks it down by their wait.
	RequestsPerVisitor float64   `json:"requestsPerVisitor,omitempty"`
	ByWait             []WaitBin `json:"byWait,omitempty"`

	// Timelines for the plots; the commands keep them only where a plot
	// reads them (ForPlots).
	InFlight []int `json:"inFlight,omitempty"` // max in flight per TimelineStep
	Queued   []int `json:"queued,omitempty"`
}

// WaitBin is the users who ordered after a wait (enter → READY seen) in
// [FromSeconds, FromSeconds + WaitBinSeconds).
type WaitBin struct {
	FromSeconds int     `json:"fromS"`
	Users       int     `json:"users"`
	Requests    float64 `json:"requests"` // mean per user: enter + polls + order
	Polls       float64 `json:"polls"`    // mean per user
}

// WaitBinSeconds is the width of Result.ByWait's bins.
const WaitBinSeconds = 30

// DropTimelines clears what only the plots read: the in-flight timeline
// (keep it for the runs drawn in inflight*.svg) and the polling timeline
// (for the long line's plot).
func (res *Result) DropTimelines(inflight, polling bool) {
	if !inflight {
		res.InFlight, res.Queued = nil, nil
	}
	if !polling {
		res.PollsPerStep, res.WaitingPerStep = nil, nil
	}
}

// result turns the records into figures.
func (r *runner) result(pool *Pool, end time.Duration) *Result {
	res := &Result{Strategy: r.st, Scenario: r.sc, Users: len(r.users), Seconds: round2(end.Seconds()), Status: r.status}
	r.downstream(res, pool, end)
	r.userFigures(res, pool.Events())
	if r.st.Kind == "room" {
		r.roomFigures(res)
		if r.sc.Notify == "poll" {
			r.pollLoad(res, end)
		}
	}
	// Admission rate while users were waiting.
	switch r.st.Kind {
	case "room":
		res.ConfiguredPerSec = round2(r.sc.Rate())
		res.AdmittedPerSec = round2(roomRate(r.batches))
	case "limiter":
		res.ConfiguredPerSec = round2(r.sc.Rate())
		res.AdmittedPerSec = round2(limiterRate(r.accepts, r.users, r.sc.Rate()))
	}
	return res
}

// downstream fills the figures of the order API's pool.
func (r *runner) downstream(res *Result, pool *Pool, end time.Duration) {
	var lat []float64
	var starts, ends, qs, qe []time.Duration
	for _, e := range pool.Events() {
		res.DownstreamRequests++
		if e.Refused {
			res.DownstreamRefused++
			continue
		}
		if !e.Served {
			res.DownstreamCancelled++
			continue
		}
		lat = append(lat, ms(e.End-e.Arrive))
		starts, ends = append(starts, e.Start), append(ends, e.End)
		qs, qe = append(qs, e.Arrive), append(qe, e.Start)
	}
	p := Percentiles(lat, 50, 95, 99, 100)
	res.OrderP50Ms, res.OrderP95Ms, res.OrderP99Ms, res.OrderMaxMs = round1(p[0]), round1(p[1]), round1(p[2]), round1(p[3])
	res.DownstreamMaxInFlight, res.DownstreamMaxQueued = pool.HighWater()
	res.InFlight = Timeline(starts, ends, TimelineStep, end)
	res.Queued = Timeline(qs, qe, TimelineStep, end)
}

// userFigures fills what the users saw: outcomes, arrival → order, FIFO
// order and polls.
func (r *runner) userFigures(res *Result, evs []PoolEvent) {
	poolArr, firstServed := map[string]int64{}, map[string]int64{}
	for _, e := range evs {
		if _, ok := poolArr[e.User]; !ok {
			poolArr[e.User] = e.ArrSeq
		}
		if _, ok := firstServed[e.User]; e.Served && (!ok || e.ConnSeq < firstServed[e.User]) {
			firstServed[e.User] = e.ConnSeq
		}
	}
	var e2e []float64
	var polls, pollers int
	var waited time.Duration
	arrivals := make([]Arrival, 0, len(r.users))
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
	p := Percentiles(e2e, 50, 95, 99, 100)
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
}

// roomFigures fills how late users learned of their admission and how many
// requests a visit took, by wait.
func (r *runner) roomFigures(res *Result) {
	var learn []float64
	var bins []WaitBin
	var reqs int
	for _, u := range r.users {
		if u.admittedAt > 0 && u.readyAt > 0 {
			learn = append(learn, ms(max(0, u.readyAt-u.admittedAt)))
		}
		if !u.ok {
			continue
		}
		reqs += u.requests
		i := int(u.waited.Seconds()) / WaitBinSeconds
		for len(bins) <= i {
			bins = append(bins, WaitBin{FromSeconds: len(bins) * WaitBinSeconds})
		}
		bins[i].Users++
		bins[i].Requests += float64(u.requests)
		bins[i].Polls += float64(u.polls)
	}
	p := Percentiles(learn, 50, 95, 99, 100)
	res.ReadyLearnP50Ms, res.ReadyLearnP95Ms, res.ReadyLearnP99Ms, res.ReadyLearnMaxMs = round1(p[0]), round1(p[1]), round1(p[2]), round1(p[3])
	if res.Ordered > 0 {
		res.RequestsPerVisitor = round2(float64(reqs) / float64(res.Ordered))
	}
	for _, b := range bins {
		if b.Users > 0 {
			b.Requests, b.Polls = round2(b.Requests/float64(b.Users)), round2(b.Polls/float64(b.Users))
			res.ByWait = append(res.ByWait, b)
		}
	}
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
