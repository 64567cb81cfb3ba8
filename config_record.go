package waitroom

import (
	"errors"
	"time"
)

// OrderRecord is ORDER_RECORD_*: where the order gate keeps its durable
// record of consumed entry tokens (package orderrecord; docs/design.md,
// "The order record"). The zero value keeps no durable record: the
// store's order lock and commit are then the only record, which a
// failover of the store can lose (the embedded store of `make run`).
type OrderRecord struct {
	Table    string // ORDER_RECORD_TABLE: a DynamoDB table (the stack sets it)
	Endpoint string // ORDER_RECORD_ENDPOINT: a DynamoDB-compatible endpoint instead of AWS's (local runs, tests)
	// AnyCredentials: the endpoint is local and the environment has no AWS
	// keys; a DynamoDB-compatible server checks no signature, so the client
	// signs with placeholder keys rather than fail to find any.
	AnyCredentials bool
}

// The order record's names the stack needs too (infra/orderrecord.go):
// every partition key starts with OrderRecordKeyPrefix, so that the gate's
// IAM policy can grant exactly those items (dynamodb:LeadingKeys), and the
// table's TTL attribute is the token's expiry in Unix seconds.
const (
	OrderRecordKeyPrefix    = "token#"
	OrderRecordTTLAttribute = "expiresAt"
)

// Enabled reports whether the gate writes a durable record.
func (o OrderRecord) Enabled() bool { return o.Table != "" }

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
