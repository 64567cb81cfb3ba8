package waitroom

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/b64url"
)

// A queue ticket identifies an anonymous visitor without a store lookup:
//
//	<key id>.<visitor id>.<first issued, Unix seconds>.<expiry, Unix seconds>.<HMAC-SHA256 of the first four parts>
//
// every part in URL-safe characters, so the ticket fits a cookie and a header
// unchanged. The key id names the key that signed it, so that keys rotate:
// the current key signs, the previous one still verifies until the tickets it
// signed have expired (at most one TICKET_TTL_SECONDS after the rotation).
// The first issue time is kept through every renewal, so that no visitor
// lives longer than TICKET_MAX_AGE_SECONDS.
//
// Tickets, receipts (intake.go) and challenges (challenge.go) are signed by
// one codec: seal and open, an HMAC-SHA256 of the body under a domain of
// each format's own, so that no signature of one is valid as another.

// TicketCookie is the cookie that carries the ticket; TicketHeader is the
// header that may carry it instead.
const (
	TicketCookie = "wr_ticket"
	TicketHeader = "X-Queue-Ticket"
)

// EInvalidTicket is a ticket that is forged, altered, expired or signed by an
// unknown key. Nothing is created for such a request: the visitor rejoins.
const EInvalidTicket Code = "invalid_ticket"

// minTicketKey is the shortest key accepted: HMAC-SHA256's own block of
// security, 256 bits.
const minTicketKey = 32

// ticketMAC domain-separates ticket signatures from any other use of the
// key (its "v2": a first format, without the issue time, is refused).
const ticketMAC = "waitroom-ticket-v2\n"

// TicketKey is one signing key and its id.
type TicketKey struct {
	ID     string
	Secret []byte
}

// TicketKeys signs with Current and verifies with Current or Previous.
type TicketKeys struct {
	Current  *TicketKey
	Previous *TicketKey // nil when no rotation is under way
}

// ParseTicketKeys reads TICKET_SECRET: one base64 key of at least 32 bytes,
// or "current,previous" during a rotation. Empty means no keys.
func ParseTicketKeys(s string) (TicketKeys, error) {
	if strings.TrimSpace(s) == "" {
		return TicketKeys{}, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > 2 {
		return TicketKeys{}, fmt.Errorf("holds %d keys; at most two, current first then previous", len(parts))
	}
	var keys []*TicketKey
	for i, p := range parts {
		secret, err := decodeKey(strings.TrimSpace(p))
		if err != nil || len(secret) < minTicketKey {
			return TicketKeys{}, fmt.Errorf("key %d must be base64 of at least %d bytes", i+1, minTicketKey)
		}
		keys = append(keys, NewTicketKey(secret))
	}
	k := TicketKeys{Current: keys[0]}
	if len(keys) == 2 {
		if hmac.Equal([]byte(keys[1].ID), []byte(keys[0].ID)) {
			return TicketKeys{}, fmt.Errorf("the previous key is the current key")
		}
		k.Previous = keys[1]
	}
	return k, nil
}

// decodeKey accepts standard or URL-safe base64, padded or not.
func decodeKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

// NewTicketKey names secret by a hash of it: operators rotate by changing
// TICKET_SECRET alone, and the id reveals nothing usable about the key.
func NewTicketKey(secret []byte) *TicketKey {
	sum := sha256.Sum256(append([]byte("waitroom-ticket-key-id\n"), secret...))
	return &TicketKey{ID: b64url.Encode(sum[:6]), Secret: secret}
}

// GenerateTicketSecret returns a fresh TICKET_SECRET value (48 random bytes).
func GenerateTicketSecret() (string, error) {
	var b [48]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b[:]), nil
}

// Enabled reports whether tickets can be signed.
func (k TicketKeys) Enabled() bool { return k.Current != nil }

// NewVisitorID returns a fresh anonymous visitor id: "v-" and 128 random bits.
func NewVisitorID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "v-" + b64url.Encode(b[:]), nil
}

// Ticket is what a verified ticket says.
type Ticket struct {
	Visitor  string
	IssuedAt time.Time // the visitor's first ticket
}

// Sign issues a ticket for visitor, first issued at issued, that expires at
// expires.
func (k TicketKeys) Sign(visitor string, issued, expires time.Time) (string, error) {
	if k.Current == nil {
		return "", errors.New("ticket: no signing key")
	}
	if CheckUser(visitor) != nil || strings.Contains(visitor, ".") {
		return "", fmt.Errorf("ticket: visitor id %q cannot be signed", visitor)
	}
	body := k.Current.ID + "." + visitor + "." + strconv.FormatInt(issued.Unix(), 10) + "." + strconv.FormatInt(expires.Unix(), 10)
	return k.Current.seal(ticketMAC, body), nil
}

// Verify returns what a ticket says, or an EInvalidTicket error when it is
// malformed, signed by an unknown key, altered or expired at now. The
// signature is compared in constant time, and checked before anything the
// ticket says is believed.
func (k TicketKeys) Verify(ticket string, now time.Time) (Ticket, error) {
	parts := strings.Split(ticket, ".")
	if len(parts) != 5 {
		return Ticket{}, invalidTicket("malformed")
	}
	key := k.key(parts[0])
	if key == nil {
		return Ticket{}, invalidTicket("signed by an unknown key")
	}
	if !key.opens(ticketMAC, ticket) {
		return Ticket{}, invalidTicket("bad signature")
	}
	issued, ierr := strconv.ParseInt(parts[2], 10, 64)
	exp, err := strconv.ParseInt(parts[3], 10, 64)
	if err != nil || ierr != nil || !now.Before(time.Unix(exp, 0)) {
		return Ticket{}, invalidTicket("expired")
	}
	if CheckUser(parts[1]) != nil {
		return Ticket{}, invalidTicket("malformed visitor")
	}
	t := Ticket{Visitor: parts[1]}
	if issued > 0 {
		t.IssuedAt = time.Unix(issued, 0)
	}
	return t, nil
}

func (k TicketKeys) key(id string) *TicketKey {
	for _, key := range []*TicketKey{k.Current, k.Previous} {
		// Key ids are public; comparing them in constant time still costs nothing.
		if key != nil && hmac.Equal([]byte(key.ID), []byte(id)) {
			return key
		}
	}
	return nil
}

// seal signs body with key under domain: body, '.', and the base64url
// HMAC-SHA256 of domain and body.
func (key *TicketKey) seal(domain, body string) string {
	return body + "." + b64url.Encode(key.mac(domain, body))
}

// opens reports whether signed, body '.' signature, carries key's
// signature of its body under domain (seal's). The signature is compared in
// constant time.
func (key *TicketKey) opens(domain, signed string) bool {
	i := strings.LastIndexByte(signed, '.')
	if i < 0 {
		return false
	}
	got, err := b64url.Decode(signed[i+1:])
	return err == nil && hmac.Equal(got, key.mac(domain, signed[:i]))
}

func (key *TicketKey) mac(domain, body string) []byte {
	h := hmac.New(sha256.New, key.Secret)
	h.Write([]byte(domain))
	h.Write([]byte(body))
	return h.Sum(nil)
}

// invalidTicket is the one answer to every bad ticket; the reason is for
// logs, the visitor is told to rejoin.
func invalidTicket(reason string) *Error {
	return &Error{Code: EInvalidTicket, Message: "your place in line could not be confirmed; join the line again",
		Err: errors.New("ticket " + reason)}
}

// TicketSetCookie is the Set-Cookie value that stores ticket in the browser
// until expires: HttpOnly (no script reads it), Secure, SameSite=Lax, Path=/.
// Browsers accept Secure cookies from http://127.0.0.1 and localhost too.
func TicketSetCookie(ticket string, expires time.Time, now time.Time) string {
	maxAge := int64(expires.Sub(now).Seconds())
	return fmt.Sprintf("%s=%s; Path=/; Max-Age=%d; HttpOnly; Secure; SameSite=Lax", TicketCookie, ticket, max(maxAge, 1))
}

// TicketClearCookie removes the ticket cookie (after an invalid ticket).
func TicketClearCookie() string {
	return TicketCookie + "=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Lax"
}
