// Package sim is a Black Friday spike simulator for Waitroom: simulated
// users against the real handlers (httpapi.API.Route, in process), the
// real Redis store on a real redis-server, and a simulated order API with a
// fixed connection pool. It compares admission strategies side by side.
package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/waitroom/waitroom"
)

// Strategy is one way of protecting the order API.
type Strategy struct {
	Name     string        `json:"name"`
	Kind     string        `json:"kind"`     // "direct", "limiter" or "room"
	Interval time.Duration `json:"interval"` // room: ADMIT_INTERVAL_MS
	Jitter   bool          `json:"jitter"`   // room: the Admitter's default jitter (else Rand = 0)
}

// The strategies of the issue, in report order.
var (
	NoWaitingRoom = Strategy{Name: "no-waiting-room", Kind: "direct"}
	RateLimiter   = Strategy{Name: "rate-limiter-429", Kind: "limiter"}
	WholeSecond   = Strategy{Name: "whole-second", Kind: "room", Interval: time.Second}
	Batched       = Strategy{Name: "batched", Kind: "room", Interval: 100 * time.Millisecond}
	BatchedJitter = Strategy{Name: "batched-jitter", Kind: "room", Interval: 100 * time.Millisecond, Jitter: true}
	Strategies    = []Strategy{NoWaitingRoom, RateLimiter, WholeSecond, Batched, BatchedJitter}
)

// AdmitInterval is the strategy's ADMIT_INTERVAL_MS (100 ms when unset).
func (s Strategy) AdmitInterval() time.Duration {
	if s.Interval == 0 {
		return 100 * time.Millisecond
	}
	return s.Interval
}

// StrategyByName finds one of Strategies.
func StrategyByName(name string) (Strategy, error) {
	for _, s := range Strategies {
		if s.Name == name {
			return s, nil
		}
	}
	return Strategy{}, fmt.Errorf("unknown strategy %q", name)
}

// Scenario is one spike.
type Scenario struct {
	Users        int           `json:"users"`
	Spike        time.Duration `json:"spike"` // all users arrive within it
	Curve        string        `json:"curve"` // flat, midnight, ramp
	Connections  int           `json:"connections"`
	Service      ServiceTime   `json:"-"`
	ServiceSpec  string        `json:"service"`
	Margin       float64       `json:"margin"`
	Abandon      float64       `json:"abandon"`             // share of users who never order once READY
	Think        time.Duration `json:"think"`               // READY → order
	Notify       string        `json:"notify"`              // "poll" (the API) or "push" (told at the admission instant)
	TierOnly     bool          `json:"tierOnly,omitempty"`  // what-if: sleep the plain API.md tier, ignoring a shorter pollAfterMs
	PollTiers    string        `json:"pollTiers,omitempty"` // POLL_TIERS; "" is waitroom.DefaultPollTiers
	OrderTimeout time.Duration `json:"orderTimeout"`
	TokenTTL     time.Duration `json:"tokenTTL"`
	RetryMin     time.Duration `json:"retryMin"` // client back-off after a failed order or a 429
	RetryMax     time.Duration `json:"retryMax"`
	MaxAttempts  int           `json:"maxAttempts"`  // direct: orders tried before giving up
	LimiterBurst float64       `json:"limiterBurst"` // limiter bucket size in seconds of rate
	Seed         uint64        `json:"seed"`
}

// DefaultScenario is the brief's bottleneck under a spike.
func DefaultScenario() Scenario {
	return Scenario{
		Users: 3000, Spike: 10 * time.Second, Curve: "midnight",
		Connections: 20, Service: ServiceTime{Kind: "uniform", Mean: 200 * time.Millisecond, Spread: 0.2},
		Margin: 0.7, Abandon: 0.05, Think: 0, Notify: "poll",
		OrderTimeout: 10 * time.Second, TokenTTL: 300 * time.Second,
		RetryMin: 500 * time.Millisecond, RetryMax: 1500 * time.Millisecond, MaxAttempts: 10,
		LimiterBurst: 0.1, Seed: 1,
	}
}

// Tiers is the scenario's POLL_TIERS.
func (s Scenario) Tiers() string {
	if s.PollTiers == "" {
		return waitroom.DefaultPollTiers
	}
	return s.PollTiers
}

// Rate is the admission rate the seeds' formula gives: connections × (1 s /
// service time) × safety margin.
func (s Scenario) Rate() float64 {
	return float64(s.Connections) * float64(time.Second) / float64(s.Service.Mean) * s.Margin
}

// ArrivalTimes spreads n arrivals over d along a curve: flat (constant
// rate), midnight (most at the start, decaying: density ∝ e^{-3t/d}) or
// ramp (rising to a peak at d/2, then falling). Quantiles are deterministic;
// a little jitter (seeded) keeps arrivals from landing in step.
func ArrivalTimes(curve string, n int, d time.Duration, seed uint64) ([]time.Duration, error) {
	var inv func(q float64) float64
	switch curve {
	case "flat":
		inv = func(q float64) float64 { return q }
	case "midnight":
		const k = 3.0
		inv = func(q float64) float64 { return -math.Log(1-q*(1-math.Exp(-k))) / k }
	case "ramp":
		inv = func(q float64) float64 {
			if q < 0.5 {
				return math.Sqrt(q / 2)
			}
			return 1 - math.Sqrt((1-q)/2)
		}
	default:
		return nil, fmt.Errorf("unknown curve %q (flat, midnight, ramp)", curve)
	}
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]time.Duration, n)
	for i := range out {
		q := (float64(i) + r.Float64()) / float64(n)
		out[i] = time.Duration(inv(q) * float64(d))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// Polling names how a scenario's users learn of their admission: "pollAfterMs"
// (as the server says), "tier only" (the what-if) or "push".
func Polling(sc Scenario) string {
	switch {
	case sc.Notify == "push":
		return "push"
	case sc.TierOnly:
		return "tier only"
	}
	return "pollAfterMs"
}
