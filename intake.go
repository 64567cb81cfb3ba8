package waitroom

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/b64url"
)

// ReceiptHeader carries the receipt of an accepted entry to position.
const ReceiptHeader = "X-Queue-Receipt"

// Entry is one accepted enter on its way through the broker.
type Entry struct {
	Room       string    `json:"room"`
	User       string    `json:"user"`
	AcceptedAt time.Time `json:"acceptedAt"`
}

// Broker accepts entries for the consumer (an SQS FIFO queue in AWS).
type Broker interface {
	Send(ctx context.Context, e Entry) error
}

// Applied is what the store remembers of the last entry it applied for a
// user in a room: when it was accepted, and whether the line was full when
// it came in. An entry for a room that does not exist (OPEN_ROOMS=false)
// leaves no record: position refuses such a room by itself.
type Applied struct {
	AcceptedAt time.Time
	Full       bool
}

// Applier is the store as the consumer sees it. Apply puts e in line unless
// an entry of the same user accepted at the same time or later was applied
// already (a redelivery), in one atomic step with the record of it.
type Applier interface {
	Apply(ctx context.Context, e Entry, keep time.Duration) (st Standing, redelivered bool, err error)
	LastApplied(ctx context.Context, room, user string) (Applied, bool, error)
}

// DedupID is the broker's deduplication id of an entry: one per room and
// identity, so that a double click within the broker's window sends once.
func (e Entry) DedupID() string {
	sum := sha256.Sum256([]byte(strconv.Itoa(len(e.Room)) + ":" + e.Room + ":" + e.User))
	return hex.EncodeToString(sum[:])
}

// receiptMAC domain-separates receipts from tickets signed by the same key.
const receiptMAC = "waitroom-receipt-v1\n"

// SignReceipt issues the receipt of e, valid until expires:
//
//	r1.<key id>.<room>.<base64 user>.<accepted, Unix µs>.<expiry, Unix s>.<HMAC-SHA256>
//
// signed by the ticket key (TICKET_SECRET), so that it rotates with it.
func (k TicketKeys) SignReceipt(e Entry, expires time.Time) (string, error) {
	if k.Current == nil {
		return "", errors.New("receipt: no signing key")
	}
	if !ValidRoom(e.Room) || CheckStoreUser(e.User) != nil {
		return "", fmt.Errorf("receipt: entry cannot be signed")
	}
	body := strings.Join([]string{"r1", k.Current.ID, e.Room, b64url.Encode([]byte(e.User)),
		strconv.FormatInt(e.AcceptedAt.UnixMicro(), 10), strconv.FormatInt(expires.Unix(), 10)}, ".")
	return k.Current.seal(receiptMAC, body), nil
}

// VerifyReceipt returns the entry a receipt names, or an EInvalidReceipt
// error. As with tickets, the signature is checked in constant time before
// anything the receipt says is believed.
func (k TicketKeys) VerifyReceipt(receipt string, now time.Time) (Entry, error) {
	p, why := k.open(receiptFormat, receipt)
	if why != "" {
		return Entry{}, invalidReceipt(why)
	}
	exp, err := strconv.ParseInt(p[5], 10, 64)
	if err != nil || !now.Before(time.Unix(exp, 0)) {
		return Entry{}, invalidReceipt("expired")
	}
	user, uerr := b64url.Decode(p[3])
	at, aerr := strconv.ParseInt(p[4], 10, 64)
	if uerr != nil || aerr != nil || !ValidRoom(p[2]) || CheckStoreUser(string(user)) != nil {
		return Entry{}, invalidReceipt("malformed entry")
	}
	return Entry{Room: p[2], User: string(user), AcceptedAt: time.UnixMicro(at)}, nil
}

func invalidReceipt(reason string) *Error {
	return &Error{Code: EInvalidReceipt, Message: "your entry could not be confirmed; join the line again",
		Err: errors.New("receipt " + reason)}
}
