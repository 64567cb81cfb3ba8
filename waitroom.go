// Package waitroom holds the domain of a virtual waiting room: who may join
// which line, what a user is told while waiting, how admission is paced, and
// the errors every adapter maps to its own protocol. It depends on nothing but
// the standard library; Redis, Lambda and HTTP live in their own packages.
package waitroom

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Code is a stable, machine-readable error code; docs/API.md lists them all.
type Code string

// Error codes. Adapters map each one to a protocol status in one table.
const (
	EUnauthenticated  Code = "unauthenticated"
	EInvalidUser      Code = "invalid_user"
	EInvalidRoom      Code = "invalid_room"
	EInvalidRequest   Code = "invalid_request"
	EInvalidIdemKey   Code = "invalid_idempotency_key"
	ENotFound         Code = "not_found"
	EMethodNotAllowed Code = "method_not_allowed"
	EQueueFull        Code = "queue_full"
	ETokenInvalid     Code = "entry_token_invalid"
	EWrongRoom        Code = "wrong_room"
	EForbidden        Code = "forbidden"
	EOrderInProgress  Code = "order_in_progress"
	EOrderUpstream    Code = "order_upstream"
	EOrderTimeout     Code = "order_timeout"
	EUnavailable      Code = "unavailable"
	EInternal         Code = "internal"
	EPayloadTooLarge  Code = "payload_too_large"
	EIdemKeyReused    Code = "idempotency_key_reused"
	ERateLimited      Code = "rate_limited"
)

// Error is a domain error: a code for machines, a message for people, and
// for the retryable ones how long to wait before trying again.
type Error struct {
	Code       Code
	Message    string
	RetryAfter time.Duration
	Err        error // the cause, for logs; never shown to users
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err, EInternal for foreign errors and "" for nil.
func ErrorCode(err error) Code {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Code
	default:
		return EInternal
	}
}

// Unavailable wraps a store failure: the dependency, not the request, is at fault.
func Unavailable(cause error) *Error {
	return &Error{Code: EUnavailable, Message: "the waiting room is briefly unavailable, please retry", RetryAfter: 5 * time.Second, Err: cause}
}

// TokenUsed is the gate's answer for an entry token that cannot order:
// not the caller's, expired, or used (by the store's record or, after a
// failover lost that, the durable order record's).
func TokenUsed() *Error {
	return Errorf(ETokenInvalid, "the entry token is not valid for you: it may have expired or been used; join the line again")
}

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
	// Page is the room's page settings, read by enter only (the page
	// asks once per load); zero in position's answers.
	Page Page
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

// Queue is the line of every room. Implementations must be safe for
// concurrent use by any number of processes sharing one store.
type Queue interface {
	// Enter joins room's line as c.User, or reports the current standing
	// when c.User is already in line or admitted; the abuse limiter counts
	// c (and spends its challenge). A full line is an EQueueFull error.
	Enter(ctx context.Context, room string, c Caller) (Standing, error)
	// Position reports c.User's standing without changing anything but
	// the limiter's count of c.
	Position(ctx context.Context, room string, c Caller) (Standing, error)
	// AdmitBatch admits the front of every room's line, as far as each room's
	// rate budget allows, and issues entry tokens in the same atomic step. It
	// hands over the control windows that ended (RoomBatch.Downstream) but
	// decides nothing on them: call it through RunBatch, which does.
	AdmitBatch(ctx context.Context) (Batch, error)
	// StoreDecisions keeps the admission loop's decisions on the windows a
	// batch handed over (RunBatch), every room's in one round trip; a
	// decision on a window no newer than the room's last decided one is
	// dropped (admitters may overlap). One that does not land leaves the
	// rate as it was.
	StoreDecisions(ctx context.Context, decided []RoomDecision) error
	// BeginOrder validates c.User's entry token and takes its order lock,
	// or returns the stored answer of an earlier success with the same key;
	// the limiter counts c.
	BeginOrder(ctx context.Context, c Caller, o OrderAttempt) (Lease, error)
	// CommitOrder consumes the token, stores the answer under the
	// idempotency key and releases the lock, atomically.
	CommitOrder(ctx context.Context, l Lease, answer StoredAnswer) error
	// ReleaseOrder releases the lock and keeps the token.
	ReleaseOrder(ctx context.Context, l Lease) error
	// Admissible makes the checks an enter makes before it touches the line
	// (the room exists; c is within the abuse limiter, its challenge
	// unspent), for an entry about to be handed to a broker.
	Admissible(ctx context.Context, room string, c Caller) error
}

// Batch is what one admission batch did, room by room.
type Batch struct {
	Rooms []RoomBatch
}

// Idle reports whether the batch admitted nobody and left nobody waiting
// and no entry token live, in any room (no rooms at all is idle too):
// admission has nothing to do until someone enters.
func (b Batch) Idle() bool {
	for _, r := range b.Rooms {
		if r.Waiting > 0 || r.ActiveTokens > 0 || len(r.Admitted) > 0 {
			return false
		}
	}
	return true
}

// RoomBatch is one room's share of a batch.
type RoomBatch struct {
	Room          string
	Admitted      []Admission
	Waiting       int64 // still in line after the batch
	ActiveTokens  int64 // live entry tokens after the batch
	TokensExpired int64 // tokens found expired unused during the batch
	// EffectiveRatePerSec is the rate the batch admitted at: the adaptive
	// rate, or the room's ratePerSec.
	EffectiveRatePerSec float64
	// Downstream is the control window the batch handed over (the order
	// gate's measurements, for the admission loop to decide on: RunBatch);
	// nil for none.
	Downstream *Window
	// Control and Adaptive come with Downstream: what the law remembered
	// when the window was handed over, and the room's adaptive setting
	// (nil: a fixed rate, the window measured only, for status).
	Control  ControlState
	Adaptive *Adaptive
}

// Admission is one user moved to READY.
type Admission struct {
	User      string
	Token     string
	ExpiresAt time.Time
	Waited    time.Duration // enter → admitted, to the second
}

// OrderAttempt is what the gate knows before it calls the order API,
// besides who orders (BeginOrder's Caller).
type OrderAttempt struct {
	Room           string
	Token          string
	IdempotencyKey string // optional
	// RequestHash identifies the request body: a stored answer is replayed
	// only to the same body under the same key (idempotency_key_reused).
	RequestHash string
	// CreatedRoomsOnly: the room sells only if an operator created it
	// (ORDER_ROOMS unset); a visitor's own room (OPEN_ROOMS) is wrong_room.
	CreatedRoomsOnly bool
}

// Lease is the right to place one order: the user's lock, or a replay.
type Lease struct {
	OrderAttempt
	User      string // whose token and lock: the caller's
	LockValue string
	Replay    *StoredAnswer // set when an earlier success is to be returned again
	// TokenExpires is the token's expiry, with the lock (the order
	// record's TTL); zero with a replay.
	TokenExpires time.Time
	// Downstream is the order API call made under this lease, counted by
	// CommitOrder or ReleaseOrder in the same script (no extra round trip).
	Downstream DownstreamCall
}

// StoredAnswer is a downstream answer kept for idempotent replays.
type StoredAnswer struct {
	Status      int    `json:"status"`
	Body        string `json:"body"`
	ContentType string `json:"contentType,omitempty"`
	RequestHash string `json:"requestHash,omitempty"` // of the request that got this answer
}
