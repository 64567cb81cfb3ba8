// Package waitroom holds the domain of a virtual waiting room: who may join
// which line, what a user is told while waiting, how admission is paced, and
// the errors every adapter maps to its own protocol. It reads no
// environment and does no I/O: the environment is envconfig's, Redis is
// redisstore's, HTTP is httpapi's, Lambda is awslambda's. It imports only
// the standard library, entrytoken (the keys in its configuration) and
// b64url (the spelling of its signed formats).
//
// One file a concept, each using only the ones before it:
//
//	waitroom.go   error codes, the Error every adapter maps, names (rooms, users, keys)
//	signed.go     the signed formats: tickets, challenges, their one HMAC codec, secrets
//	caller.go     who sends a request, as the limiter counts it
//	config.go     the typed configuration (envconfig fills it) and the poll tiers
//	adaptive.go   the adaptive law: its setting, the window's measures, its decisions
//	line.go       statuses, a user's standing, the estimated wait and when to ask again
//	room.go       a room's settings and page, as operators change them
//	order.go      an order through the gate: its attempt, lease, answer and budget
//	intake.go     entries through a broker and their signed receipts
//	admission.go  the store's interface and the admission loop that runs the law
package waitroom

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
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

// EInvalidReceipt is a receipt that is forged, altered, expired or signed
// by an unknown key; the visitor enters again.
const EInvalidReceipt Code = "invalid_receipt"

// Error codes of the admin API (docs/API.md, "Admin API").
const (
	EInvalidSettings Code = "invalid_settings"
	ERoomNotFound    Code = "room_not_found"
)

// ERoomClosed refuses an enter of a closed room (403).
const ERoomClosed Code = "room_closed"

func invalidSetting(field, msg string) *Error {
	return Errorf(EInvalidSettings, "%s %s", field, msg)
}

// EChallengeRequired is an enter that would make a visitor without a valid
// solution (none, a bad one, an expired or spent one): its answer carries
// a fresh challenge to solve.
const EChallengeRequired Code = "challenge_required"

// EInvalidTicket is a ticket that is forged, altered, expired or signed by an
// unknown key. Nothing is created for such a request: the visitor rejoins.
const EInvalidTicket Code = "invalid_ticket"

// RateLimited is the answer to a caller over its limit, to retry after wait.
func RateLimited(wait time.Duration) *Error {
	wait = time.Duration(math.Max(float64(wait), float64(time.Second)))
	return &Error{Code: ERateLimited, Message: fmt.Sprintf("too many requests from you; retry in %d s", int(math.Ceil(wait.Seconds()))), RetryAfter: wait}
}

// DefaultRoom is the room of requests that name none.
const DefaultRoom = "default"

var roomPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// ValidRoom reports whether name may be used as a room.
func ValidRoom(name string) bool { return roomPattern.MatchString(name) }

// CheckUser validates a user id: 1 to 128 printable ASCII characters.
func CheckUser(id string) error {
	if !Printable(id, 128) {
		return Errorf(EInvalidUser, "a user id is 1 to 128 printable ASCII characters")
	}
	return nil
}

// CheckStoreUser validates a user as the store keeps it: a user id in its
// source's namespace (a prefix of at most 2 characters, awslambda's
// identity), so at most 130 printable ASCII characters.
func CheckStoreUser(user string) error {
	if !Printable(user, 130) {
		return Errorf(EInvalidUser, "a user is 1 to 130 printable ASCII characters")
	}
	return nil
}

// CheckIdempotencyKey validates an Idempotency-Key: 1 to 128 printable ASCII characters.
func CheckIdempotencyKey(key string) error {
	if !Printable(key, 128) {
		return Errorf(EInvalidIdemKey, "Idempotency-Key must be 1 to 128 printable ASCII characters")
	}
	return nil
}

// Printable reports whether s is 1 to max visible ASCII characters or
// spaces: what an identifier or a header value may hold.
func Printable(s string, max int) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// TokenRoom returns the room an entry token was issued for. Tokens are
// "<room>.<128 random bits as 22 URL-safe base64 characters>": the order gate
// learns the room from the token itself. ok is false for anything else.
func TokenRoom(token string) (room string, ok bool) {
	room, random, found := strings.Cut(token, ".")
	if !found || !ValidRoom(room) || len(random) != 22 {
		return "", false
	}
	if _, err := base64.RawURLEncoding.DecodeString(random); err != nil {
		return "", false
	}
	return room, true
}
