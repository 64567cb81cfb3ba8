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
	Position int64 // where the visitor entered
	// LineFetches are the page's GET /queue/line requests (WalkPage; 0 for
	// a client that polls its position): CloudFront answers them from its
	// copy of the room's line, so they are CloudFront requests, not the
	// functions'.
	LineFetches int
	// LineOrigin is this visitor's share of the line requests CloudFront
	// passes to the origin (LineOriginShare): API Gateway requests and
	// position invocations that no one visitor sends.
	LineOrigin   float64
	WaitingPolls int // GET /queue/position answered WAITING
	// NearPolls are the WaitingPolls within the next batch of the turn
	// (EstimatedWaitSeconds 0): the store answers them, since a view up to
	// waitroom.ViewMaxAge old could tell the turn late (waitroom.View's
	// Standing); the view answers the others, which carry a place.
	NearPolls    int
	ReadyPolls   int   // GET /queue/position answered READY (the last one)
	ReadyAfterMs int64 // when the READY answer came, from entering
}

// Requests is what the visitor itself sends the functions: enter + polls +
// order.
func (w Walk) Requests() int { return 1 + w.WaitingPolls + w.ReadyPolls + 1 }

// Invocations is what API Gateway and Lambda bill a visitor for: its own
// requests and its share of the line's origin requests.
func (w Walk) Invocations() float64 { return float64(w.Requests()) + w.LineOrigin }

// PositionCalls are the position function's invocations a visitor costs:
// its polls and its share of the line's origin requests (the line is
// served by the position function too).
func (w Walk) PositionCalls() float64 { return float64(w.WaitingPolls+w.ReadyPolls) + w.LineOrigin }

// ViewerRequests are the visitor's API requests through CloudFront: its own
// requests to the functions and its line fetches (the page's files aside).
func (w Walk) ViewerRequests() int { return w.Requests() + w.LineFetches }

// startWalk checks the wait and the rate and places the visitor;
// ahead(t) is its position t ms after entering, ≤ 0 once admitted
// (admission takes one batch, cfg.BatchSize, every ADMIT_INTERVAL_MS from
// the front).
func startWalk(cfg waitroom.Config, waitSeconds float64) (w Walk, ahead func(t int64) int64, err error) {
	if waitSeconds < 0 || math.IsNaN(waitSeconds) {
		return Walk{}, nil, fmt.Errorf("cost: wait %v s: want 0 or more", waitSeconds)
	}
	interval := cfg.AdmitInterval.Milliseconds()
	if interval <= 0 || cfg.AdmitRatePerSec <= 0 {
		return Walk{}, nil, fmt.Errorf("cost: admission interval %v and rate %v must be positive", cfg.AdmitInterval, cfg.AdmitRatePerSec)
	}
	w = Walk{Position: max(1, int64(math.Round(waitSeconds*cfg.AdmitRatePerSec)))}
	ahead = func(t int64) int64 {
		admitted := float64(t/interval) * cfg.BatchSize()
		return int64(math.Ceil(float64(w.Position) - admitted))
	}
	return w, ahead, nil
}

// A wait of a day at the fastest tier is under a million polls.
const maxPolls = 1_000_000

// pollFrom polls GET /queue/position from t ms on, each poll when the last
// answer's pollAfterMs (cfg.PollAfterMs, u = PollJitterU) says, until an
// answer is READY.
func (w *Walk) pollFrom(cfg waitroom.Config, t int64, ahead func(int64) int64) error {
	for polls := 0; polls < maxPolls; polls++ {
		pos := ahead(t)
		if pos <= 0 {
			w.ReadyPolls, w.ReadyAfterMs = 1, t
			return nil
		}
		w.WaitingPolls++
		if cfg.EstimatedWaitSeconds(pos) == 0 {
			w.NearPolls++
		}
		next, _ := pace(cfg, pos)
		t += next
	}
	return fmt.Errorf("cost: a visitor at position %d was not admitted after %d polls", w.Position, maxPolls)
}

// WalkVisitor follows a client that polls its position: it enters at
// position waitSeconds × ADMIT_RATE_PER_SEC and polls when each answer's
// pollAfterMs says (the enter answer's first), until an answer is READY.
// An API client does this: the visitors of the configurations without the
// page.
func WalkVisitor(cfg waitroom.Config, waitSeconds float64) (Walk, error) {
	w, ahead, err := startWalk(cfg, waitSeconds)
	if err != nil {
		return Walk{}, err
	}
	first, _ := pace(cfg, w.Position)
	return w, w.pollFrom(cfg, first, ahead)
}

// LineAgeMs is how old the front a line fetch shows is: the mean age of
// CloudFront's copy of the room's line (max-age 1 s), half a second.
const LineAgeMs = 500

// WalkPage follows a visitor of the waiting page behind CloudFront (issue
// 36's contract for web/static/waitroom/app.js): it enters at position
// waitSeconds × ADMIT_RATE_PER_SEC and paces itself exactly as a poller of
// its position would, by cfg.PollAfterMs of the position that enter's
// answer, then each line fetch, shows (the line carries POLL_TIERS and the
// batch interval), but fetches the room's line (LineFetches, served by
// CloudFront), whose front is LineAgeMs old. When that pace is its own turn
// rather than its tier, or a fetch shows the front past its number, it asks
// GET /queue/position and follows pollAfterMs until READY (pollFrom). A
// paused or stalled room (the far tier, like a poller) and a pre-queue's
// draw (exact:false: the page asks position) are not walked: the model's
// visitor enters an open room.
func WalkPage(cfg waitroom.Config, waitSeconds float64) (Walk, error) {
	w, ahead, err := startWalk(cfg, waitSeconds)
	if err != nil {
		return Walk{}, err
	}
	w.LineOrigin = LineOriginShare(cfg)
	t, atTurn := pace(cfg, w.Position)
	for !atTurn {
		if w.LineFetches++; w.LineFetches > maxPolls {
			return Walk{}, fmt.Errorf("cost: a page visitor at position %d did not reach its turn after %d line fetches", w.Position, maxPolls)
		}
		pos := ahead(max(0, t-LineAgeMs))
		if pos <= 0 { // this fetch shows the turn came: position now
			break
		}
		var next int64
		next, atTurn = pace(cfg, pos)
		t += next
	}
	return w, w.pollFrom(cfg, t, ahead)
}

// pace is when a visitor at position asks next, cfg.PollAfterMs as
// pollFrom uses it, and whether that is its turn's bound rather than its
// tier's: the page then asks its position instead of the line.
func pace(cfg waitroom.Config, position int64) (ms int64, atTurn bool) {
	ms = max(cfg.PollAfterMs(position, PollJitterU), 1)
	return ms, ms < cfg.Tiers().Ms(cfg.EstimatedWaitSeconds(position), PollJitterU)
}

// LineOriginPerRoomPerSecond is how many line requests a second CloudFront
// passes to the origin for one room while it has a line: each cache that
// serves the room's viewers asks once per max-age (1 s) at most. CloudFront's
// edge locations ask through its regional edge caches (about a dozen
// worldwide), so the viewers of one sale reach the origin through a few of
// them; 20 is an allowance above that, not a measurement.
const LineOriginPerRoomPerSecond = 20

// LineOriginShare is a page visitor's share of the room's line requests at
// the origin: the line lasts as long as the visitors take to be admitted
// (visitors / ADMIT_RATE_PER_SEC seconds), so each visitor carries
// LineOriginPerRoomPerSecond / ADMIT_RATE_PER_SEC of them.
func LineOriginShare(cfg waitroom.Config) float64 {
	return LineOriginPerRoomPerSecond / cfg.AdmitRatePerSec
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
