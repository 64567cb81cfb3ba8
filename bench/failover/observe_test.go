package failover

import (
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/waitroom/waitroom/bench/spike/sim"
)

// observer counts every answer clients got, by phase, route and kind, and
// when the last answer that was not normal came.
type observer struct {
	mu           sync.Mutex
	phase        string
	failedAt     time.Time
	answers      map[[3]string]int
	lastAbnormal time.Time
	wrong        []string // the first few wrong answers, for the test log
	wrongCount   int
}

func newObserver() *observer {
	return &observer{phase: "before", answers: map[[3]string]int{}}
}

func (o *observer) enter(phase string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.phase = phase
	if phase == "after" {
		o.failedAt = time.Now()
	}
}

// slow is how long a normal answer may take: past it, it counts as slow,
// and the store's recovery is not over while answers are slow.
const slow = 500 * time.Millisecond

// note records one answer, which took took: status 0 with err for no HTTP
// answer at all. Normal is any answer below 500 within slow; 503 with
// Retry-After is the contract's answer while the store cannot be reached;
// anything else is wrong.
func (o *observer) note(route string, status int, h http.Header, err error, took time.Duration) {
	kind, abnormal, wrong := fmt.Sprint(status), false, false
	switch {
	case err != nil:
		kind, abnormal, wrong = "error", true, true
	case status == http.StatusServiceUnavailable && h.Get("Retry-After") != "":
		kind, abnormal = "503 Retry-After", true
	case status >= 500:
		abnormal, wrong = true, true
	case took > slow:
		kind, abnormal = kind+" slow", true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.answers[[3]string{o.phase, route, kind}]++
	if abnormal && !o.failedAt.IsZero() {
		o.lastAbnormal = time.Now()
	}
	if wrong {
		o.wrongCount++
		if len(o.wrong) < 5 {
			o.wrong = append(o.wrong, fmt.Sprintf("%s %s: %s %v", o.phase, route, kind, err))
		}
	}
}

// recovery is the time from the failover to the last answer that was not
// normal, or slow (0 when every answer after it was normal).
func (o *observer) recovery() time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.failedAt.IsZero() || o.lastAbnormal.Before(o.failedAt) {
		return 0
	}
	return o.lastAbnormal.Sub(o.failedAt)
}

// counts lists the answers, by phase (in time order), route and kind.
func (o *observer) counts() []sim.FailoverAnswer {
	o.mu.Lock()
	defer o.mu.Unlock()
	rank := map[string]int{"before": 0, "lag": 1, "after": 2}
	var out []sim.FailoverAnswer
	for k, n := range o.answers {
		out = append(out, sim.FailoverAnswer{Phase: k[0], Route: k[1], Answer: k[2], Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Phase != b.Phase {
			return rank[a.Phase] < rank[b.Phase]
		}
		if a.Route != b.Route {
			return a.Route < b.Route
		}
		return a.Answer < b.Answer
	})
	return out
}
