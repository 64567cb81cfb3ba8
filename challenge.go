package waitroom

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/b64url"
)

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

// EChallengeRequired is an enter that would make a visitor without a valid
// solution (none, a bad one, an expired or spent one): its answer carries
// a fresh challenge to solve.
const EChallengeRequired Code = "challenge_required"

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
	p := strings.Split(solution, ".")
	if len(p) != 8 || p[0] != "c1" {
		return Challenge{}, refusedSolution("malformed")
	}
	key := k.key(p[1])
	if key == nil {
		return Challenge{}, refusedSolution("signed by an unknown key")
	}
	value := solution[:len(solution)-len(p[7])-1]
	if !key.opens(challengeMAC, value) {
		return Challenge{}, refusedSolution("bad signature")
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
	if !decimal(p[7], 16) {
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
