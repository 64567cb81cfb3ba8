package sim

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/httpapi"
)

// Attack is token holders who order only to steer the adaptive law (issue
// 32): each enters the line at the start like anyone, and from From on,
// once it holds its token, sends an order every Every in its mode, keeping
// the token (none of them ever succeeds).
type Attack struct {
	Holders int           `json:"holders"`
	Every   time.Duration `json:"every"`
	From    time.Duration `json:"from"`
	// Modes are the holders' in turn: AttackFail (a body the order API
	// answers 500 at once), AttackAbort (a body the API holds for a second,
	// taking none of its connections, then refuses (409), which the holder
	// hangs up on after 20 ms, as a client giving up), AttackRefuse (a body
	// the API refuses at once, 400). None loads the API: what is measured
	// is the law, not the API's capacity (an aborted order the API serves
	// loads it as any order does).
	Modes []string `json:"modes"`
}

// The attackers' modes.
const (
	AttackFail   = "fail"
	AttackAbort  = "abort"
	AttackRefuse = "refuse"
)

// The pool answers these bodies at once, 500 and 400, or 409 after a
// second, serving nothing.
const (
	attackFailSku   = "attack-500"
	attackRefuseSku = "attack-400"
	attackHoldSku   = "attack-hold"
)

// AttackScenarios are `spike attack`'s runs: the order API steady (20
// connections × 200 ms, 100 orders a second), the adaptive room, and no
// attack, then 1, 5 and 20 holders failing their orders two a second, 20
// aborting theirs, and 20 sending refused orders five a second each (100
// a second), from 20 s of a 60 s run. Tokens live the whole run: the
// holders hold theirs throughout (the worst case).
func AttackScenarios(d time.Duration) []AdaptiveScenario {
	mk := func(key, name string, a *Attack) AdaptiveScenario {
		as := AdaptiveScenarios()[0]
		as.Key, as.Name, as.Conditions, as.Attack = key, name, Conditions{}, a
		as.Base.TokenTTL = d + time.Minute
		as.Duration = d
		if a != nil {
			a.From = d / 3
		}
		return as
	}
	half, fifth := 500*time.Millisecond, 200*time.Millisecond
	return []AdaptiveScenario{
		mk("none", "no attack", nil),
		mk("fail1", "1 holder failing its orders, 2/s", &Attack{Holders: 1, Every: half, Modes: []string{AttackFail}}),
		mk("fail5", "5 holders failing their orders, 2/s each", &Attack{Holders: 5, Every: half, Modes: []string{AttackFail}}),
		mk("fail20", "20 holders failing their orders, 2/s each", &Attack{Holders: 20, Every: half, Modes: []string{AttackFail}}),
		mk("abort20", "20 holders aborting their orders, 2/s each", &Attack{Holders: 20, Every: half, Modes: []string{AttackAbort}}),
		mk("refuse100", "20 holders sending refused orders, 100/s in all", &Attack{Holders: 20, Every: fifth, Modes: []string{AttackRefuse}}),
	}
}

// attackPool answers an attacker's body (true), or leaves the request to
// the pool (false).
func attackPool(w http.ResponseWriter, r *http.Request, body []byte) bool {
	status := 0
	switch {
	case strings.Contains(string(body), attackFailSku):
		status = http.StatusInternalServerError
	case strings.Contains(string(body), attackRefuseSku):
		status = http.StatusBadRequest
	case strings.Contains(string(body), attackHoldSku):
		status = http.StatusConflict
		select {
		case <-r.Context().Done():
		case <-time.After(time.Second):
		}
	default:
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"error":"attack"}` + "\n"))
	return true
}

// counted is what the gate's counters handed to the law over a run.
type counted struct {
	calls, failed int64
}

// playAttack runs the attackers until ctx ends; the returned func waits
// for them.
func (r *runner) playAttack(ctx context.Context, a *Attack) (wait func()) {
	var wg sync.WaitGroup
	for i := range a.Holders {
		u := &user{id: fmt.Sprintf("attacker-%02d", i)}
		r.mu.Lock()
		r.attackers[httpapi.HeaderUser(u.id)] = true
		r.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.attacker(ctx, u, a.Modes[i%len(a.Modes)], a)
		}()
	}
	return wg.Wait
}

// attacker holds a token and, from a.From on, orders every a.Every in its
// mode; it enters again if its token is gone.
func (r *runner) attacker(ctx context.Context, u *user, mode string, a *Attack) {
	for ctx.Err() == nil {
		var st standing
		if !r.enter(ctx, u, &st) {
			return
		}
		token, ok := r.waitReady(ctx, u, st)
		if !ok || !sleep(ctx, time.Until(r.epoch.Add(a.From))) {
			return
		}
		for r.attackOrder(ctx, u, token, mode) != http.StatusForbidden {
			if !sleep(ctx, a.Every) {
				return
			}
		}
	}
}

// attackOrder sends one of the attacker's orders and returns its status.
func (r *runner) attackOrder(ctx context.Context, u *user, token, mode string) int {
	r.mu.Lock()
	r.attackOrders++
	r.mu.Unlock()
	hdr := map[string]string{"x-entry-token": token}
	body := `{"sku":"` + attackFailSku + `"}`
	switch mode {
	case AttackRefuse:
		body = `{"sku":"` + attackRefuseSku + `"}`
	case AttackAbort:
		body = `{"sku":"` + attackHoldSku + `"}`
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		time.AfterFunc(20*time.Millisecond, cancel) // the caller hangs up
	}
	status := r.call(ctx, http.MethodPost, "/orders", u.id, hdr, body).StatusCode
	if status >= 200 && status <= 299 { // an aborted order the gate completed anyway: it counts as one
		r.mu.Lock()
		r.attackOK++
		r.mu.Unlock()
	}
	return status
}

// add adds a handed-over control window to the run's counts.
func (c *counted) add(w *waitroom.Window) {
	c.calls += w.Calls.Calls()
	c.failed += w.Calls.Count(waitroom.OutcomeOverload) + w.Calls.Count(waitroom.OutcomeTimeout)
}

// AttackFigures are a run's admissions per second and mean effective rate
// from 10 s after the attack's start (or the same moment without one),
// its fewest admissions in a second then, and the gate's counts.
type AttackFigures struct {
	Scenario      string  `json:"scenario"`
	Name          string  `json:"name"`
	AdmittedPerS  float64 `json:"admittedPerSec"`
	FewestInASec  int     `json:"fewestInASecond"`
	RatePerSec    float64 `json:"effectiveRatePerSec"`
	CountedCalls  int64   `json:"countedCalls"`  // calls the gate's counters handed to the law, the whole run
	CountedFailed int64   `json:"countedFailed"` // of which 5xx, 429, timeouts
	AttackOrders  int     `json:"attackOrders"`  // orders the attackers sent
}

// Attacked are run's figures from from on.
func Attacked(run *AdaptiveRun, from time.Duration) AttackFigures {
	f := AttackFigures{Scenario: run.Scenario, Name: run.Name, FewestInASec: -1, CountedCalls: run.CountedCalls,
		CountedFailed: run.CountedFailed, AttackOrders: run.AttackOrders}
	n := 0
	for _, s := range run.Seconds {
		if time.Duration(s.T)*time.Second < from || s.T == len(run.Seconds)-1 { // the last second is cut short
			continue
		}
		n++
		f.AdmittedPerS += float64(s.Admitted)
		f.RatePerSec += s.EffectiveRatePerSec
		if f.FewestInASec < 0 || s.Admitted < f.FewestInASec {
			f.FewestInASec = s.Admitted
		}
	}
	if n > 0 {
		f.AdmittedPerS, f.RatePerSec = f.AdmittedPerS/float64(n), f.RatePerSec/float64(n)
	}
	return f
}
