package cost

import (
	"fmt"
	"math"
	"strings"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/envconfig"
)

// PollJitterU is the u given to PollAfterMs in the walk: the middle of its
// [0, 1) range, so every tier's poll is its base interval exactly and the
// last poll lands 75% of an admission interval after the visitor's turn.
const PollJitterU = 0.5

// Walk is one visitor's requests, from entering to ordering.
type Walk struct {
	Position     int64 // where the visitor entered
	WaitingPolls int   // GET /queue/position answered WAITING
	ReadyPolls   int   // GET /queue/position answered READY (the last one)
	ReadyAfterMs int64 // when the READY answer came, from entering
}

// Requests is enter + polls + order.
func (w Walk) Requests() int { return 1 + w.WaitingPolls + w.ReadyPolls + 1 }

// WalkVisitor follows a visitor whose wait is waitSeconds at cfg's rate: it
// enters at position waitSeconds × ADMIT_RATE_PER_SEC, admission takes one
// batch (cfg.BatchSize) every ADMIT_INTERVAL_MS from the front, and the
// visitor polls when each answer's pollAfterMs (cfg.PollAfterMs with
// u = PollJitterU) says, until an answer is READY.
func WalkVisitor(cfg waitroom.Config, waitSeconds float64) (Walk, error) {
	if waitSeconds < 0 || math.IsNaN(waitSeconds) {
		return Walk{}, fmt.Errorf("cost: wait %v s: want 0 or more", waitSeconds)
	}
	interval := cfg.AdmitInterval.Milliseconds()
	if interval <= 0 || cfg.AdmitRatePerSec <= 0 {
		return Walk{}, fmt.Errorf("cost: admission interval %v and rate %v must be positive", cfg.AdmitInterval, cfg.AdmitRatePerSec)
	}
	w := Walk{Position: max(1, int64(math.Round(waitSeconds*cfg.AdmitRatePerSec)))}
	ahead := func(t int64) int64 { // the visitor's position at t ms; ≤ 0 once admitted
		admitted := float64(t/interval) * cfg.BatchSize()
		return int64(math.Ceil(float64(w.Position) - admitted))
	}
	// A wait of a day at the fastest tier is under a million polls.
	const maxPolls = 1_000_000
	t, next := int64(0), cfg.PollAfterMs(w.Position, PollJitterU)
	for polls := 0; polls < maxPolls; polls++ {
		t += max(next, 1)
		pos := ahead(t)
		if pos <= 0 {
			w.ReadyPolls, w.ReadyAfterMs = 1, t
			return w, nil
		}
		w.WaitingPolls++
		next = cfg.PollAfterMs(pos, PollJitterU)
	}
	return Walk{}, fmt.Errorf("cost: a visitor at position %d was not admitted after %d polls", w.Position, maxPolls)
}

// ConfigFromEnv is envconfig.Load over a function's literal
// environment; a variable the template leaves out takes its default. The
// store's connection variables (REDIS_*) are left out: REDIS_URL is an
// intrinsic function in the template, and how the functions log in to the
// cache prices nothing. Nor do the ticket key and the proxy secret,
// deploy-time references the template does not hold: a generated ticket
// key and a placeholder secret (the stack never sets TRUST_USER_HEADER
// without PROXY_SECRET) stand in for them.
func ConfigFromEnv(env map[string]string) (waitroom.Config, error) {
	return envconfig.Load(func(k string) (string, bool) {
		if strings.HasPrefix(k, "REDIS_") {
			return "", false
		}
		if k == "PROXY_SECRET" && env["TRUST_USER_HEADER"] == "true" {
			return "a-deploy-time-secret-stands-here", true
		}
		v, ok := env[k]
		return v, ok
	}, envconfig.Defaults{GenerateTicketSecret: true})
}
