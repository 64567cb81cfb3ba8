package httpapi

import (
	"time"

	"github.com/waitroom/waitroom"
)

// ticketTTL is TICKET_TTL_SECONDS, or its default for a Config built by hand.
func (a *API) ticketTTL() time.Duration {
	if a.Config.Visitor.TicketTTL > 0 {
		return a.Config.Visitor.TicketTTL
	}
	return waitroom.DefaultTicketTTLSeconds * time.Second
}

// ticketMaxAge is TICKET_MAX_AGE_SECONDS, or its default for a Config built by hand.
func (a *API) ticketMaxAge() time.Duration {
	if a.Config.Visitor.TicketMaxAge > 0 {
		return a.Config.Visitor.TicketMaxAge
	}
	return waitroom.DefaultTicketMaxAgeSeconds * time.Second
}

// StreamLife is how long a live stream may stay open: at most half the
// ticket's lifetime, so that the cookie set when it opened outlives it.
func (a *API) StreamLife(limit time.Duration) time.Duration {
	return min(limit, a.ticketTTL()/2)
}

func (a *API) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}
