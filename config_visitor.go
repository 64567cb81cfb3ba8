package waitroom

import (
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
