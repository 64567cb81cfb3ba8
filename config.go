package waitroom

import (
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/entrytoken"
)

// Config is the environment of every function and of the local runner,
// read once at start (docs/API.md, "Configuration").
type Config struct {
	RedisURL        string   // REDIS_URL; empty only in the local runner (embedded store)
	RedisCluster    bool     // REDIS_CLUSTER: the URL names a cluster-mode endpoint
	RedisIAM        RedisIAM // REDIS_IAM_*: IAM authentication to ElastiCache; zero when off
	AdmitRatePerSec float64  // ADMIT_RATE_PER_SEC
	AdmitInterval   time.Duration
	AdmitBatches    int
	EntryTokenTTL   time.Duration
	QueueCapacity   int64
	OrderAPIURL     string // ORDER_API_URL; empty only in the local runner (demo service)
	OrderTimeout    time.Duration
	OrderRooms      []string // ORDER_ROOMS: the rooms whose tokens this gate takes; empty: those an operator created; [AnyRoom]: every room
	TrustUserHeader bool
	ProxySecret     Secret    // PROXY_SECRET: with TrustUserHeader, X-User-Id counts only from a caller that sends it
	OriginSecret    Secret    // ORIGIN_SECRET: visitors' requests must carry it (CloudFront adds it); their address is then CloudFront-Viewer-Address
	FailOpenOrders  bool      // ORDER_GATE_FAIL_OPEN: forward orders unguarded while the store is down
	PollTiers       PollTiers // POLL_TIERS
	Addr            string
	Visitor         VisitorConfig
	OpenRooms       bool   // OPEN_ROOMS: any valid room name works, not only operator-created rooms
	InstantAdmit    bool   // INSTANT_ADMIT: rooms' instantAdmit default (enter answers READY when nobody waits)
	AdminToken      Secret // ADMIN_TOKEN: bearer token of the admin API outside AWS IAM
	Intake          Intake // INTAKE
	IntakeQueueURL  string // INTAKE_QUEUE_URL: the broker's queue, for broker and fallback
	Trust           TrustConfig
	DurableWrites   DurableWrites // DURABLE_WRITES: the gate's writes wait for a replica
	OrderRecord     OrderRecord   // ORDER_RECORD_*: the durable record of consumed tokens
	// PageImageOrigins (PAGE_IMAGE_ORIGINS) are the https origins a room's
	// logoUrl may name: the waiting page's Content-Security-Policy img-src.
	PageImageOrigins []string
	// DemoSaleRoom is set by the local runner alone, when its demo order API
	// runs: that room (tv) sells with ORDER_ROOMS unset as if an operator had
	// created it. Never read from the environment.
	DemoSaleRoom string
	// TrustedProxies (TRUSTED_PROXIES): the reverse proxies whose
	// X-Forwarded-For (or Forwarded) names the client the limiter counts.
	TrustedProxies []netip.Prefix
	// adaptive (ForRoom): the room's rate is the adaptive law's, and
	// PollAfterMs reckons the user's turn ahead of it (turnAhead).
	adaptive bool
}

// Default values of the configuration (docs/API.md, "Configuration"). They
// are defined here once: envconfig.Load, the infra stack and its tests use them.
const (
	DefaultAdmitRatePerSec      = 100.0
	DefaultAdmitIntervalMs      = 100
	DefaultAdmitBatches         = 10
	DefaultEntryTokenTTLSeconds = 300
	DefaultQueueCapacity        = 100_000
	DefaultOrderTimeoutMs       = 10_000
	DefaultAddr                 = "127.0.0.1:8080"
)

// BatchSize is how many users one batch may admit: the rate spread over
// the interval, and never less than one so that slow rates still move.
func (c Config) BatchSize() float64 {
	return math.Max(1, c.AdmitRatePerSec*c.AdmitInterval.Seconds())
}

// AnyRoom is ORDER_ROOMS=*: the gate takes a token of every room.
const AnyRoom = "*"

// OrderRoomSells says whether the order gate takes an entry token of room
// by ORDER_ROOMS alone: a list names the rooms, * takes every one. Unset,
// it cannot tell (decided is false): a room sells if an operator created
// it, which the store checks in the order's first script (or if it is the
// local runner's demo sale room).
func (c Config) OrderRoomSells(room string) (sells, decided bool) {
	switch {
	case len(c.OrderRooms) == 0 && c.DemoSaleRoom != "" && room == c.DemoSaleRoom:
		return true, true
	case len(c.OrderRooms) == 0:
		return false, false
	case c.OrderRooms[0] == AnyRoom:
		return true, true
	}
	return slices.Contains(c.OrderRooms, room), true
}

// RedisIAM is how the functions authenticate to ElastiCache with IAM
// instead of a password: each new connection sends a short-lived token,
// signed locally with the function's AWS credentials, as the AUTH password
// of the IAM-enabled user User (docs/security.md).
type RedisIAM struct {
	User       string // REDIS_IAM_USER: the ElastiCache user id (= its user name); setting it turns IAM on
	CacheName  string // REDIS_IAM_CACHE_NAME: the serverless cache name or replication group id
	Serverless bool   // REDIS_IAM_SERVERLESS: the cache is ElastiCache Serverless (the default)
}

// Enabled reports whether the functions authenticate with IAM.
func (i RedisIAM) Enabled() bool { return i.User != "" }

// PollTier says how long a user whose estimated wait is at least
// MinWaitSeconds may sleep before asking again (docs/API.md, POLL_TIERS).
type PollTier struct {
	MinWaitSeconds int64
	PollMs         int64
}

// PollTiers is a tier table, sorted by MinWaitSeconds descending (farthest
// first); its last tier starts at 0 so that every wait has a tier.
type PollTiers []PollTier

// DefaultPollTiers is POLL_TIERS' default: one tier, ask every minute.
// pollAfterMs is also capped at the user's own turn, so the tier does not
// decide when a user learns of its admission; it bounds how stale a waiting
// user's answer gets, and how late a user learns of an admission that came
// sooner than estimated: 72 s at most with the ±20% spread, a quarter of the
// default entry token's life. Chosen with the spike simulator's tier sweep,
// against the previous "60:10000,10:5000,0:2000" (BENCHMARKS.md, "Poll
// tiers", has the requests per visitor of each).
const DefaultPollTiers = "0:60000"

// defaultTiers is DefaultPollTiers parsed: the table of a Config built
// without envconfig.Load.
var defaultTiers = func() PollTiers {
	t, err := ParsePollTiers(DefaultPollTiers)
	if err != nil {
		panic(err)
	}
	return t
}()

// ParsePollTiers reads "minWaitSeconds:pollMs,…" pairs in any order; one pair
// must start at 0, and a longer wait may not poll more often than a shorter one.
func ParsePollTiers(s string) (PollTiers, error) {
	var tiers PollTiers
	for _, pair := range strings.Split(s, ",") {
		w, ms, ok := strings.Cut(strings.TrimSpace(pair), ":")
		wait, errW := strconv.ParseInt(w, 10, 64)
		poll, errP := strconv.ParseInt(ms, 10, 64)
		if !ok || errW != nil || errP != nil || wait < 0 || poll < 100 || poll > 600_000 {
			return nil, fmt.Errorf("%q is not minWaitSeconds:pollMs with pollMs from 100 to 600000", pair)
		}
		tiers = append(tiers, PollTier{MinWaitSeconds: wait, PollMs: poll})
	}
	slices.SortFunc(tiers, func(a, b PollTier) int { return int(b.MinWaitSeconds - a.MinWaitSeconds) })
	for i := 1; i < len(tiers); i++ {
		if tiers[i].MinWaitSeconds == tiers[i-1].MinWaitSeconds {
			return nil, fmt.Errorf("two tiers start at %d s", tiers[i].MinWaitSeconds)
		}
		if tiers[i].PollMs > tiers[i-1].PollMs {
			return nil, fmt.Errorf("the tier from %d s polls less often than the one from %d s", tiers[i].MinWaitSeconds, tiers[i-1].MinWaitSeconds)
		}
	}
	if tiers[len(tiers)-1].MinWaitSeconds != 0 {
		return nil, fmt.Errorf("one tier must start at 0 s")
	}
	return tiers, nil
}

// String is the POLL_TIERS spelling of t.
func (t PollTiers) String() string {
	parts := make([]string, len(t))
	for i, tier := range t {
		parts[i] = fmt.Sprintf("%d:%d", tier.MinWaitSeconds, tier.PollMs)
	}
	return strings.Join(parts, ",")
}

// Ms picks the tier of an estimated wait and spreads it by ±20%; u is
// uniform in [0, 1). An empty table is the default one.
func (t PollTiers) Ms(waitSeconds int64, u float64) int64 {
	if len(t) == 0 {
		t = defaultTiers
	}
	base := t[len(t)-1].PollMs
	for _, tier := range t {
		if waitSeconds >= tier.MinWaitSeconds {
			base = tier.PollMs
			break
		}
	}
	return int64(math.Round(float64(base) * (1 - pollJitter + 2*pollJitter*u)))
}

// DurableWrites is DURABLE_WRITES: whether the order gate's writes wait
// for a replica before the gate goes on (docs/API.md, "Configuration";
// docs/design.md, "Failover").
type DurableWrites string

const (
	// DurableOff (the default): the gate's lock and commit are acknowledged
	// by the primary alone, as every other write; a failover may lose them.
	DurableOff DurableWrites = "off"
	// DurableWait: the gate's check and commit scripts are each followed,
	// in the same pipeline on the same connection, by WAIT 1: no order goes
	// downstream before its lock has reached a replica, and the gate answers
	// 503 when none acknowledged it within DurableWaitTimeout.
	DurableWait DurableWrites = "wait"
)

// DefaultDurableWrites is DURABLE_WRITES' default.
const DefaultDurableWrites = DurableOff

// DurableWaitTimeout is WAIT's timeout with DURABLE_WRITES=wait: well
// under the store client's 1 s read timeout, so that a missing replica
// is a clear refusal, not a timed-out connection.
const DurableWaitTimeout = 250 * time.Millisecond

// TrustConfig is how entry tokens are signed and how hard one caller may
// push (docs/API.md, "Configuration"; docs/security.md).
type TrustConfig struct {
	EntryTokens entrytoken.Keys // ENTRY_TOKEN_KEYS or ENTRY_TOKEN_PUBLIC_KEYS, ENTRY_TOKEN_ISSUER; not Enabled: opaque tokens
	Limits      Limits
	Streams     StreamCaps
}

// Limits are the shared abuse limiter's token buckets, per caller identity
// and per source IP, on enter, position, the event stream and orders. A
// rate of 0 turns that bucket off.
type Limits struct {
	ClientRatePerSec float64 // CLIENT_RATE_PER_SEC
	ClientBurst      int64   // CLIENT_BURST
	IPRatePerSec     float64 // IP_RATE_PER_SEC
	IPBurst          int64   // IP_BURST
	// New anonymous visitors per source address: charged only by an enter
	// that makes one (VISITOR_RATE_PER_SEC, VISITOR_BURST).
	VisitorRatePerSec float64
	VisitorBurst      int64
}

// Defaults of the limiter: a visitor polls about once a second at most
// (POLL_TIERS' nearest tier is 1 s), so 5 a second with a burst of 20 never
// bites a real client; one IP may hide a carrier NAT of thousands of
// phones, so its limit is a hundred times higher. They stop scripts, not
// crowds (a distributed flood is the WAF's and the queue's job).
const (
	DefaultClientRatePerSec = 5.0
	DefaultClientBurst      = 20
	DefaultIPRatePerSec     = 500.0
	DefaultIPBurst          = 2000
	DefaultEntryTokenIssuer = "waitroom"
	// New anonymous visitors per source address (VISITOR_*): a person
	// makes one, a household a few; a script that mints one per request
	// gets ten, then one a second.
	DefaultVisitorRatePerSec = 1.0
	DefaultVisitorBurst      = 10
)

// StreamCaps bound the local runner's open event streams (GET /queue/events,
// issue 19). The limiter counts connects, not how long they stay: each open
// stream holds a connection, its goroutines and buffers for up to 30
// minutes, so one host could otherwise keep thousands open.
type StreamCaps struct {
	PerIP int // STREAMS_PER_IP: at once per source address (IPv6: per /64); 0 turns it off
	Max   int // MAX_STREAMS: at once in the process
}

// Defaults of the stream caps: a household or an office opens a handful of
// tabs (one stream per room and identity), and 10,000 streams take about
// 0.4 GB and as many file descriptors (docs/design.md, "Live updates").
// StreamsMax bounds both: a million open streams is more memory and
// descriptors than one process should be asked to hold.
const (
	DefaultStreamsPerIP = 10
	DefaultMaxStreams   = 10_000
	StreamsMax          = 1_000_000
)

// VisitorConfig is how visitors without an account are let in, and where
// they go once admitted (docs/API.md, "Configuration").
type VisitorConfig struct {
	Anonymous bool          // ANONYMOUS_VISITORS: an enter without identity creates a visitor
	Tickets   TicketKeys    // TICKET_SECRET
	TicketTTL time.Duration // TICKET_TTL_SECONDS
	// TicketMaxAge (TICKET_MAX_AGE_SECONDS) ends a visitor's renewals: no
	// ticket lives past its visitor's first ticket plus this.
	TicketMaxAge time.Duration
	ContinueURL  string // CONTINUE_URL; "{entryToken}" is replaced with the visitor's token
	// ForwardHeaders are passed by the order gate to the order API besides
	// Authorization (ORDER_FORWARD_HEADERS, comma-separated names).
	ForwardHeaders []string
	// Challenge (CHALLENGE): with ChallengePoW an enter that would make a
	// visitor must carry a solved challenge of ChallengeBits (CHALLENGE_BITS).
	Challenge     ChallengeMode
	ChallengeBits int
}

// DefaultTicketTTLSeconds is long enough for a visitor who closes the tab to
// come back to their place within the hour, short enough that a copied
// ticket is worth little the next day. Every answer renews it, for at most
// DefaultTicketMaxAgeSeconds: no sale keeps anyone waiting a day, and a
// stolen ticket cannot be kept alive for ever by polling.
const (
	DefaultTicketTTLSeconds    = 3600
	DefaultTicketMaxAgeSeconds = 86400
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

// Intake is how enter puts a newcomer in line (INTAKE, docs/API.md).
type Intake string

const (
	// IntakeDirect writes every enter to the store at once (503 while it is down).
	IntakeDirect Intake = "direct"
	// IntakeBroker accepts every enter into the broker; the consumer applies it.
	IntakeBroker Intake = "broker"
	// IntakeFallback writes to the store, and accepts into the broker while
	// the store is unavailable.
	IntakeFallback Intake = "fallback"
)

// DefaultIntake is direct, as measured (make bench-intake,
// docs/bench/intake-results.json): with the store healthy, writing straight
// to it accepted more than twice as many enters a second as the broker, at a
// third of the median latency, costs nothing more and caps no room at SQS's
// 300 sends a second per message group. fallback is the setting to choose
// when a store outage must not cost a newcomer: it pays the broker only then.
const DefaultIntake = IntakeDirect

// pollJitter spreads a tier by ±20% so that users of one tier do not poll in step.
const pollJitter = 0.2
