package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/metrics"
)

// The answers of enter and position: where the caller stands (with its
// entry token once READY), an entry the broker holds, a closed room; a
// ticketed visitor's answer carries its renewed ticket.

// standingBody is the answer of enter and position. pollAfterMs is always
// present: null tells the client to stop polling.
type standingBody struct {
	Status               waitroom.Status `json:"status"`
	Position             *int64          `json:"position,omitempty"`
	EstimatedWaitSeconds *int64          `json:"estimatedWaitSeconds,omitempty"`
	EntryToken           string          `json:"entryToken,omitempty"`
	ExpiresAt            string          `json:"expiresAt,omitempty"`
	OpensAt              string          `json:"opensAt,omitempty"`
	Paused               bool            `json:"paused,omitempty"`
	Message              string          `json:"message,omitempty"`
	PollAfterMs          *int64          `json:"pollAfterMs"`
	Number               int64           `json:"number,omitempty"`
	Ticket               string          `json:"ticket,omitempty"`
	Place                string          `json:"place,omitempty"`
	pageFields
}

// pageFields are the room's page settings, in enter's answers only (the
// page reads them once per load): absent when not set.
type pageFields struct {
	Title      string `json:"title,omitempty"`
	BrandColor string `json:"brandColor,omitempty"`
	LogoURL    string `json:"logoUrl,omitempty"`
	Language   string `json:"language,omitempty"`
}

func pageOf(p waitroom.Page) pageFields {
	return pageFields{Title: p.Title, BrandColor: p.BrandColor, LogoURL: p.LogoURL, Language: p.Language}
}

// closedBody is enter's refusal in a closed room: the error, the
// operator's message for people, and the room's page, so that the page
// shows the sold-out room in the shop's colours.
type closedBody struct {
	errorBody
	pageFields
}

// closedMessage is room_closed's message when the operator left none.
const closedMessage = "this room is closed: nobody can join its line any more"

func closedResponse(st waitroom.Standing) events.APIGatewayV2HTTPResponse {
	msg := st.Message
	if msg == "" {
		msg = closedMessage
	}
	return jsonResponse(http.StatusForbidden, closedBody{errorBody{Error: waitroom.ERoomClosed, Message: msg}, pageOf(st.Page)})
}

// entered answers an enter into room's line: where who stands (counted as
// an entry, or as an instant admission), or why not.
func (a *API) entered(ctx context.Context, room string, who Identity, st waitroom.Standing, err error) outcome {
	switch code := waitroom.ErrorCode(err); {
	case code == waitroom.EQueueFull:
		return outcome{resp: ErrorResponse(err), counts: []counted{{room, ones(metrics.QueueFull)}}}
	case code == waitroom.EChallengeRequired: // a replayed solution
		return refused(a.challengeRequired(room, err))
	case err != nil:
		return a.storeError(ctx, room, err)
	case st.Status == waitroom.Closed:
		return outcome{resp: closedResponse(st)}
	}
	o := outcome{resp: a.standingResponse(room, st, who)}
	switch {
	case st.AdmittedNow: // instant admission: entered and admitted, having waited for nothing
		o.counts = []counted{{room, metrics.InstantAdmission()}}
	case st.Joined:
		o.counts = []counted{{room, ones(metrics.Entered)}}
	}
	return o
}

// standingResponse answers enter and position in room; a ticketed
// visitor's answer carries a renewed ticket, in the body and as the
// cookie, with its spot while it waits; an account's, its signed place.
func (a *API) standingResponse(roomName string, st waitroom.Standing, who Identity) events.APIGatewayV2HTTPResponse {
	body := standingBody{Status: st.Status, Message: st.Message, pageFields: pageOf(st.Page)}
	if st.Status == waitroom.Waiting {
		body.Number = st.Number
	}
	room := a.Config.ForRoom(st)
	spot := a.spotOf(roomName, st, who)
	var cookie string
	if who.Ticketed() {
		body.Ticket, cookie = a.Ticket(who, st.Status, spot)
	} else if spot.Number > 0 {
		body.Place, cookie = a.signPlace(who, spot)
	}
	switch st.Status {
	case waitroom.Waiting:
		wait := room.EstimatedWaitSeconds(st.Position)
		poll := room.PollAfterMs(st.Position, a.random())
		if st.Paused || st.Stalled { // nothing moves: no polling at the turn
			poll = room.FarPollMs(a.random())
		}
		body.Position, body.EstimatedWaitSeconds, body.PollAfterMs, body.Paused = &st.Position, &wait, &poll, st.Paused
	case waitroom.PreQueue:
		poll := room.PreQueuePollMs(time.Until(st.OpensAt), a.random())
		body.OpensAt, body.PollAfterMs, body.Paused = st.OpensAt.UTC().Format(time.RFC3339Nano), &poll, st.Paused
	case waitroom.Ready:
		body.EntryToken = a.signedToken(st, who)
		body.ExpiresAt = st.ExpiresAt.UTC().Format(time.RFC3339)
	}
	resp := jsonResponse(http.StatusOK, body)
	if cookie != "" {
		resp.Cookies = []string{cookie}
	}
	return resp
}

// StandingAnswer is the answer position would give for st in room: the
// same JSON body, with a renewed ticket and its cookie for ticketed visitors.
func (a *API) StandingAnswer(room string, st waitroom.Standing, who Identity) events.APIGatewayV2HTTPResponse {
	return a.standingResponse(room, st, who)
}

// spotOf is the spot who's credential carries after st in room: its number
// while it waits (with the time it was first signed, which View checks
// against the line's start) and once admitted (a failover that loses its
// token lets it claim its turn again with it: redisstore's claim.lua),
// else what it carried for another room.
func (a *API) spotOf(room string, st waitroom.Standing, who Identity) waitroom.Spot {
	held := who.Spot.In(room)
	placed := st.Status == waitroom.Waiting || st.Status == waitroom.Ready
	switch {
	case placed && st.Number > 0 && !(held && st.Number == who.Spot.Number):
		return waitroom.Spot{Room: room, Number: st.Number, At: a.now()}
	case placed && held:
		return who.Spot
	case held:
		return waitroom.Spot{} // the line is gone
	case st.Status != waitroom.Waiting:
		return who.Spot
	}
	return waitroom.Spot{}
}

// signPlace signs an account's spot for its answer and the wr_place cookie,
// for as long as a ticket would live; none without a ticket key.
func (a *API) signPlace(who Identity, spot waitroom.Spot) (place, setCookie string) {
	now := a.now()
	exp := now.Add(a.ticketTTL())
	p, err := a.Config.Visitor.Tickets.SignPlace(who.User, spot, exp)
	if err != nil { // no ticket key: the account's polls ask the store
		return "", ""
	}
	return p, waitroom.PlaceSetCookie(p, exp, now)
}

// ProcessingPollMs is when a visitor whose entry the broker holds asks
// again: the consumer's store side applies about 10,000 entries a second
// (make bench-intake), so a visitor rarely sees PROCESSING twice.
const ProcessingPollMs int64 = 1000

// intakeBody is the answer of an accepted entry (enter, 202) and of one not
// yet applied (position, 200).
type intakeBody struct {
	Status      waitroom.Status `json:"status"`
	Receipt     string          `json:"receipt,omitempty"`
	PollAfterMs int64           `json:"pollAfterMs"`
	Ticket      string          `json:"ticket,omitempty"`
}

// intakeResponse answers an entry the broker holds.
func (a *API) intakeResponse(status int, body intakeBody, who Identity) events.APIGatewayV2HTTPResponse {
	var cookie string
	body.Ticket, cookie = a.Ticket(who, body.Status, who.Spot)
	body.PollAfterMs = ProcessingPollMs
	resp := jsonResponse(status, body)
	if cookie != "" {
		resp.Cookies = []string{cookie}
	}
	return resp
}

// Ticket returns a renewed ticket for who, carrying spot, and its Set-Cookie value, or
// empty strings when there is none to give: who is not a visitor, neither
// waits nor holds a token (status NOT_IN_QUEUE or CLOSED: nothing is kept for it), or
// is as old as TICKET_MAX_AGE_SECONDS. No renewal outlives the visitor's
// first ticket plus that age.
func (a *API) Ticket(who Identity, status waitroom.Status, spot waitroom.Spot) (ticket, setCookie string) {
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
	t, err := a.Config.Visitor.Tickets.Sign(who.ID, issued, exp, spot)
	if err != nil { // only visitor ids this package made are ticketed
		return "", ""
	}
	return t, waitroom.TicketSetCookie(t, exp, now)
}
