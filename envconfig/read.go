package envconfig

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/entrytoken"
)

func (r *envReader) trust(d Defaults) waitroom.TrustConfig {
	return waitroom.TrustConfig{EntryTokens: r.entryTokenKeys(d), Limits: waitroom.Limits{
		ClientRatePerSec:  r.float("CLIENT_RATE_PER_SEC", waitroom.DefaultClientRatePerSec, 0, 1e6),
		ClientBurst:       r.integer("CLIENT_BURST", waitroom.DefaultClientBurst, 1, 1e9),
		IPRatePerSec:      r.float("IP_RATE_PER_SEC", waitroom.DefaultIPRatePerSec, 0, 1e9),
		IPBurst:           r.integer("IP_BURST", waitroom.DefaultIPBurst, 1, 1e9),
		VisitorRatePerSec: r.float("VISITOR_RATE_PER_SEC", waitroom.DefaultVisitorRatePerSec, 0, 1e6),
		VisitorBurst:      r.integer("VISITOR_BURST", waitroom.DefaultVisitorBurst, 1, 1e9),
	}, Streams: waitroom.StreamCaps{
		PerIP: int(r.integer("STREAMS_PER_IP", waitroom.DefaultStreamsPerIP, 0, waitroom.StreamsMax)),
		Max:   int(r.integer("MAX_STREAMS", waitroom.DefaultMaxStreams, 1, waitroom.StreamsMax)),
	}}
}

// entryTokenKeys reads ENTRY_TOKEN_KEYS (the seeds: sign and verify) or
// ENTRY_TOKEN_PUBLIC_KEYS (their public keys: verify only, for a process
// such as the order gate that must not be able to mint tokens). One of the
// two at most, and a process that signs takes the seeds alone.
func (r *envReader) entryTokenKeys(d Defaults) entrytoken.Keys {
	issuer := r.str("ENTRY_TOKEN_ISSUER", waitroom.DefaultEntryTokenIssuer)
	seeds, public := r.str("ENTRY_TOKEN_KEYS", ""), r.str("ENTRY_TOKEN_PUBLIC_KEYS", "")
	name, parse := "ENTRY_TOKEN_KEYS", entrytoken.ParseKeys
	switch {
	case seeds != "" && public != "":
		r.fail("ENTRY_TOKEN_PUBLIC_KEYS", "is set with ENTRY_TOKEN_KEYS: set one, ENTRY_TOKEN_KEYS where tokens are signed, ENTRY_TOKEN_PUBLIC_KEYS where they are only verified")
	case public != "" && d.SignsEntryTokens:
		r.fail("ENTRY_TOKEN_PUBLIC_KEYS", "only verifies entry tokens, and this process signs them: give it ENTRY_TOKEN_KEYS (the seeds) instead")
	case public != "":
		name, parse, seeds = "ENTRY_TOKEN_PUBLIC_KEYS", entrytoken.ParsePublicKeys, public
	}
	keys, err := parse(seeds, issuer)
	if err != nil {
		r.fail(name, err.Error()) // the error never quotes the value
	}
	return keys
}

// unforwardable headers describe this hop, not the buyer, or are set by the
// gate itself (the user id must come from the gate, never from the caller).
var unforwardable = map[string]bool{"Connection": true, "Content-Length": true, "Host": true, "Transfer-Encoding": true,
	"Upgrade": true, "Te": true, "Trailer": true, "Keep-Alive": true, "Proxy-Authorization": true, "Proxy-Connection": true,
	"X-User-Id": true, "Idempotency-Key": true, "Content-Type": true, "Cookie": true,
	"X-Waitroom-Room": true, "X-Waitroom-User": true, "X-Waitroom-Token-Id": true}

func (r *envReader) visitors(d Defaults) waitroom.VisitorConfig {
	v := waitroom.VisitorConfig{
		Anonymous:    r.boolean("ANONYMOUS_VISITORS", d.AnonymousVisitors),
		TicketTTL:    time.Duration(r.integer("TICKET_TTL_SECONDS", waitroom.DefaultTicketTTLSeconds, 60, 7*86_400)) * time.Second,
		TicketMaxAge: time.Duration(r.integer("TICKET_MAX_AGE_SECONDS", waitroom.DefaultTicketMaxAgeSeconds, 60, 30*86_400)) * time.Second,
		ContinueURL:  r.str("CONTINUE_URL", ""),
	}
	v.Challenge, v.ChallengeBits = r.challenge(v.Anonymous)
	keys, err := waitroom.ParseTicketKeys(r.str("TICKET_SECRET", ""))
	if err != nil {
		r.fail("TICKET_SECRET", err.Error()) // the error never quotes the value
	}
	v.Tickets = keys
	if v.Anonymous && !keys.Enabled() && !d.GenerateTicketSecret {
		r.fail("TICKET_SECRET", "is required when ANONYMOUS_VISITORS is true")
	}
	if v.ContinueURL != "" && !strings.HasPrefix(v.ContinueURL, "/") {
		r.url("CONTINUE_URL", strings.ReplaceAll(v.ContinueURL, "{entryToken}", "t"), "http", "https")
	}
	for _, name := range strings.Split(r.str("ORDER_FORWARD_HEADERS", ""), ",") {
		name = http.CanonicalHeaderKey(strings.TrimSpace(name))
		switch {
		case name == "":
		case unforwardable[name] || !waitroom.Printable(name, 64) || strings.ContainsAny(name, " :"):
			r.fail("ORDER_FORWARD_HEADERS", "names a header that cannot be forwarded: "+name)
		default:
			v.ForwardHeaders = append(v.ForwardHeaders, name)
		}
	}
	return v
}

func (r *envReader) durableWrites() waitroom.DurableWrites {
	switch m := waitroom.DurableWrites(strings.ToLower(r.str("DURABLE_WRITES", string(waitroom.DefaultDurableWrites)))); m {
	case waitroom.DurableOff, waitroom.DurableWait:
		return m
	default:
		r.fail("DURABLE_WRITES", fmt.Sprintf("must be off or wait, got %q", m))
		return waitroom.DefaultDurableWrites
	}
}

// durableNeeds refuses DURABLE_WRITES=wait where WAIT cannot mean what it
// says: the embedded store has no replica, and ElastiCache Serverless
// shows its clients one virtual node whose replication they cannot wait
// for (docs/design.md, "Failover").
func (r *envReader) durableNeeds(c waitroom.Config) {
	if c.DurableWrites != waitroom.DurableWait {
		return
	}
	if c.RedisURL == "" {
		r.fail("DURABLE_WRITES", "is wait but REDIS_URL is unset: the embedded store has no replica to wait for")
	}
	if c.FailOpenOrders {
		r.fail("DURABLE_WRITES", "is wait with ORDER_GATE_FAIL_OPEN=true: an order whose lock reached no replica would be forwarded unguarded; choose one")
	}
	if c.RedisIAM.Enabled() && c.RedisIAM.Serverless {
		r.fail("DURABLE_WRITES", "is wait but the store is ElastiCache Serverless (REDIS_IAM_SERVERLESS): it offers no replica a client can WAIT for; use off and an order API that deduplicates by X-Waitroom-Token-Id")
	}
}

// tableName is DynamoDB's rule for a table's name.
var tableName = regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)

func (r *envReader) orderRecord() waitroom.OrderRecord {
	o := waitroom.OrderRecord{Table: r.str("ORDER_RECORD_TABLE", ""), Endpoint: r.str("ORDER_RECORD_ENDPOINT", "")}
	o.AnyCredentials = o.Endpoint != "" && r.raw("AWS_ACCESS_KEY_ID") == "" // the SDK's variable, not ours: no row
	if o.Table != "" && !tableName.MatchString(o.Table) {
		r.fail("ORDER_RECORD_TABLE", fmt.Sprintf("%q is not a DynamoDB table name (3 to 255 of a-z A-Z 0-9 _ . -)", o.Table))
	}
	if o.Endpoint != "" {
		if o.Table == "" {
			r.fail("ORDER_RECORD_ENDPOINT", "is set without ORDER_RECORD_TABLE: it would record nothing")
		}
		r.url("ORDER_RECORD_ENDPOINT", o.Endpoint, "http", "https")
	}
	return o
}

func (r *envReader) intake() waitroom.Intake {
	switch m := waitroom.Intake(strings.ToLower(r.str("INTAKE", string(waitroom.DefaultIntake)))); m {
	case waitroom.IntakeDirect, waitroom.IntakeBroker, waitroom.IntakeFallback:
		return m
	default:
		r.fail("INTAKE", fmt.Sprintf("must be direct, broker or fallback, got %q", m))
		return waitroom.DefaultIntake
	}
}

// intakeNeeds checks what the broker modes need: a queue, and a key to
// sign receipts with.
func (r *envReader) intakeNeeds(c waitroom.Config, d Defaults) {
	if c.IntakeQueueURL != "" {
		r.url("INTAKE_QUEUE_URL", c.IntakeQueueURL, "http", "https")
	}
	if c.Intake == waitroom.IntakeDirect {
		return
	}
	if c.IntakeQueueURL == "" {
		r.fail("INTAKE_QUEUE_URL", "is required when INTAKE is "+string(c.Intake))
	}
	if !c.Visitor.Tickets.Enabled() && !d.GenerateTicketSecret {
		r.fail("TICKET_SECRET", "is required when INTAKE is "+string(c.Intake)+" (it signs receipts)")
	}
}

func (r *envReader) challenge(anonymous bool) (waitroom.ChallengeMode, int) {
	mode := waitroom.ChallengeMode(strings.ToLower(r.str("CHALLENGE", string(waitroom.ChallengeOff))))
	bits := int(r.integer("CHALLENGE_BITS", waitroom.DefaultChallengeBits, 1, waitroom.MaxChallengeBits))
	switch {
	case mode != waitroom.ChallengeOff && mode != waitroom.ChallengePoW:
		r.fail("CHALLENGE", fmt.Sprintf("must be off or pow, got %q", mode))
		return waitroom.ChallengeOff, bits
	case mode == waitroom.ChallengePoW && !anonymous:
		// Only new anonymous visitors are asked to solve one.
		r.fail("CHALLENGE", "is pow but ANONYMOUS_VISITORS is not true: it would guard nothing")
	}
	return mode, bits
}

// ElastiCache's rules for user ids and for cache names (which it keeps in
// lowercase): a letter first, then letters, digits and single hyphens, at
// most 40 characters, no hyphen last.
var (
	iamUserPattern  = regexp.MustCompile(`^[A-Za-z](-?[A-Za-z0-9])*$`)
	iamCachePattern = regexp.MustCompile(`^[a-z](-?[a-z0-9])*$`)
)

// Bounds of PROXY_SECRET and ADMIN_TOKEN: long enough not to be guessed
// over HTTP, and visible ASCII so that every client can send it as a header value.
const (
	secretMin = 16
	secretMax = 512
)
