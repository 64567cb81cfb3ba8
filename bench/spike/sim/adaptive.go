package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
)

// The admission strategies of the adaptive scenarios (issue 21).
const (
	AdaptiveFixed = "fixed"    // the room at a fixed ratePerSec: the seeds' formula
	AdaptiveOn    = "adaptive" // the room with the adaptive setting, starting at the same rate
)

// AdaptiveStrategies are both, in report order.
var AdaptiveStrategies = []string{AdaptiveFixed, AdaptiveOn}

// AdaptiveSettings is the room setting `adaptive` (docs/API.md), as the
// admin API takes it.
type AdaptiveSettings struct {
	TargetP95Ms   int     `json:"targetP95Ms"`
	MinRatePerSec float64 `json:"minRatePerSec"`
	MaxRatePerSec float64 `json:"maxRatePerSec"`
}

// AdaptiveRoom is what the adaptive strategy sets (issue 21's example).
var AdaptiveRoom = AdaptiveSettings{TargetP95Ms: 250, MinRatePerSec: 10, MaxRatePerSec: 200}

// AdaptiveDuration is a scenario's run at its own scale: the moments of
// its conditions are given for it, and scale with a shorter or longer run.
const AdaptiveDuration = 120 * time.Second

// AdaptiveTokenTTL is the entry tokens' life in these runs: short enough
// that a token admitted into a slow checkout is seen to expire within a run.
const AdaptiveTokenTTL = 30 * time.Second

// AdaptiveScenario is one change of the order API, played with the same
// arrivals under each strategy: a spike that makes a line at once, then a
// steady stream above the API's best capacity for the whole run, so that
// the line never empties and the admission rate alone decides the load.
type AdaptiveScenario struct {
	Key          string        `json:"key"`
	Name         string        `json:"name"`
	Duration     time.Duration `json:"duration"`
	SpikeUsers   int           `json:"spikeUsers"` // arriving within SpikeWithin, from 0
	SpikeWithin  time.Duration `json:"spikeWithin"`
	StreamPerSec float64       `json:"streamPerSec"` // arriving evenly over the whole run
	Conditions   Conditions    `json:"conditions"`
	Base         Scenario      `json:"base"`             // pool, service time, margin (the fixed rate), clients
	Attack       *Attack       `json:"attack,omitempty"` // token holders steering the law (AttackScenarios)
}

// AdaptiveScenarios are issue 21's three, at AdaptiveDuration.
func AdaptiveScenarios() []AdaptiveScenario {
	s := time.Second
	mk := func(key, name string, c Conditions) AdaptiveScenario {
		base := DefaultScenario()
		base.TokenTTL, base.Curve = AdaptiveTokenTTL, "flat"
		base.ServiceSpec = base.Service.String()
		return AdaptiveScenario{Key: key, Name: name, Duration: AdaptiveDuration, SpikeUsers: 1500, SpikeWithin: 3 * s,
			StreamPerSec: 110, Conditions: c, Base: base}
	}
	return []AdaptiveScenario{
		mk("a", "service time doubles at 30 s, recovers at 90 s", Conditions{Slow: []Slowdown{{Span{30 * s, 90 * s}, 2}}}),
		mk("b", "connections halve (20 → 10) at 30 s", Conditions{Conns: []ConnChange{{30 * s, 10}}}),
		mk("c", "answers 503 for 10 s (30 s to 40 s)", Conditions{Down: []Span{{30 * s, 40 * s}}}),
	}
}

// WithDuration is the scenario in a run of d: its conditions' moments
// scaled by d / its duration.
func (as AdaptiveScenario) WithDuration(d time.Duration) AdaptiveScenario {
	as.Conditions = as.Conditions.Scaled(float64(d) / float64(as.Duration))
	as.Duration = d
	return as
}

// Users is how many arrive in the run.
func (as AdaptiveScenario) Users() int {
	return as.SpikeUsers + int(as.StreamPerSec*as.Duration.Seconds())
}

// Arrivals are the spike's and the stream's arrival times, merged.
func (as AdaptiveScenario) Arrivals() ([]time.Duration, error) {
	spike, err := ArrivalTimes("flat", as.SpikeUsers, as.SpikeWithin, as.Base.Seed)
	if err != nil {
		return nil, err
	}
	stream, err := ArrivalTimes("flat", as.Users()-as.SpikeUsers, as.Duration, as.Base.Seed+1)
	if err != nil {
		return nil, err
	}
	all := append(spike, stream...)
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	return all, nil
}

// scenario is the runner's scenario of the run: every user, the line as
// long as all of them (nobody is turned away).
func (as AdaptiveScenario) scenario() Scenario {
	sc := as.Base
	sc.Users, sc.Spike = as.Users(), as.Duration
	return sc
}

// AdaptiveResults is what `spike adaptive` writes
// (docs/bench/adaptive-results.json).
type AdaptiveResults struct {
	Machine  Machine          `json:"machine"`
	Started  string           `json:"started"`
	Finished string           `json:"finished"`
	Settings AdaptiveSettings `json:"settings"` // what the adaptive runs set
	Runs     []*AdaptiveRun   `json:"runs"`
}

// restore rebuilds the service time the results keep only as its spec.
func (r *AdaptiveResults) restore() {
	for _, x := range r.Runs {
		if st, err := ParseServiceTime(x.Setup.Base.ServiceSpec); err == nil {
			x.Setup.Base.Service = st
		}
	}
}

// RunAdaptive plays one scenario under one strategy, for as.Duration, on
// a fresh Redis database. Users still waiting at the end are cut off.
func RunAdaptive(ctx context.Context, env *Env, as AdaptiveScenario, strategy string) (*AdaptiveRun, error) {
	t0 := time.Now()
	if err := env.fresh(ctx); err != nil {
		return nil, err
	}
	sc := as.scenario()
	pool := NewPool(sc.Connections, sc.Service, sc.Seed)
	pool.SetConditions(as.Conditions)
	url, stopPool, err := servePool(pool)
	if err != nil {
		return nil, err
	}
	defer stopPool()
	arrivals, err := as.Arrivals()
	if err != nil {
		return nil, err
	}
	r, store, err := newRunner(env, sc, BatchedJitter, url, arrivals)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	if err := r.applySettings(ctx, strategy); err != nil {
		return nil, err
	}
	r.epoch = time.Now()
	pool.Reset(r.epoch)
	runCtx, cancel := context.WithDeadline(ctx, r.epoch.Add(as.Duration))
	defer cancel()
	stopAdmit := r.startAdmitter(runCtx, store)
	samples := r.sampleStatus(runCtx)
	attackers := func() {}
	if as.Attack != nil {
		attackers = r.playAttack(runCtx, as.Attack)
	}
	r.playUsers(runCtx)
	attackers()
	stopAdmit()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err := r.strayed(); err != nil {
		return nil, err
	}
	run := r.adaptiveRun(as, strategy, pool.Events(), samples.wait())
	run.WallSeconds = round1(time.Since(t0).Seconds())
	if strategy == AdaptiveOn && !run.EffectiveShown {
		return nil, fmt.Errorf("adaptive: GET /admin/rooms/%s never showed effectiveRatePerSec: the room's status lacks the adaptive figures", waitroom.DefaultRoom)
	}
	return run, nil
}

// CheckAdaptive stores the adaptive setting on a fresh database, as the
// runs will, so that a store without it fails before any run.
func CheckAdaptive(ctx context.Context, env *Env) error {
	if err := env.fresh(ctx); err != nil {
		return err
	}
	as := AdaptiveScenarios()[0]
	r, store, err := newRunner(env, as.scenario(), BatchedJitter, "http://127.0.0.1:1", nil)
	if err != nil {
		return err
	}
	defer store.Close()
	return r.applySettings(ctx, AdaptiveOn)
}

// roomSettings is the PUT body of a run's room: the fixed rate (the
// adaptive room's starting rate), the token life, a line for everyone, and
// for the adaptive strategy the setting itself.
type roomSettings struct {
	RatePerSec           float64           `json:"ratePerSec"`
	Capacity             int               `json:"capacity"`
	EntryTokenTTLSeconds int64             `json:"entryTokenTtlSeconds"`
	Adaptive             *AdaptiveSettings `json:"adaptive,omitempty"`
}

// applySettings stores the room's settings through the admin API; any
// answer but 200 fails the run with the API's message.
func (r *runner) applySettings(ctx context.Context, strategy string) error {
	set := roomSettings{RatePerSec: r.sc.Rate(), Capacity: max(1, r.sc.Users), EntryTokenTTLSeconds: int64(r.sc.TokenTTL / time.Second)}
	switch strategy {
	case AdaptiveFixed:
	case AdaptiveOn:
		a := AdaptiveRoom
		set.Adaptive = &a
	default:
		return fmt.Errorf("unknown adaptive strategy %q (%s)", strategy, strings.Join(AdaptiveStrategies, ", "))
	}
	body, err := json.Marshal(set)
	if err != nil {
		return err
	}
	resp := r.roomAdmin(ctx, http.MethodPut, string(body))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: PUT %s %s answered %d: %s", strategy, roomAdminPath, body, resp.StatusCode, strings.TrimSpace(resp.Body))
	}
	return nil
}

// roomAdminPath is the admin API's route of the runs' room.
const roomAdminPath = "/admin/rooms/" + waitroom.DefaultRoom

// roomAdmin calls the admin API on the runs' room, as an operator would.
func (r *runner) roomAdmin(ctx context.Context, method, body string) events.APIGatewayV2HTTPResponse {
	return r.call(ctx, method, roomAdminPath, "", map[string]string{"authorization": "Bearer " + string(simAdminToken)}, body)
}

// statusSample is one GET /admin/rooms/{room} during a run.
type statusSample struct {
	At                  time.Duration
	RatePerSec          float64  `json:"ratePerSec"`
	EffectiveRatePerSec *float64 `json:"effectiveRatePerSec"`
	DownstreamP95Ms     *float64 `json:"downstreamP95Ms"`
	DownstreamErrorRate *float64 `json:"downstreamErrorRate"`
	Waiting             int64    `json:"waiting"`
}

// sampler is the status sampling of a run; wait stops with the run and
// returns the samples.
type sampler struct {
	done    chan struct{}
	samples []statusSample
}

func (s *sampler) wait() []statusSample { <-s.done; return s.samples }

// sampleStatus reads the room's status in the middle of every second of
// the run, as an operator's `waitroomctl watch` would.
func (r *runner) sampleStatus(ctx context.Context) *sampler {
	s := &sampler{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for i := 0; ; i++ {
			if !sleep(ctx, time.Until(r.epoch.Add(time.Duration(i)*time.Second+time.Second/2))) {
				return
			}
			resp := r.roomAdmin(ctx, http.MethodGet, "")
			st := statusSample{At: r.since()}
			if resp.StatusCode == http.StatusOK && json.Unmarshal([]byte(resp.Body), &st) == nil {
				s.samples = append(s.samples, st)
			}
		}
	}()
	return s
}

// adaptiveRun gathers a run's records into its figures.
func (r *runner) adaptiveRun(as AdaptiveScenario, strategy string, evs []PoolEvent, samples []statusSample) *AdaptiveRun {
	in := adaptiveInputs{end: as.Duration, conns: as.Base.Connections, mean: as.Base.Service.Mean, cond: as.Conditions,
		fixedRate: as.Base.Rate(), events: evs, samples: samples}
	for _, b := range r.batches {
		for i := 0; i < b.admitted; i++ {
			in.admissions = append(in.admissions, b.at)
		}
	}
	for _, u := range r.users {
		in.users = append(in.users, userRec{arrive: u.arrive, entered: u.enterTo > 0, instant: u.instant, admittedAt: u.admittedAt,
			readyAt: u.readyAt, waited: u.waited, expiresAt: u.expiresAt, ordered: u.ok, abandon: u.abandon, tries: u.orderTries, fails: u.orderFails})
		if u.instant {
			in.admissions = append(in.admissions, u.admittedAt)
		}
	}
	run := buildAdaptiveRun(in)
	run.Scenario, run.Name, run.Strategy, run.Setup = as.Key, as.Name, strategy, as
	run.Status = r.status
	run.CountedCalls, run.CountedFailed, run.AttackOrders, run.AttackOK = r.counts.calls, r.counts.failed, r.attackOrders, r.attackOK
	return run
}

// AdaptiveSummaryLine is the one line per run on stderr.
func AdaptiveSummaryLine(run *AdaptiveRun) string {
	var ph []string
	for _, p := range run.Phases {
		ph = append(ph, fmt.Sprintf("%s p95 %.0f ms used %.0f%% rate %.0f/s", p.Name, p.P95Ms, 100*p.SteadyUsed, p.SteadyRatePerSec))
	}
	met, applies := 0, 0
	for _, t := range run.Targets {
		if t.Applies {
			applies++
			if t.Pass {
				met++
			}
		}
	}
	return fmt.Sprintf("adaptive %s %-8s: admitted %d, ordered %d, expired unused %d (for lack of capacity %d); %s; targets met %d/%d (%.0fs)",
		run.Scenario, run.Strategy, run.Admitted, run.Ordered, run.Expired, run.ExpiredNoCapacity, strings.Join(ph, "; "), met, applies, run.WallSeconds)
}
