package waitroom

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/b64url"
)

// A queue ticket identifies an anonymous visitor without a store lookup,
// and carries its place in one room's line once it has one (a Spot):
//
//	<key id>.<visitor id>.<first issued, Unix seconds>.<expiry, Unix seconds>[.<room>.<number>.<spot signed, Unix ms>].<HMAC-SHA256 of the parts before it>
//
// every part in URL-safe characters, so the ticket fits a cookie and a header
// unchanged. The key id names the key that signed it, so that keys rotate:
// the current key signs, the previous one still verifies until the tickets it
// signed have expired (at most one TICKET_TTL_SECONDS after the rotation).
// The first issue time is kept through every renewal, so that no visitor
// lives longer than TICKET_MAX_AGE_SECONDS.
//
// Tickets, receipts (intake.go), places and challenges (below) are signed
// by one codec: seal and open, an HMAC-SHA256 of the body under a domain of
// each format's own, so that no signature of one is valid as another.

// TicketCookie is the cookie that carries the ticket; TicketHeader is the
// header that may carry it instead.
const (
	TicketCookie = "wr_ticket"
	TicketHeader = "X-Queue-Ticket"
)

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
	Spot     Spot      // the visitor's place in a room's line; zero: none
}

// Spot is a visitor's place in one room's line as its credential carries
// it (the ticket, or an account's place: SignPlace): the room, the place's
// number (every number below the line's front has left it: View), and when
// it was signed. A poll that carries it is answered from the room's View,
// without the store, while the front has not reached it. The store stays
// the record: a spot it cannot confirm is only ever a reason to ask it.
type Spot struct {
	Room   string
	Number int64
	At     time.Time // when the number was signed; a spot older than the line it names belongs to an earlier one
}

// In is whether s is a place in room's line.
func (s Spot) In(room string) bool { return s.Number > 0 && s.Room == room }

// Sign issues a ticket for visitor, first issued at issued, that expires at
// expires, carrying spot unless it is zero.
func (k TicketKeys) Sign(visitor string, issued, expires time.Time, spot Spot) (string, error) {
	if k.Current == nil {
		return "", errors.New("ticket: no signing key")
	}
	if CheckUser(visitor) != nil || strings.Contains(visitor, ".") {
		return "", fmt.Errorf("ticket: visitor id %q cannot be signed", visitor)
	}
	body := k.Current.ID + "." + visitor + "." + strconv.FormatInt(issued.Unix(), 10) + "." + strconv.FormatInt(expires.Unix(), 10)
	if spot.Number > 0 && ValidRoom(spot.Room) {
		body += "." + spotParts(spot)
	}
	return k.Current.seal(ticketMAC, body), nil
}

// spotParts is a spot as three dot-separated parts: room names have no dot.
func spotParts(s Spot) string {
	return s.Room + "." + strconv.FormatInt(s.Number, 10) + "." + strconv.FormatInt(s.At.UnixMilli(), 10)
}

// parseSpot reads spotParts's three parts; ok is false when they are not a spot.
func parseSpot(room, number, at string) (Spot, bool) {
	n, nerr := strconv.ParseInt(number, 10, 64)
	ms, merr := strconv.ParseInt(at, 10, 64)
	if nerr != nil || merr != nil || n <= 0 || ms < 0 || !ValidRoom(room) {
		return Spot{}, false
	}
	return Spot{Room: room, Number: n, At: time.UnixMilli(ms)}, true
}

// Verify returns what a ticket says, or an EInvalidTicket error when it is
// malformed, signed by an unknown key, altered or expired at now. The
// signature is compared in constant time, and checked before anything the
// ticket says is believed.
func (k TicketKeys) Verify(ticket string, now time.Time) (Ticket, error) {
	parts, why := k.open(ticketFormat, ticket)
	if why != "" {
		return Ticket{}, invalidTicket(why)
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
	if len(parts) == 8 {
		spot, ok := parseSpot(parts[4], parts[5], parts[6])
		if !ok {
			return Ticket{}, invalidTicket("malformed place")
		}
		t.Spot = spot
	}
	if issued > 0 {
		t.IssuedAt = time.Unix(issued, 0)
	}
	return t, nil
}

func (k TicketKeys) byID(id string) *TicketKey {
	for _, key := range []*TicketKey{k.Current, k.Previous} {
		// Key ids are public; comparing them in constant time still costs nothing.
		if key != nil && hmac.Equal([]byte(key.ID), []byte(id)) {
			return key
		}
	}
	return nil
}

// An account's place (a user signed in, or named by the operator's proxy)
// is its own signed string, since accounts get no ticket:
//
//	<key id>.<room>.<number>.<spot signed, Unix ms>.<expiry, Unix seconds>.<base64url of the store's user>.<HMAC-SHA256 of the parts before it>
//
// given in the answer's place field and the wr_place cookie, and sent back
// in the X-Queue-Place header (or the cookie). It names its user: a place
// is believed only from the account it was signed for.
const (
	PlaceCookie = "wr_place"
	PlaceHeader = "X-Queue-Place"
)

// placeMAC domain-separates places from tickets, receipts and challenges.
const placeMAC = "waitroom-place-v1\n"

// SignPlace signs user's spot, valid until expires.
func (k TicketKeys) SignPlace(user string, spot Spot, expires time.Time) (string, error) {
	if k.Current == nil {
		return "", errors.New("place: no signing key")
	}
	if spot.Number <= 0 || !ValidRoom(spot.Room) {
		return "", errors.New("place: no place to sign")
	}
	body := k.Current.ID + "." + spotParts(spot) + "." + strconv.FormatInt(expires.Unix(), 10) + "." + b64url.Encode([]byte(user))
	return k.Current.seal(placeMAC, body), nil
}

// VerifyPlace returns the spot place signs for user, or an error when it
// is malformed, altered, expired at now or signed for another user (the
// user is compared in constant time, after the signature).
func (k TicketKeys) VerifyPlace(place, user string, now time.Time) (Spot, error) {
	parts, why := k.open(placeFormat, place)
	if why == refusedShape {
		return Spot{}, errors.New("place: malformed")
	}
	if why != "" { // an unknown key is a bad signature to a place
		return Spot{}, errors.New("place: bad signature")
	}
	exp, err := strconv.ParseInt(parts[4], 10, 64)
	if err != nil || now.Unix() >= exp {
		return Spot{}, errors.New("place: expired")
	}
	if !hmac.Equal([]byte(parts[5]), []byte(b64url.Encode([]byte(user)))) {
		return Spot{}, errors.New("place: another user's")
	}
	spot, ok := parseSpot(parts[1], parts[2], parts[3])
	if !ok {
		return Spot{}, errors.New("place: malformed")
	}
	return spot, nil
}

// PlaceSetCookie keeps an account's place in the browser until expires, as
// TicketSetCookie keeps a ticket.
func PlaceSetCookie(place string, expires, now time.Time) string {
	maxAge := int64(expires.Sub(now).Seconds())
	return fmt.Sprintf("%s=%s; Path=/; Max-Age=%d; HttpOnly; Secure; SameSite=Lax", PlaceCookie, place, max(maxAge, 1))
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

// A signed format, as open checks it: the domain it is signed under, the
// version its first part must be ("" when it has none; the key id follows
// it) and the numbers of parts it may have, the signature included.
type signedFormat struct {
	domain  string
	version string
	parts   []int
}

var (
	ticketFormat    = signedFormat{domain: ticketMAC, parts: []int{5, 8}}
	placeFormat     = signedFormat{domain: placeMAC, parts: []int{7}}
	receiptFormat   = signedFormat{domain: receiptMAC, version: "r1", parts: []int{7}}
	challengeFormat = signedFormat{domain: challengeMAC, version: "c1", parts: []int{7}}
)

// Why open refused a signed string: the reasons each format gives, in its
// own error, for the checks they share.
const (
	refusedShape     = "malformed"
	refusedKey       = "signed by an unknown key"
	refusedSignature = "bad signature"
)

// open returns the parts of signed, a string of format f, once their
// number, the version, the key id and the signature (in constant time:
// opens) are checked, or why it refused them. Nothing else in them is
// checked yet: each format parses its own fields and expiry.
func (k TicketKeys) open(f signedFormat, signed string) (parts []string, why string) {
	parts = strings.Split(signed, ".")
	if !slices.Contains(f.parts, len(parts)) || f.version != "" && parts[0] != f.version {
		return nil, refusedShape
	}
	keyAt := 0
	if f.version != "" {
		keyAt = 1
	}
	key := k.byID(parts[keyAt])
	if key == nil {
		return nil, refusedKey
	}
	if !key.opens(f.domain, signed) {
		return nil, refusedSignature
	}
	return parts, ""
}

// cutLast splits s around its last sep: s and "" when it has none.
func cutLast(s string, sep byte) (before, after string) {
	if i := strings.LastIndexByte(s, sep); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
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

// Secret is a configuration value that must never reach a log: every way
// of printing it prints a placeholder.
type Secret string

const redacted = "[redacted]"

func (Secret) String() string { return redacted }

func (Secret) GoString() string { return redacted }

func (Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

func (Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// A proof-of-work challenge (CHALLENGE=pow, issue 19) bounds how fast one
// client mints anonymous visitors: an enter that would make one must carry
// the solution of a challenge the server signed, which costs the client
// about 2^bits SHA-256 hashes and the server one HMAC and one hash to
// check, with no store call. The challenge is
//
//	c1.<key id>.<room>.<nonce>.<bits>.<expiry, Unix s>.<HMAC-SHA256 of the first six parts>
//
// signed by the ticket key (TICKET_SECRET, so it rotates with it) under its
// own domain, so that it is never a ticket nor a receipt. A solution is the
// challenge, ".", and a decimal counter: it is valid when SHA-256 of the
// whole solution begins with bits zero bits. The store records the nonce
// of every solution that made a visitor for the challenge's remaining
// life, so one solution makes one visitor (redisstore/challenge.lua).

// ChallengeHeader carries a solution to enter.
const ChallengeHeader = "X-Queue-Challenge"

// ChallengeAlgorithm is the hash a solution is checked with, as WebCrypto
// names it (crypto.subtle.digest).
const ChallengeAlgorithm = "sha-256"

// ChallengeTTL is a challenge's life: a phone 10 times slower than the
// measured browser solves the default difficulty well within it at the p99
// (BENCHMARKS.md, "Proof of work"), and a solution kept for later is
// worth two minutes at most.
const ChallengeTTL = 2 * time.Minute

// ChallengeMode is CHALLENGE.
type ChallengeMode string

const (
	ChallengeOff ChallengeMode = "off" // new visitors are made on request (the default)
	ChallengePoW ChallengeMode = "pow" // new visitors need a solved challenge
)

// DefaultChallengeBits is CHALLENGE_BITS' default and MaxChallengeBits its
// ceiling; BENCHMARKS.md ("Proof of work", make bench-challenge) has the
// measurements behind the default, docs/design.md ("Proof of work for new
// visitors") the choice. 1 bit is allowed for tests, which cannot wait.
const (
	DefaultChallengeBits = 16
	MaxChallengeBits     = 24
)

// challengeMAC domain-separates challenges from tickets and receipts
// signed by the same key.
const challengeMAC = "waitroom-challenge-v1\n"

// maxSolution bounds what VerifySolution reads: a real solution is at most
// about 180 bytes (a 64-character room, a 16-digit counter).
const maxSolution = 256

// Challenge is one challenge, as issued or as a verified solution names it.
type Challenge struct {
	Value     string // the signed challenge: what the client extends with a counter and hashes
	Room      string
	Nonce     string // 128 random bits, URL-safe: the single-use record's key
	Bits      int
	ExpiresAt time.Time
}

// ChallengeSpend is a verified solution as the enter that makes a visitor
// hands it to the store: the nonce to record as spent, and for how long
// (the challenge's remaining life). The zero value spends nothing.
type ChallengeSpend struct {
	Nonce string
	TTL   time.Duration
}

// NewChallenge signs a fresh challenge of bits for room, valid until expires.
func (k TicketKeys) NewChallenge(room string, bits int, expires time.Time) (Challenge, error) {
	if k.Current == nil {
		return Challenge{}, errors.New("challenge: no signing key")
	}
	if !ValidRoom(room) || bits < 1 || bits > MaxChallengeBits {
		return Challenge{}, fmt.Errorf("challenge: room or bits cannot be signed")
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Challenge{}, err
	}
	c := Challenge{Room: room, Nonce: b64url.Encode(b[:]), Bits: bits, ExpiresAt: time.Unix(expires.Unix(), 0)}
	body := strings.Join([]string{"c1", k.Current.ID, room, c.Nonce, strconv.Itoa(bits), strconv.FormatInt(expires.Unix(), 10)}, ".")
	c.Value = k.Current.seal(challengeMAC, body)
	return c, nil
}

// VerifySolution returns the challenge a solution solves, or an
// EChallengeRequired error saying why not. The checks run in this order,
// each before anything the next one reads is believed: the shape, the
// signature (in constant time), the expiry at now, the room, the
// difficulty (at least minBits: a challenge issued before the operator
// raised CHALLENGE_BITS is refused), then the hash. It never calls the
// store: whether the solution was spent already is the enter script's.
func (k TicketKeys) VerifySolution(solution, room string, minBits int, now time.Time) (Challenge, error) {
	if len(solution) > maxSolution {
		return Challenge{}, refusedSolution("malformed")
	}
	// The challenge is signed, the counter after its last dot is not.
	value, counter := cutLast(solution, '.')
	p, why := k.open(challengeFormat, value)
	if why != "" {
		return Challenge{}, refusedSolution(why)
	}
	exp, err := strconv.ParseInt(p[5], 10, 64)
	if err != nil || !now.Before(time.Unix(exp, 0)) {
		return Challenge{}, refusedSolution("expired")
	}
	if p[2] != room {
		return Challenge{}, refusedSolution("for another room")
	}
	n, err := strconv.Atoi(p[4])
	if err != nil || n < minBits {
		return Challenge{}, refusedSolution("easier than this room asks")
	}
	if !decimal(counter, 16) {
		return Challenge{}, refusedSolution("malformed counter")
	}
	sum := sha256.Sum256([]byte(solution))
	if LeadingZeroBits(sum[:]) < n {
		return Challenge{}, refusedSolution("does not solve it")
	}
	return Challenge{Value: value, Room: p[2], Nonce: p[3], Bits: n, ExpiresAt: time.Unix(exp, 0)}, nil
}

// SolveChallenge returns the solution of c with the smallest counter: what
// a Go client sends as X-Queue-Challenge (the waiting page solves it in
// web/static/waitroom/pow.js, the same search with WebCrypto), and the
// attacker's side in the measurements. It takes about 2^c.Bits hashes.
func SolveChallenge(value string, bits int) string {
	buf := append([]byte(value), '.')
	for n := uint64(0); ; n++ {
		s := strconv.AppendUint(buf, n, 10)
		if sum := sha256.Sum256(s); LeadingZeroBits(sum[:]) >= bits {
			return string(s)
		}
	}
}

// LeadingZeroBits counts the zero bits sum begins with.
func LeadingZeroBits(sum []byte) int {
	n := 0
	for _, b := range sum {
		if b != 0 {
			return n + bits.LeadingZeros8(b)
		}
		n += 8
	}
	return n
}

// decimal reports whether s is 1 to max ASCII digits.
func decimal(s string, max int) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ChallengeRequired is the answer to an enter that must solve a challenge
// first; cause, when set, is VerifySolution's or ErrChallengeSpent: why the
// solution it sent was refused, which the message repeats (it holds no
// secret).
func ChallengeRequired(cause error) *Error {
	msg := "prove this is a browser, not a script: solve the challenge and send the solution as " + ChallengeHeader
	if cause != nil {
		msg = cause.Error() + "; solve the new challenge and send the solution as " + ChallengeHeader
	}
	return &Error{Code: EChallengeRequired, Message: msg, Err: cause}
}

// refusedSolution is the error of a solution that does not verify; the
// reason is for logs and the message, the client solves a new challenge.
func refusedSolution(reason string) error {
	return errors.New("challenge solution " + reason)
}

// ErrChallengeSpent is a solution whose challenge already made a visitor.
var ErrChallengeSpent = refusedSolution("already used")
