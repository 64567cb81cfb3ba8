package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/metrics"
	"github.com/waitroom/waitroom/orderapi"
)

// The order gate (POST /orders): an order is read (orderOf), its token
// locked in the store (attempt), claimed in the durable record (record.go),
// placed downstream (place), and the token consumed (commit) or kept
// (release).

// orderOf reads an order: its key, its body and its entry token, which
// must be the caller's and of a room that sells here (roomSells). ok is
// false when it is refused: refusal answers then.
func (a *API) orderOf(req events.APIGatewayV2HTTPRequest, who Identity) (attempt waitroom.OrderAttempt, order orderapi.Request, refusal outcome, ok bool) {
	key, hasKey := lookupHeader(req, "Idempotency-Key")
	if hasKey {
		if err := waitroom.CheckIdempotencyKey(key); err != nil {
			return attempt, order, refused(err), false
		}
	}
	body, err := requestBody(req)
	if err != nil {
		return attempt, order, refused(err), false
	}
	room, token, err := a.gateToken(header(req, "X-Entry-Token"), who)
	createdOnly := false
	if err == nil {
		createdOnly, err = a.roomSells(room)
	}
	if err != nil {
		return attempt, order, refused(err).counting("", metrics.Of(metrics.TokensRejected, metrics.Count, 1)), false
	}
	attempt = waitroom.OrderAttempt{Room: room, Token: token, IdempotencyKey: key, RequestHash: requestHash(body), CreatedRoomsOnly: createdOnly}
	_, tokenID, _ := strings.Cut(token, ".")
	order = orderapi.Request{User: who.ID, Room: room, WaitroomUser: who.User, TokenID: tokenID, IdempotencyKey: key, ContentType: header(req, "Content-Type"), Body: body, Headers: a.forwardHeaders(req)}
	return attempt, order, outcome{}, true
}

func requestBody(req events.APIGatewayV2HTTPRequest) ([]byte, error) {
	if !req.IsBase64Encoded {
		return []byte(req.Body), nil
	}
	b, err := base64.StdEncoding.DecodeString(req.Body)
	if err != nil {
		return nil, waitroom.Errorf(waitroom.EInvalidRequest, "the request body is not valid base64")
	}
	return b, nil
}

// requestHash identifies an order's body for its Idempotency-Key: the
// same key with another body is refused instead of answered with the
// first order's answer (as Stripe and the IETF Idempotency-Key draft do).
func requestHash(body []byte) string {
	sum := sha256.Sum256(body)
	return base64.RawURLEncoding.EncodeToString(sum[:])
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

// roomSells refuses a token of a room ORDER_ROOMS does not name. Unset,
// ORDER_ROOMS leaves it to the store (createdOnly): only a room an operator
// created sells, checked in the order's first script (order_begin.lua).
func (a *API) roomSells(room string) (createdOnly bool, err error) {
	sells, decided := a.Config.OrderRoomSells(room)
	if decided && !sells {
		return false, waitroom.Errorf(waitroom.EWrongRoom, "this entry token is for room %q, whose sale is not here", room)
	}
	return !decided, nil
}

// detached is ctx without the caller's cancellation but with its deadline
// (Lambda's, the invocation's end): the order call and its commit run to
// their end whatever the client does, and never past the invocation.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	d := context.WithoutCancel(ctx)
	if deadline, ok := ctx.Deadline(); ok {
		return context.WithDeadline(d, deadline)
	}
	return context.WithCancel(d)
}

// attempt takes c's lock on the token (BeginOrder) and places the order
// under it, or answers why not: a replay, a refusal, an outage.
func (a *API) attempt(ctx context.Context, c waitroom.Caller, attempt waitroom.OrderAttempt, order orderapi.Request) outcome {
	room := attempt.Room
	lease, err := withTimeout(ctx, a.storeTimeout(), func(ctx context.Context) (waitroom.Lease, error) {
		return a.Queue.BeginOrder(ctx, c, attempt)
	})
	switch code := waitroom.ErrorCode(err); {
	case code == waitroom.EUnavailable && a.Config.FailOpenOrders:
		// The operator chose to let orders through unguarded while the store is down.
		a.logWarn(ctx, "store unavailable: forwarding order unguarded (ORDER_GATE_FAIL_OPEN)", err)
		return a.forward(ctx, room, order).after(outcome{}.counting(room, metrics.Of(metrics.OrdersFailOpen, metrics.Count, 1)))
	case code == waitroom.EUnavailable:
		return a.storeError(ctx, room, err)
	case code == waitroom.ERateLimited:
		return rateLimited(room, err)
	case code == waitroom.ETokenInvalid || code == waitroom.EWrongRoom:
		return refused(err).counting(room, metrics.Of(metrics.TokensRejected, metrics.Count, 1))
	case err != nil:
		return refused(err)
	case lease.Replay != nil:
		return answered(answerResponse(*lease.Replay))
	}
	claimed, stop := a.record(ctx, lease)
	if stop {
		return claimed
	}
	return a.place(ctx, lease, order).after(claimed)
}

// forward places an order without the token check (fail-open mode only).
func (a *API) forward(ctx context.Context, room string, order orderapi.Request) outcome {
	answer, err := a.Orders.PlaceOrder(ctx, order)
	if err != nil {
		return refused(err).counting(room, metrics.Of(metrics.OrdersFailed, metrics.Count, 1))
	}
	return answered(answerResponse(answer))
}

// place sends the order downstream under the lease, then consumes the
// token (commit) after a 2xx, or keeps it (release). The call's latency
// and outcome ride on the lease into the commit or release, whose script
// counts them for the room's controller (ClassifyOrder: a refused order or
// the caller's abort in no measure).
func (a *API) place(ctx context.Context, lease waitroom.Lease, order orderapi.Request) outcome {
	start := a.now()
	answer, err := a.Orders.PlaceOrder(ctx, order)
	lease.Downstream = waitroom.DownstreamCall{Latency: a.now().Sub(start), Outcome: waitroom.ClassifyOrder(answer.Status, err)}
	if err != nil || answer.Status < 200 || answer.Status > 299 {
		a.release(ctx, lease)
		failed := outcome{}.counting(lease.Room, metrics.Of(metrics.OrdersFailed, metrics.Count, 1))
		if err != nil {
			return refused(err).after(failed)
		}
		return answered(answerResponse(answer)).after(failed)
	}
	a.commit(ctx, lease, answer)
	return answered(answerResponse(answer)).counting(lease.Room, metrics.Of(metrics.OrdersPassed, metrics.Count, 1), metrics.Of(metrics.TokensConsumed, metrics.Count, 1))
}

// commit consumes the token after a success. The order has happened, so its
// answer goes back to the user even if the store fails now: the commit is
// retried for the rest of the request's budget (commitBudget), and if it
// never lands, the order lock, which lives as long as the token
// (order_begin.lua), keeps the token from ordering again.
func (a *API) commit(ctx context.Context, lease waitroom.Lease, answer waitroom.StoredAnswer) {
	err := a.retryStore(ctx, func(ctx context.Context) error { return a.Queue.CommitOrder(ctx, lease, answer) })
	if err != nil {
		a.logWarn(ctx, "order placed but token not consumed; its lock holds it until the token expires", err)
	}
	a.keep(ctx, lease, answer)
}

// release keeps the token and frees the lock after a failed order.
func (a *API) release(ctx context.Context, lease waitroom.Lease) {
	a.forget(ctx, lease)
	a.unlock(ctx, lease)
}

// unlock frees the lock, keeping the token in the store.
func (a *API) unlock(ctx context.Context, lease waitroom.Lease) {
	if err := a.retryStore(ctx, func(ctx context.Context) error { return a.Queue.ReleaseOrder(ctx, lease) }); err != nil {
		a.logWarn(ctx, "order lock not released; it expires on its own", err)
	}
}

func answerResponse(ans waitroom.StoredAnswer) events.APIGatewayV2HTTPResponse {
	ct := ans.ContentType
	if ct == "" {
		ct = "application/json"
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: ans.Status, Headers: map[string]string{"Content-Type": ct, "Cache-Control": "no-store"}, Body: ans.Body}
}
