package httpapi

import (
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
)

// Ticket returns a renewed ticket for who and its Set-Cookie value, or
// empty strings when there is none to give: who is not a visitor, neither
// waits nor holds a token (status NOT_IN_QUEUE or CLOSED: nothing is kept for it), or
// is as old as TICKET_MAX_AGE_SECONDS. No renewal outlives the visitor's
// first ticket plus that age.
func (a *API) Ticket(who Identity, status waitroom.Status) (ticket, setCookie string) {
	if !who.Ticketed() || status == waitroom.NotInQueue || status == waitroom.Closed {
		return "", ""
	}
	now := a.now()
	issued := who.TicketIssued
	if issued.IsZero() { // a new visitor
		issued = now
	}
	exp := now.Add(a.ticketTTL())
	if last := issued.Add(a.ticketMaxAge()); last.Before(exp) {
		exp = last
	}
	if !exp.After(now) {
		return "", ""
	}
	t, err := a.Config.Visitor.Tickets.Sign(who.ID, issued, exp)
	if err != nil { // only visitor ids this package made are ticketed
		return "", ""
	}
	return t, waitroom.TicketSetCookie(t, exp, now)
}

// Caller is who sends a position-like request (the live stream) and its room.
func (a *API) Caller(req events.APIGatewayV2HTTPRequest) (Identity, string, error) {
	return a.caller(req, false)
}

// StandingAnswer is the answer position would give for st: the same JSON
// body, with a renewed ticket and its cookie for ticketed visitors.
func (a *API) StandingAnswer(st waitroom.Standing, who Identity) events.APIGatewayV2HTTPResponse {
	return a.standingResponse(st, who)
}

// forwardHeaders are the caller's headers the order API sees besides the
// gate's own: Authorization, so that the shop can still authenticate the
// buyer, and those the operator lists in ORDER_FORWARD_HEADERS.
func (a *API) forwardHeaders(req events.APIGatewayV2HTTPRequest) http.Header {
	h := http.Header{}
	for _, name := range append([]string{"Authorization"}, a.Config.Visitor.ForwardHeaders...) {
		if v, ok := lookupHeader(req, name); ok {
			h.Set(name, v)
		}
	}
	return h
}

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
