package waitroom

import (
	"errors"
	"time"
)

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

// OrderClaim is one use of an entry token in the order record: the gate's
// attempt (its order lock's random value, so that a retried write of the
// same attempt is not taken for a second use), the token's expiry, and
// what a replay must match.
type OrderClaim struct {
	Room, Token, Attempt string
	Expires              time.Time
	IdempotencyKey       string // "" without one
	RequestHash          string
}

// PriorOrder is what the use of a token that came first left in the
// order record.
type PriorOrder struct {
	SameKey     bool          // it had the claim's Idempotency-Key
	RequestHash string        // of its request body
	Answer      *StoredAnswer // its 2xx answer, kept for replays; nil while unknown
}

// ErrAnswerTooLarge is the order record's refusal to keep an answer larger
// than its items hold.
var ErrAnswerTooLarge = errors.New("order answer too large for the order record")

// StoreCallTimeout bounds one store call, so that a dead store is answered
// with 503 within a few seconds rather than at the Lambda timeout.
const StoreCallTimeout = 3 * time.Second

// CommitRetryWindow is how long the order gate keeps trying to record an
// order the downstream accepted (or to release a refused one's lock) while
// the store fails: a store that is back within it loses nothing (issue 12).
const CommitRetryWindow = 5 * time.Second

// OrderGateBudget is the worst path of one order: the token check, the
// downstream call, then the commit's retries, plus a second to answer. The
// order gate's Lambda timeout is at least this (infra).
func OrderGateBudget(orderTimeout time.Duration) time.Duration {
	return StoreCallTimeout + orderTimeout + CommitRetryWindow + time.Second
}
