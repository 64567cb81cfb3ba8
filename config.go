package waitroom

import (
	"log/slog"
	"math"
	"net/netip"
	"slices"
	"time"
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
// are defined here once: LoadConfig, the infra stack and its tests use them.
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

// Secret is a configuration value that must never reach a log: every way
// of printing it prints a placeholder.
type Secret string

const redacted = "[redacted]"

func (Secret) String() string               { return redacted }
func (Secret) GoString() string             { return redacted }
func (Secret) LogValue() slog.Value         { return slog.StringValue(redacted) }
func (Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }
