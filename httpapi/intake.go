package httpapi

import (
	"context"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/metrics"
)

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

// accept hands who's entry to the broker and answers 202 with the signed
// receipt of it. With check, the room and the limiter are asked first, in
// one store call, as enter asks them (an unknown room or a caller over its
// limit is refused, nothing sent); a store that does not answer then lets
// the entry through, counted as the limiter failing open: the broker is
// there so that an outage loses no newcomer. Fallback, which comes here
// because the store failed, does not ask again.
func (a *API) accept(ctx context.Context, room string, who Identity, check bool) events.APIGatewayV2HTTPResponse {
	if a.Broker == nil {
		return ErrorResponse(waitroom.Unavailable(nil))
	}
	if check {
		_, err := withTimeout(ctx, a.storeTimeout(), func(ctx context.Context) (struct{}, error) {
			return struct{}{}, a.Queue.Admissible(ctx, room, AsCaller(who))
		})
		switch code := waitroom.ErrorCode(err); {
		case code == waitroom.EUnavailable:
			a.limiterFailedOpen(ctx, room)
		case code == waitroom.EChallengeRequired: // a replayed solution
			return ErrorResponse(a.challengeRequired(room, err))
		case a.rateLimited(room, err), err != nil:
			return ErrorResponse(err)
		}
	}
	e := waitroom.Entry{Room: room, User: who.User, AcceptedAt: a.now()}
	receipt, err := a.Config.Visitor.Tickets.SignReceipt(e, e.AcceptedAt.Add(a.ticketTTL()))
	if err != nil {
		return ErrorResponse(err) // a missing key is a configuration bug: 500
	}
	if _, err := withTimeout(ctx, a.storeTimeout(), func(ctx context.Context) (struct{}, error) {
		return struct{}{}, a.Broker.Send(ctx, e)
	}); err != nil {
		return a.storeError(ctx, room, err)
	}
	a.Metrics.Record(room, metrics.Of(metrics.Accepted, metrics.Count, 1))
	return a.intakeResponse(http.StatusAccepted, intakeBody{Status: waitroom.Accepted, Receipt: receipt}, who)
}

// receiptPosition answers position for the holder of a receipt: where they
// stand once the consumer has applied their entry, PROCESSING until then.
// The applied record tells an entry not yet applied (PROCESSING) from one
// applied and since gone from the line (NOT_IN_QUEUE) or refused (queue_full).
func (a *API) receiptPosition(ctx context.Context, req events.APIGatewayV2HTTPRequest, receipt string) events.APIGatewayV2HTTPResponse {
	e, err := a.Config.Visitor.Tickets.VerifyReceipt(receipt, a.now())
	if err != nil {
		return ErrorResponse(err)
	}
	if room, ok := req.QueryStringParameters["room"]; ok && room != e.Room {
		return ErrorResponse(waitroom.Errorf(waitroom.EInvalidReceipt, "this receipt is for another room"))
	}
	// The receipt proves an entry, not who holds it: a request that proves
	// an identity must be the entry's (a visitor's ticket is then renewed
	// as usual); one that proves none is answered for the entry.
	address, err := a.address(req)
	if err != nil { // not through the front door, or no address to count it by
		return ErrorResponse(err)
	}
	who, err := a.Identify(req, "")
	switch {
	case waitroom.ErrorCode(err) == waitroom.EForbidden: // a relayed X-User-Id
		return ErrorResponse(err)
	case err == nil && who.User != e.User:
		return ErrorResponse(waitroom.Errorf(waitroom.EInvalidReceipt, "this receipt is not yours"))
	case err != nil:
		who = byReceipt(e.User)
		who.Address = address
	}
	caller := AsCaller(who) // the limiter counts the entry's user
	st, err := withTimeout(ctx, a.storeTimeout(), func(ctx context.Context) (waitroom.Standing, error) {
		return a.Queue.Position(ctx, e.Room, caller)
	})
	if err != nil {
		return a.storeError(ctx, e.Room, err)
	}
	if st.Status != waitroom.NotInQueue || a.Applied == nil {
		return a.standingResponse(st, who)
	}
	last, err := withTimeout(ctx, a.storeTimeout(), func(ctx context.Context) (lastApplied, error) {
		l, found, err := a.Applied.LastApplied(ctx, e.Room, e.User)
		return lastApplied{l, found}, err
	})
	switch {
	case err != nil:
		return a.storeError(ctx, e.Room, err)
	case !last.found || last.AcceptedAt.Before(e.AcceptedAt):
		return a.intakeResponse(http.StatusOK, intakeBody{Status: waitroom.Processing}, who)
	case last.Full:
		return ErrorResponse(waitroom.Errorf(waitroom.EQueueFull, "the line of room %q was full when your entry came in; please retry later", e.Room))
	}
	// Applied, but perhaps between the two reads: the record and the place
	// are written by one script, so a standing read after the record is
	// current (in line, READY, or gone since).
	st, err = withTimeout(ctx, a.storeTimeout(), func(ctx context.Context) (waitroom.Standing, error) {
		return a.Queue.Position(ctx, e.Room, caller)
	})
	if err != nil {
		return a.storeError(ctx, e.Room, err)
	}
	return a.standingResponse(st, who)
}

type lastApplied struct {
	waitroom.Applied
	found bool
}

func (a *API) intakeResponse(status int, body intakeBody, who Identity) events.APIGatewayV2HTTPResponse {
	var cookie string
	body.Ticket, cookie = a.Ticket(who, body.Status)
	body.PollAfterMs = ProcessingPollMs
	resp := jsonResponse(status, body)
	if cookie != "" {
		resp.Cookies = []string{cookie}
	}
	return resp
}
