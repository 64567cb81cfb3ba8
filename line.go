package waitroom

import (
	"math"
	"time"
)

// Status is where a user stands in a room.
type Status string

const (
	Waiting    Status = "WAITING"
	Ready      Status = "READY"
	NotInQueue Status = "NOT_IN_QUEUE"
)

// Standing is a user's state in one room, as the store reports it.
type Standing struct {
	Status    Status
	Position  int64     // 1-based, only when Waiting
	Token     string    // only when Ready
	ExpiresAt time.Time // only when Ready
	IssuedAt  time.Time // when Ready: the admission
	Joined    bool      // enter took a new place in line (for metrics)
	// AdmittedNow: enter found nobody waiting and admitted the user at
	// once (instant admission; for metrics: an admission that waited 0 s).
	AdmittedNow bool

	// The room as the same script call saw it: what the answer tells the
	// user, read in the one round trip the operation already makes.
	RatePerSec float64   // the room's admission rate
	Paused     bool      // the room admits nobody until resumed
	OpensAt    time.Time // the scheduled opening; zero when open
	Stalled    bool      // no batch for several intervals, or maxActive reached (checked within Config.FarHorizon of the front)
	Adaptive   bool      // the rate is the adaptive law's: it may rise before the user's turn (Config.PollAfterMs)
	Message    string    // the operator's message to the line; empty: none
	// ClaimWindow is the room's entry token life: how long an admitted
	// number can be claimed after its batch (0: the configuration's).
	ClaimWindow time.Duration
	// Page is the room's page settings, read by enter only (the page
	// asks once per load); zero in position's answers.
	Page Page
	// Number is the place's number while Waiting (View: its position is
	// Number - Front + 1), signed into the caller's spot; 0 when the
	// position cannot be told from the front (a pre-queue's draw).
	Number int64
}

// View is one reading of a room for everyone waiting in it: the line's
// front and the room as they read it, in one store call. Every process
// keeps each room's view for ViewMaxAge and answers from it the polls of
// visitors who carry their spot, and GET /queue/line, without the store.
type View struct {
	// Front is the number at the head of the line: every number below it
	// has left the line (admitted or released), and a visitor numbered
	// n >= Front waits at position n - Front + 1. 0: nobody waits.
	Front int64
	// Exact: the positions follow from Front. Not while a pre-queue's
	// draws, which have no number, may be in line ahead of some numbers.
	Exact bool
	// Since is when the line last started from empty: a spot signed
	// before it names an earlier line's number.
	Since time.Time
	// LastBatch is admission's last batch; Full: live entry tokens fill
	// maxActive. Either can stall admission (Standing.Stalled).
	LastBatch time.Time
	Full      bool

	RatePerSec float64
	Paused     bool
	Closed     bool
	Adaptive   bool
	OpensAt    time.Time // zero: no scheduled opening
	Message    string
	Page       Page // what enter's answers carry; a poll's carry none
	// ClaimWindow is the room's entry token life, Standing's.
	ClaimWindow time.Duration
}

// ViewMaxAge is how long a process answers from one reading of a room's
// view: a waiting visitor learns of its turn at most this much later than
// a store call would have told it (its poll at the turn then claims).
const ViewMaxAge = 100 * time.Millisecond

// StallIntervals is how many admission intervals without a batch make
// admission stalled: users then poll at the far tier instead of at their turn.
const StallIntervals = 5

// Standing is what a visitor holding spot is told from v at now, and
// whether v can tell it: not when the spot is another room's, older than
// the line, or at or past the front (its turn came: only the store knows
// whether it was admitted), nor while positions are not exact. Nor within
// the next batch: there a view up to ViewMaxAge old would tell a turn late,
// so the few polls at one's turn ask the store.
func (v View) Standing(spot Spot, room string, now time.Time, c Config) (Standing, bool) {
	if !v.Holds(spot, room) || v.Front == 0 || spot.Number < v.Front || !v.Exact {
		return Standing{}, false
	}
	st := Standing{RatePerSec: v.RatePerSec, Paused: v.Paused, Adaptive: v.Adaptive, Message: v.Message, OpensAt: v.OpensAt,
		ClaimWindow: v.ClaimWindow}
	position := spot.Number - v.Front + 1
	switch {
	case v.Closed: // the line is being released: nobody in it holds a token
		st.Status = Closed
	case v.OpensAt.After(now):
		st.Status = PreQueue
	case float64(position) <= v.RatePerSec*c.AdmitInterval.Seconds() && !v.Paused:
		return Standing{}, false // its turn comes with the next batch
	default:
		st.Status, st.Position, st.Number = Waiting, position, spot.Number
		// The store's rule: checked only for a turn nearer than FarHorizon.
		near := v.RatePerSec > 0 && float64(st.Position)/v.RatePerSec < c.FarHorizon().Seconds()
		st.Stalled = near && v.Stalled(now, c)
	}
	return st, true
}

// Holds reports whether spot names a place in room's line as v sees it:
// signed since the line last started from empty (with a second of slack
// between the processes' clocks), else it names an earlier line's number.
func (v View) Holds(spot Spot, room string) bool {
	return spot.In(room) && !spot.At.Before(v.Since.Add(-time.Second))
}

// Stalled: no batch for StallIntervals intervals since the later of the
// last batch and the line's start, or live tokens fill maxActive.
func (v View) Stalled(now time.Time, c Config) bool {
	last := v.LastBatch
	if v.Since.After(last) {
		last = v.Since
	}
	return v.Full || !last.IsZero() && now.Sub(last) > StallIntervals*c.AdmitInterval
}

// Front is one reading of a room's line for live streams: the sequence
// number at its front (Empty: nobody waits), and the room's closed flag
// and message, read together.
type Front struct {
	Seq     int64
	Empty   bool
	Closed  bool
	Message string
}

// Place is a waiting user's place for live streams: the sequence number
// of the place in line (0 when not waiting), and whether the position can
// be computed from the front (false in a room with stored settings, whose
// answers depend on more than the line, and in a pre-queue).
type Place struct {
	Seq       int64
	FromFront bool
}

// Accepted and Processing are the statuses of an entry the broker holds:
// enter answers ACCEPTED with a receipt, position PROCESSING until the
// consumer has applied it.
const (
	Accepted   Status = "ACCEPTED"
	Processing Status = "PROCESSING"
)

// PreQueue is the status of a user who entered before the room's opening:
// at opensAt everyone in the pre-queue gets a uniformly random place ahead of
// everyone who enters after it.
const PreQueue Status = "PREQUEUE"

// Closed is the status of a visitor of a closed room: the line is gone.
const Closed Status = "CLOSED"

// EstimatedWaitSeconds is ceil(position / rate), and 0 within the first batch.
func (c Config) EstimatedWaitSeconds(position int64) int64 {
	if float64(position) <= c.AdmitRatePerSec*c.AdmitInterval.Seconds() {
		return 0
	}
	return int64(math.Ceil(float64(position) / c.AdmitRatePerSec))
}

// maxTurnAhead bounds how much faster than its rate an adaptive room
// reckons a turn (turnAhead): twice the rate.
const maxTurnAhead = 1.0

// turnAhead is the share by which PollAfterMs raises an adaptive room's
// rate to reckon a turn wait seconds away (0 in a room at a fixed rate):
// what the law may raise the rate by before then, a probe's most a window
// compounded, (1+maxProbe)^wait - 1, from maxProbe up to maxTurnAhead. A
// user told a turn at the rate as it is would come back late whenever the
// rate rose meanwhile, and those told in the same seconds would reach the
// order API together, late (docs/design.md, "Adaptive admission"). Near
// the front this costs about one poll more a wait (the wait left shrinks
// fivefold at each); farther back, about one more for each doubling of
// the wait beyond 3 s (it halves at each), so that a raised rate, even
// doubled, finds its visitors back in time.
func (c Config) turnAhead(wait float64) float64 {
	if !c.adaptive {
		return 0
	}
	return max(maxProbe, min(maxTurnAhead, math.Pow(1+maxProbe, wait)-1))
}

// PollAfterMs is when a user waiting at position should ask again: the tier
// of the estimated wait spread by ±20% (PollTiers.Ms), but never later than
// just after the user's own turn, position / rate from now plus half to one
// admission interval (in an adaptive room, at the rate the law may raise it
// to: turnAhead). Admission is FIFO at an exact rate, so that last poll
// lands right after the user is admitted: users who entered together in a
// spike reach the order API as evenly as admission paces them, instead of
// together at their next tier poll (BENCHMARKS.md measures the difference).
// u is uniform in [0, 1).
func (c Config) PollAfterMs(position int64, u float64) int64 {
	tier := c.PollTiers.Ms(c.EstimatedWaitSeconds(position), u)
	wait := float64(position) / c.AdmitRatePerSec
	turn := wait/(1+c.turnAhead(wait))*1000 + float64(c.AdmitInterval.Milliseconds())*(0.5+0.5*u)
	return min(tier, int64(math.Round(turn)), c.claimPollMs())
}

// claimPollMs bounds every pollAfterMs to half the room's claim window
// (its entry token life, EntryTokenTTL as ForRoom sets it): a visitor
// admitted just after an answer, which it follows, comes back while its
// number can still be claimed, with half the window to spare for a late
// timer. Only a window shorter than twice a tier binds: a room whose
// tokens live a minute, paused or stalled (the far tier, 60 s ± 20 %).
func (c Config) claimPollMs() int64 {
	if c.EntryTokenTTL <= 0 {
		return math.MaxInt64
	}
	return max(1, c.EntryTokenTTL.Milliseconds()/2)
}

// Tiers is the configured POLL_TIERS, or the default table when none is set.
func (c Config) Tiers() PollTiers {
	if len(c.PollTiers) == 0 {
		return defaultTiers
	}
	return c.PollTiers
}

// FarPollMs is the poll interval of users whose turn cannot be predicted: a
// paused room, a pre-queue, stalled admission. It is the farthest tier's.
func (c Config) FarPollMs(u float64) int64 {
	t := c.Tiers()
	return min(t.Ms(t[0].MinWaitSeconds, u), c.claimPollMs())
}

// FarHorizon is the turn beyond which a waiting user's pollAfterMs is the
// far tier whatever happens: the estimated wait is in the farthest tier and
// the turn lies beyond its longest jittered poll. Stalled admission cannot
// change such an answer, so the store checks for it only nearer the front.
func (c Config) FarHorizon() time.Duration {
	t := c.Tiers()
	longest := time.Duration(math.Ceil(float64(t[0].PollMs)*(1+pollJitter))) * time.Millisecond
	return max(time.Duration(t[0].MinWaitSeconds)*time.Second, longest)
}

// ForRoom is c with the rate the store read with st, for the estimates of
// that room's answer.
func (c Config) ForRoom(st Standing) Config {
	if st.RatePerSec > 0 {
		c.AdmitRatePerSec = st.RatePerSec
	}
	// The law may raise the rate before the user's turn: PollAfterMs
	// reckons it ahead (turnAhead).
	c.adaptive = st.Adaptive
	if st.ClaimWindow > 0 {
		c.EntryTokenTTL = st.ClaimWindow
	}
	return c
}

// maxPreQueuePoll bounds a pre-queue visitor's sleep, so that an opening
// moved earlier is noticed well within an entry token's lifetime.
const maxPreQueuePoll = 5 * time.Minute

// preQueueSpread is the window over which a pre-queue comes back after the
// opening, so that it does not ask in the same 100 ms. Places are drawn
// already; coming back a few seconds later costs nobody their turn.
const preQueueSpread = 5 * time.Second

// PreQueuePollMs brings a pre-queued visitor back just after the opening:
// one admission interval after it plus a random share (u uniform in [0, 1))
// of preQueueSpread, or of half the far tier when that is shorter.
func (c Config) PreQueuePollMs(untilOpen time.Duration, u float64) int64 {
	t := c.Tiers()
	spread := u * min(float64(preQueueSpread.Milliseconds()), float64(t[0].PollMs)/2)
	ms := max(0, untilOpen.Milliseconds()) + c.AdmitInterval.Milliseconds() + int64(spread)
	return max(100, min(ms, maxPreQueuePoll.Milliseconds(), c.claimPollMs()))
}

// Page is how the waiting page looks for a room: the shop's name, colour,
// logo and language. All empty: the page's own.
type Page struct {
	Title      string `json:"title"`
	BrandColor string `json:"brandColor"` // #rrggbb
	LogoURL    string `json:"logoUrl"`    // https, on an origin of PAGE_IMAGE_ORIGINS
	Language   string `json:"language"`   // en or ko: the page's language when the browser asks for neither
}
