// Package envconfig reads the environment: every variable of docs/API.md's
// "Configuration" table, once, at a process's start, into a typed
// waitroom.Config. It is the only place that reads the environment; the
// functions' mains, the local runner and the tools call Load.
package envconfig

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom"
)

// Defaults says which values a process may leave unset.
type Defaults struct {
	RequireRedisURL      bool
	RequireOrderAPIURL   bool
	TrustUserHeader      bool
	AnonymousVisitors    bool // ANONYMOUS_VISITORS' default
	GenerateTicketSecret bool // an unset TICKET_SECRET is generated at start
	OpenRooms            bool // OPEN_ROOMS' default
	// LoopbackTrust: a process that listens on ADDR (the local runner) may
	// believe X-User-Id without PROXY_SECRET while ADDR is loopback only,
	// where nothing but this machine can send it.
	LoopbackTrust bool
	// SignsEntryTokens: the process answers READY with a signed entry
	// token, so ENTRY_TOKEN_PUBLIC_KEYS (which only verifies) will not do.
	SignsEntryTokens bool
}

// Function is the Lambda functions' defaults: a store is required.
var Function = Defaults{RequireRedisURL: true}

// Signing is enter's and position's: they answer READY, so with
// signed entry tokens they need the seed (ENTRY_TOKEN_KEYS).
var Signing = Defaults{RequireRedisURL: true, SignsEntryTokens: true}

// OrderGate is the order gate's: it also needs the order API. It
// only verifies entry tokens (ENTRY_TOKEN_PUBLIC_KEYS is enough).
var OrderGate = Defaults{RequireRedisURL: true, RequireOrderAPIURL: true}

// Local is the local runner's: embedded store, demo order API,
// trusted header, any room name.
var Local = Defaults{TrustUserHeader: true, AnonymousVisitors: true, GenerateTicketSecret: true, OpenRooms: true, LoopbackTrust: true,
	SignsEntryTokens: true}

// FromEnv reads and validates the process's environment: the one read of
// it, which the functions' wiring and the local runner make at start.
func FromEnv(d Defaults) (waitroom.Config, error) { return Load(os.LookupEnv, d) }

// Load reads and validates the configuration from lookup (FromEnv passes
// os.LookupEnv; tests a map). The error names the offending variable.
func Load(lookup func(string) (string, bool), d Defaults) (waitroom.Config, error) {
	return loadConfig(envReader{lookup: lookup}, d)
}

func loadConfig(r envReader, d Defaults) (waitroom.Config, error) {
	c := waitroom.Config{
		RedisURL:         r.str("REDIS_URL", ""),
		RedisCluster:     r.boolean("REDIS_CLUSTER", false),
		RedisIAM:         r.redisIAM(),
		AdmitRatePerSec:  r.float("ADMIT_RATE_PER_SEC", waitroom.DefaultAdmitRatePerSec, 0.001, 1e6),
		AdmitInterval:    time.Duration(r.integer("ADMIT_INTERVAL_MS", waitroom.DefaultAdmitIntervalMs, 10, 60_000)) * time.Millisecond,
		AdmitBatches:     int(r.integer("ADMIT_BATCHES", waitroom.DefaultAdmitBatches, 1, 100_000)),
		EntryTokenTTL:    time.Duration(r.integer("ENTRY_TOKEN_TTL_SECONDS", waitroom.DefaultEntryTokenTTLSeconds, 1, 86_400)) * time.Second,
		QueueCapacity:    r.integer("QUEUE_CAPACITY", waitroom.DefaultQueueCapacity, 1, 1e9),
		OrderAPIURL:      r.str("ORDER_API_URL", ""),
		OrderTimeout:     time.Duration(r.integer("ORDER_TIMEOUT_MS", waitroom.DefaultOrderTimeoutMs, 1, 900_000)) * time.Millisecond,
		OrderRooms:       r.orderRooms("ORDER_ROOMS"),
		TrustUserHeader:  r.boolean("TRUST_USER_HEADER", d.TrustUserHeader),
		ProxySecret:      r.secret("PROXY_SECRET"),
		OriginSecret:     r.secret("ORIGIN_SECRET"),
		TrustedProxies:   r.prefixes("TRUSTED_PROXIES"),
		FailOpenOrders:   r.boolean("ORDER_GATE_FAIL_OPEN", false),
		Addr:             r.str("ADDR", waitroom.DefaultAddr),
		PollTiers:        r.pollTiers("POLL_TIERS"),
		Visitor:          r.visitors(d),
		OpenRooms:        r.boolean("OPEN_ROOMS", d.OpenRooms),
		InstantAdmit:     r.boolean("INSTANT_ADMIT", true),
		AdminToken:       r.secret("ADMIN_TOKEN"),
		Intake:           r.intake(),
		IntakeQueueURL:   r.str("INTAKE_QUEUE_URL", ""),
		Trust:            r.trust(d),
		PageImageOrigins: r.imageOrigins("PAGE_IMAGE_ORIGINS"),
		DurableWrites:    r.durableWrites(),
		OrderRecord:      r.orderRecord(),
	}
	r.intakeNeeds(c, d)
	r.durableNeeds(c)
	r.storeNeeds(c, d)
	r.trustNeeds(c, d)
	r.orderNeeds(c, d)
	if r.err != nil {
		return waitroom.Config{}, r.err
	}
	return c, nil
}

// storeNeeds checks the store's variables together: where the store is,
// and how the functions authenticate to it.
func (r *envReader) storeNeeds(c waitroom.Config, d Defaults) {
	if c.RedisURL == "" && d.RequireRedisURL {
		r.fail("REDIS_URL", "is required (redis://host:port or rediss://host:port)")
	}
	if c.RedisURL != "" {
		r.url("REDIS_URL", c.RedisURL, "redis", "rediss")
	}
	if c.RedisIAM.Enabled() {
		r.iamURL(c.RedisURL)
	}
}

// trustNeeds checks who is believed: X-User-Id only with a secret (or from
// this machine alone), and one source of the client's address.
func (r *envReader) trustNeeds(c waitroom.Config, d Defaults) {
	if c.ProxySecret != "" && !c.TrustUserHeader {
		r.fail("PROXY_SECRET", "is set but TRUST_USER_HEADER is not true: it would guard nothing")
	}
	if c.TrustUserHeader && c.ProxySecret == "" && !(d.LoopbackTrust && loopbackOnly(c.Addr)) {
		// Anyone who can reach the process could then name any user.
		r.fail("TRUST_USER_HEADER", fmt.Sprintf("is true without PROXY_SECRET: X-User-Id would be believed from anyone who reaches %s; set PROXY_SECRET to the secret your proxy sends, or TRUST_USER_HEADER=false", trustScope(d, c.Addr)))
	}
	if len(c.TrustedProxies) > 0 && c.OriginSecret != "" {
		r.fail("TRUSTED_PROXIES", "is set with ORIGIN_SECRET: behind CloudFront the client is CloudFront-Viewer-Address; set one")
	}
}

// orderNeeds checks the order API's URL and the runner's listen address.
func (r *envReader) orderNeeds(c waitroom.Config, d Defaults) {
	if c.OrderAPIURL == "" && d.RequireOrderAPIURL {
		r.fail("ORDER_API_URL", "is required")
	}
	if c.OrderAPIURL != "" {
		r.url("ORDER_API_URL", c.OrderAPIURL, "http", "https")
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		r.fail("ADDR", fmt.Sprintf("%q is not host:port", c.Addr))
	}
}

// loopbackOnly reports whether addr accepts connections from this machine
// alone: localhost or a loopback address, never all interfaces.
func loopbackOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func trustScope(d Defaults, addr string) string {
	if d.LoopbackTrust {
		return "ADDR " + addr
	}
	return "the function"
}

type envReader struct {
	lookup func(string) (string, bool)
	err    error
	// specs, when set, records every variable read with its default and
	// range as docs/API.md writes them (TestVariablesTableMatchesCode).
	specs map[string][]varSpec
}

// varSpec is what the code says of a variable: its default ("" for none)
// and, for a number, its bounds.
type varSpec struct{ def, min, max string }

func (r *envReader) note(name, def, min, max string) {
	if r.specs != nil {
		r.specs[name] = append(r.specs[name], varSpec{def, min, max})
	}
}

// raw is a variable's value, trimmed ("" when unset).
func (r *envReader) raw(name string) string {
	v, _ := r.lookup(name)
	return strings.TrimSpace(v)
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func (r *envReader) fail(name, msg string) {
	if r.err == nil {
		r.err = fmt.Errorf("config: %s %s", name, msg)
	}
}

func (r *envReader) str(name, def string) string {
	r.note(name, def, "", "")
	if v := r.raw(name); v != "" {
		return v
	}
	return def
}

func (r *envReader) integer(name string, def, min, max int64) int64 {
	r.note(name, strconv.FormatInt(def, 10), strconv.FormatInt(min, 10), strconv.FormatInt(max, 10))
	s := r.raw(name)
	if s == "" {
		return def
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < min || v > max {
		r.fail(name, fmt.Sprintf("must be a whole number from %d to %d, got %q", min, max, s))
		return def
	}
	return v
}

func (r *envReader) float(name string, def, min, max float64) float64 {
	r.note(name, num(def), num(min), num(max))
	s := r.raw(name)
	if s == "" {
		return def
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || v < min || v > max {
		r.fail(name, fmt.Sprintf("must be a number from %g to %g, got %q", min, max, s))
		return def
	}
	return v
}

func (r *envReader) boolean(name string, def bool) bool {
	r.note(name, strconv.FormatBool(def), "", "")
	s := r.raw(name)
	if s == "" {
		return def
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		r.fail(name, fmt.Sprintf("must be true or false, got %q", s))
		return def
	}
	return v
}

// imageOrigins reads a comma-separated list of https origins
// (https://host or https://host:port, nothing after it), lower-cased.
func (r *envReader) imageOrigins(name string) []string {
	var out []string
	for _, o := range strings.Split(r.str(name, ""), ",") {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		origin, err := waitroom.ImageOrigin(o)
		if err != nil || !strings.EqualFold(origin, strings.TrimSuffix(o, "/")) {
			r.fail(name, fmt.Sprintf("names %q, which is not an https origin (https://host or https://host:port)", o))
			continue
		}
		out = append(out, origin)
	}
	return out
}

// prefixes reads a comma-separated list of CIDRs or addresses (one
// address: its /32 or /128), masked. A prefix of length 0 is refused: it
// would trust every peer, and any client could name its own address.
func (r *envReader) prefixes(name string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range strings.Split(r.str(name, ""), ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		a, aerr := netip.ParseAddr(s)
		if aerr == nil {
			p, err = a.Unmap().Prefix(a.Unmap().BitLen())
		}
		switch {
		case err != nil || a.Zone() != "":
			r.fail(name, fmt.Sprintf("names %q, which is neither a CIDR (10.0.0.0/8, fd00::/8) nor an IP address", s))
		case p.Bits() == 0:
			r.fail(name, fmt.Sprintf("names %q, which trusts every address: any client could then name its own", s))
		default:
			out = append(out, p.Masked())
		}
	}
	return out
}

// rooms reads a comma-separated list of room names.
func (r *envReader) rooms(name string) []string {
	var out []string
	for _, room := range strings.Split(r.str(name, ""), ",") {
		switch room = strings.TrimSpace(room); {
		case room == "":
		case !waitroom.ValidRoom(room):
			r.fail(name, fmt.Sprintf("names %q, which is not a room (^[a-z0-9][a-z0-9-]{0,63}$)", room))
		default:
			out = append(out, room)
		}
	}
	return out
}

// orderRooms reads ORDER_ROOMS: a list of rooms, or * alone.
func (r *envReader) orderRooms(name string) []string {
	names := strings.Split(strings.ReplaceAll(r.raw(name), " ", ""), ",")
	switch {
	case len(names) == 1 && names[0] == waitroom.AnyRoom:
		r.note(name, "", "", "")
		return []string{waitroom.AnyRoom}
	case slices.Contains(names, waitroom.AnyRoom):
		r.fail(name, "names * (every room) with other rooms: set * alone, or the rooms")
	}
	return r.rooms(name)
}

func (r *envReader) pollTiers(name string) waitroom.PollTiers {
	t, err := waitroom.ParsePollTiers(r.str(name, waitroom.DefaultPollTiers))
	if err != nil {
		r.fail(name, err.Error())
		return nil
	}
	return t
}

func (r *envReader) url(name, raw string, schemes ...string) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		r.fail(name, fmt.Sprintf("%q is not a URL", raw))
		return
	}
	for _, s := range schemes {
		if u.Scheme == s {
			return
		}
	}
	r.fail(name, fmt.Sprintf("%q must use one of the schemes %s", raw, strings.Join(schemes, ", ")))
}

const iamNameMax = 40

func (r *envReader) redisIAM() waitroom.RedisIAM {
	i := waitroom.RedisIAM{User: r.str("REDIS_IAM_USER", ""), CacheName: r.str("REDIS_IAM_CACHE_NAME", "")}
	if !i.Enabled() {
		for _, name := range []string{"REDIS_IAM_CACHE_NAME", "REDIS_IAM_SERVERLESS"} {
			if r.str(name, "") != "" {
				r.fail(name, "is set but REDIS_IAM_USER is not: set both to use IAM authentication")
			}
		}
		return waitroom.RedisIAM{}
	}
	i.Serverless = r.boolean("REDIS_IAM_SERVERLESS", true)
	if len(i.User) > iamNameMax || !iamUserPattern.MatchString(i.User) {
		r.fail("REDIS_IAM_USER", fmt.Sprintf("%q is not an ElastiCache user id (a letter, then letters, digits and single hyphens, at most %d)", i.User, iamNameMax))
	}
	switch {
	case i.CacheName == "":
		r.fail("REDIS_IAM_CACHE_NAME", "is required with REDIS_IAM_USER (the serverless cache name or replication group id)")
	case len(i.CacheName) > iamNameMax || !iamCachePattern.MatchString(i.CacheName):
		r.fail("REDIS_IAM_CACHE_NAME", fmt.Sprintf("%q is not an ElastiCache cache name (lowercase letters, digits and single hyphens, at most %d)", i.CacheName, iamNameMax))
	}
	return i
}

// iamURL checks REDIS_URL for IAM authentication: ElastiCache accepts IAM
// only over TLS, and a password in the URL would never be used.
func (r *envReader) iamURL(raw string) {
	u, err := url.Parse(raw)
	if err != nil {
		return // reported as REDIS_URL already
	}
	if u.Scheme != "rediss" {
		r.fail("REDIS_URL", "must use rediss:// with REDIS_IAM_USER: ElastiCache accepts IAM authentication only over TLS")
	}
	if u.User != nil {
		r.fail("REDIS_URL", "must not carry a user or password with REDIS_IAM_USER: the IAM token is the password")
	}
}

// secret reads PROXY_SECRET or ADMIN_TOKEN.
func (r *envReader) secret(name string) waitroom.Secret {
	r.note(name, "", "", "")
	v, _ := r.lookup(name)
	if v == "" {
		return ""
	}
	if len(v) < secretMin || len(v) > secretMax || strings.IndexFunc(v, func(c rune) bool { return c <= ' ' || c > '~' }) >= 0 {
		// The message never repeats the value.
		r.fail(name, fmt.Sprintf("must be %d to %d visible ASCII characters without spaces", secretMin, secretMax))
		return ""
	}
	return waitroom.Secret(v)
}
