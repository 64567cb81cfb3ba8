package waitroom

import (
	"net/http"
	"strings"
	"time"
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

// unforwardable headers describe this hop, not the buyer, or are set by the
// gate itself (the user id must come from the gate, never from the caller).
var unforwardable = map[string]bool{"Connection": true, "Content-Length": true, "Host": true, "Transfer-Encoding": true,
	"Upgrade": true, "Te": true, "Trailer": true, "Keep-Alive": true, "Proxy-Authorization": true, "Proxy-Connection": true,
	"X-User-Id": true, "Idempotency-Key": true, "Content-Type": true, "Cookie": true,
	"X-Waitroom-Room": true, "X-Waitroom-User": true, "X-Waitroom-Token-Id": true}

func (r *envReader) visitors(d Defaults) VisitorConfig {
	v := VisitorConfig{
		Anonymous:    r.boolean("ANONYMOUS_VISITORS", d.AnonymousVisitors),
		TicketTTL:    time.Duration(r.integer("TICKET_TTL_SECONDS", DefaultTicketTTLSeconds, 60, 7*86_400)) * time.Second,
		TicketMaxAge: time.Duration(r.integer("TICKET_MAX_AGE_SECONDS", DefaultTicketMaxAgeSeconds, 60, 30*86_400)) * time.Second,
		ContinueURL:  r.str("CONTINUE_URL", ""),
	}
	v.Challenge, v.ChallengeBits = r.challenge(v.Anonymous)
	keys, err := ParseTicketKeys(r.str("TICKET_SECRET", ""))
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
		case unforwardable[name] || !printable(name, 64) || strings.ContainsAny(name, " :"):
			r.fail("ORDER_FORWARD_HEADERS", "names a header that cannot be forwarded: "+name)
		default:
			v.ForwardHeaders = append(v.ForwardHeaders, name)
		}
	}
	return v
}
