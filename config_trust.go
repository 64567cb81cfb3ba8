package waitroom

import "github.com/waitroom/waitroom/entrytoken"

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
