package httpapi

import (
	"context"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
)

// receiptPosition answers position for the holder of a receipt: where they
// stand once the consumer has applied their entry, PROCESSING until then.
// The applied record tells an entry not yet applied (PROCESSING) from one
// applied and since gone from the line (NOT_IN_QUEUE) or refused (queue_full).
func (a *API) receiptPosition(ctx context.Context, req events.APIGatewayV2HTTPRequest, receipt string) outcome {
	e, err := a.Config.Visitor.Tickets.VerifyReceipt(receipt, a.now())
	if err != nil {
		return refused(err)
	}
	if room, ok := req.QueryStringParameters["room"]; ok && room != e.Room {
		return refused(waitroom.Errorf(waitroom.EInvalidReceipt, "this receipt is for another room"))
	}
	who, err := a.receiptHolder(req, e)
	if err != nil {
		return refused(err)
	}
	caller := AsCaller(who) // the limiter counts the entry's user
	st, err := withTimeout(ctx, a.storeTimeout(), func(ctx context.Context) (waitroom.Standing, error) {
		return a.Queue.Position(ctx, e.Room, caller)
	})
	if err != nil {
		return a.storeError(ctx, e.Room, err)
	}
	if st.Status != waitroom.NotInQueue || a.Applied == nil {
		return outcome{resp: a.standingResponse(e.Room, st, who)}
	}
	return a.appliedPosition(ctx, e, who, caller)
}

// receiptHolder is who asks with a receipt of e. The receipt proves an
// entry, not who holds it: a request that proves an identity must be the
// entry's (a visitor's ticket is then renewed as usual); one that proves
// none is answered for the entry.
func (a *API) receiptHolder(req events.APIGatewayV2HTTPRequest, e waitroom.Entry) (Identity, error) {
	address, err := a.address(req)
	if err != nil { // not through the front door, or no address to count it by
		return Identity{}, err
	}
	who, err := a.Identify(req, "")
	switch {
	case waitroom.ErrorCode(err) == waitroom.EForbidden: // a relayed X-User-Id
		return Identity{}, err
	case err == nil && who.User != e.User:
		return Identity{}, waitroom.Errorf(waitroom.EInvalidReceipt, "this receipt is not yours")
	case err != nil:
		who = byReceipt(e.User)
		who.Address = address
	}
	return who, nil
}

// appliedPosition answers the holder of e's receipt, whose entry is not in
// the line: not applied yet (PROCESSING), refused (queue_full), or applied
// and gone since.
func (a *API) appliedPosition(ctx context.Context, e waitroom.Entry, who Identity, caller waitroom.Caller) outcome {
	last, err := withTimeout(ctx, a.storeTimeout(), func(ctx context.Context) (lastApplied, error) {
		l, found, err := a.Applied.LastApplied(ctx, e.Room, e.User)
		return lastApplied{l, found}, err
	})
	switch {
	case err != nil:
		return a.storeError(ctx, e.Room, err)
	case !last.found || last.AcceptedAt.Before(e.AcceptedAt):
		return outcome{resp: a.intakeResponse(http.StatusOK, intakeBody{Status: waitroom.Processing}, who)}
	case last.Full:
		return refused(waitroom.Errorf(waitroom.EQueueFull, "the line of room %q was full when your entry came in; please retry later", e.Room))
	}
	// Applied, but perhaps between the two reads: the record and the place
	// are written by one script, so a standing read after the record is
	// current (in line, READY, or gone since).
	st, err := withTimeout(ctx, a.storeTimeout(), func(ctx context.Context) (waitroom.Standing, error) {
		return a.Queue.Position(ctx, e.Room, caller)
	})
	if err != nil {
		return a.storeError(ctx, e.Room, err)
	}
	return outcome{resp: a.standingResponse(e.Room, st, who)}
}

type lastApplied struct {
	waitroom.Applied
	found bool
}
