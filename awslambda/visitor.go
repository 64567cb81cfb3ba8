package awslambda

import (
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
)

// Identity is who a request comes from, and whether the answer renews the
// visitor's queue ticket.
type Identity struct {
	User string
	// Ticketed: known by a queue ticket, or a visitor created just now. Only
	// these get tickets: a ticket for a signed-in user would outlive the
	// sign-in it came from.
	Ticketed bool
}

// Identify finds the caller in the order docs/API.md gives: JWT claim sub,
// Lambda authorizer userId, X-User-Id when trusted, then the queue ticket
// (X-Queue-Ticket header, else the wr_ticket cookie). With none of them and
// create set (enter only), anonymous visitors on, a new visitor is made. A
// ticket that does not verify is an invalid_ticket error and creates nothing.
func (a *API) Identify(req events.APIGatewayV2HTTPRequest, create bool) (Identity, error) {
	id, err := a.userID(req)
	if waitroom.ErrorCode(err) != waitroom.EUnauthenticated {
		return Identity{User: id}, err
	}
	v := a.Config.Visitor
	if t, ok := ticketOf(req); ok {
		user, verr := v.Tickets.Verify(t, a.now())
		if verr != nil {
			return Identity{}, verr
		}
		return Identity{User: user, Ticketed: true}, nil
	}
	if !create || !v.Anonymous || !v.Tickets.Enabled() {
		return Identity{}, err
	}
	user, gerr := waitroom.NewVisitorID()
	if gerr != nil {
		return Identity{}, waitroom.Unavailable(gerr)
	}
	return Identity{User: user, Ticketed: true}, nil
}

// ticketOf returns the ticket a request carries: the header wins over the
// cookie, because a page that holds a newer ticket than its cookie sends it.
func ticketOf(req events.APIGatewayV2HTTPRequest) (string, bool) {
	if t, ok := lookupHeader(req, waitroom.TicketHeader); ok && t != "" {
		return t, true
	}
	cookies := req.Cookies
	if len(cookies) == 0 { // hosts that leave the Cookie header alone
		cookies = strings.Split(header(req, "Cookie"), ";")
	}
	for _, c := range cookies {
		name, value, _ := strings.Cut(strings.TrimSpace(c), "=")
		if name == waitroom.TicketCookie && value != "" {
			return value, true
		}
	}
	return "", false
}

// Ticket returns a renewed ticket for who and its Set-Cookie value, or
// empty strings when who is not ticketed.
func (a *API) Ticket(who Identity) (ticket, setCookie string) {
	if !who.Ticketed {
		return "", ""
	}
	now := a.now()
	exp := now.Add(a.ticketTTL())
	t, err := a.Config.Visitor.Tickets.Sign(who.User, exp)
	if err != nil { // only visitor ids this package made are ticketed
		return "", ""
	}
	return t, waitroom.TicketSetCookie(t, exp, now)
}

// CallerError answers a request whose caller or room is not acceptable; an
// invalid ticket also clears the cookie, so that the page's rejoin starts
// afresh.
func CallerError(err error) events.APIGatewayV2HTTPResponse {
	resp := errorResponse(err)
	if waitroom.ErrorCode(err) == waitroom.EInvalidTicket {
		resp.Cookies = append(resp.Cookies, waitroom.TicketClearCookie())
	}
	return resp
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
