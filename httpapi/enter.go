package httpapi

import (
	"context"
	"net/http"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/metrics"
)

// enter takes who's place in room's line (Queue.Enter), or, with INTAKE
// broker, hands the entry to the broker (accept); with INTAKE fallback, a
// store that does not answer hands it to the broker too.
func (a *API) enter(ctx context.Context, room string, who Identity) outcome {
	if a.Config.Intake == waitroom.IntakeBroker {
		return a.accept(ctx, room, who, true)
	}
	st, err := withTimeout(ctx, a.storeTimeout(), func(ctx context.Context) (waitroom.Standing, error) {
		return a.Queue.Enter(ctx, room, AsCaller(who))
	})
	switch code := waitroom.ErrorCode(err); {
	case code == waitroom.EUnavailable && a.Config.Intake == waitroom.IntakeFallback:
		failed := a.storeError(ctx, room, err) // counted and logged as an outage all the same
		return a.accept(ctx, room, who, false).after(failed)
	case code == waitroom.EQueueFull:
		return refused(err).counting(room, metrics.Of(metrics.QueueFull, metrics.Count, 1))
	case code == waitroom.EChallengeRequired: // a replayed solution
		return refused(a.challengeRequired(room, err))
	case err != nil:
		return a.storeError(ctx, room, err)
	case st.Status == waitroom.Closed:
		return answered(closedResponse(st))
	}
	o := answered(a.standingResponse(st, who))
	switch {
	case st.AdmittedNow: // instant admission: entered and admitted, having waited for nothing
		return o.counting(room, metrics.InstantAdmission()...)
	case st.Joined:
		return o.counting(room, metrics.Of(metrics.Entered, metrics.Count, 1))
	}
	return o
}

// accept hands who's entry to the broker and answers 202 with the signed
// receipt of it. With check, the room and the limiter are asked first, in
// one store call, as enter asks them (an unknown room or a caller over its
// limit is refused, nothing sent); a store that does not answer then lets
// the entry through, counted as the limiter failing open: the broker is
// there so that an outage loses no newcomer. Fallback, which comes here
// because the store failed, does not ask again.
func (a *API) accept(ctx context.Context, room string, who Identity, check bool) outcome {
	if a.Broker == nil {
		return refused(waitroom.Unavailable(nil))
	}
	var checked outcome // what the check counted
	if check {
		_, err := withTimeout(ctx, a.storeTimeout(), func(ctx context.Context) (struct{}, error) {
			return struct{}{}, a.Queue.Admissible(ctx, room, AsCaller(who))
		})
		switch code := waitroom.ErrorCode(err); {
		case code == waitroom.EUnavailable:
			checked = a.limiterFailedOpen(ctx, room)
		case code == waitroom.EChallengeRequired: // a replayed solution
			return refused(a.challengeRequired(room, err))
		case code == waitroom.ERateLimited:
			return rateLimited(room, err)
		case err != nil:
			return refused(err)
		}
	}
	e := waitroom.Entry{Room: room, User: who.User, AcceptedAt: a.now()}
	receipt, err := a.Config.Visitor.Tickets.SignReceipt(e, e.AcceptedAt.Add(a.ticketTTL()))
	if err != nil {
		return refused(err).after(checked) // a missing key is a configuration bug: 500
	}
	if _, err := withTimeout(ctx, a.storeTimeout(), func(ctx context.Context) (struct{}, error) {
		return struct{}{}, a.Broker.Send(ctx, e)
	}); err != nil {
		return a.storeError(ctx, room, err).after(checked)
	}
	return answered(a.intakeResponse(http.StatusAccepted, intakeBody{Status: waitroom.Accepted, Receipt: receipt}, who)).
		after(checked).counting(room, metrics.Of(metrics.Accepted, metrics.Count, 1))
}
