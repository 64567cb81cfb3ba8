package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"time"

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
// must be the caller's and of a room that sells here (gateToken). ok is
// false when it is refused: refusal answers then.
func (a *API) orderOf(req events.APIGatewayV2HTTPRequest, who Identity) (attempt waitroom.OrderAttempt, order orderapi.Request, refusal outcome, ok bool) {
	key, hasKey := lookupHeader(req, "Idempotency-Key")
	token := header(req, "X-Entry-Token")
	order = orderapi.Request{User: who.ID, WaitroomUser: who.User, IdempotencyKey: key, ContentType: header(req, "Content-Type"), Headers: a.forwardHeaders(req)}
	if hasKey {
		if err := waitroom.CheckIdempotencyKey(key); err != nil {
			return attempt, order, refused(err), false
		}
	}
	body, err := requestBody(req)
	if err != nil {
		return attempt, order, refused(err), false
	}
	order.Body, attempt.RequestHash = body, requestHash(body)
	room, stored, createdOnly, err := a.gateToken(token, who)
	if err != nil {
		return attempt, order, outcome{resp: ErrorResponse(err), counts: []counted{{"", ones(metrics.TokensRejected)}}}, false
	}
	attempt.Room, attempt.Token, attempt.IdempotencyKey, attempt.CreatedRoomsOnly = room, stored, key, createdOnly
	_, order.TokenID, _ = strings.Cut(stored, ".")
	order.Room = room
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

// gateToken turns the X-Entry-Token of who into the room and the store's
// token, refusing a token of a room that does not sell here (ORDER_ROOMS;
// unset, it is left to the store: createdOnly). A JWT is checked first,
// signature, expiry, issuer, subject and its source, so that a forged token
// costs no store call; single use is then the store's.
func (a *API) gateToken(token string, who Identity) (room, stored string, createdOnly bool, err error) {
	room, stored, err = a.tokenRoom(token, who)
	if err != nil {
		return "", "", false, err
	}
	// Unset, ORDER_ROOMS leaves it to the store: only a room an operator
	// created sells, checked in the order's first script (order_begin.lua).
	sells, decided := a.Config.OrderRoomSells(room)
	if decided && !sells {
		return "", "", false, waitroom.Errorf(waitroom.EWrongRoom, "this entry token is for room %q, whose sale is not here", room)
	}
	return room, stored, !decided, nil
}

// tokenRoom is the room and the store's token of who's entry token.
func (a *API) tokenRoom(token string, who Identity) (room, stored string, err error) {
	invalid := waitroom.Errorf(waitroom.ETokenInvalid, "an X-Entry-Token header with a valid entry token of yours is required")
	keys := a.Config.Trust.EntryTokens
	if !keys.Enabled() {
		room, ok := waitroom.TokenRoom(token)
		if !ok {
			return "", "", invalid
		}
		return room, token, nil
	}
	c, err := keys.Verify(token, a.now())
	if err != nil || c.Subject != who.ID || c.Source != who.tokenSource() {
		return "", "", invalid
	}
	stored = c.Room + "." + c.ID
	if r, ok := waitroom.TokenRoom(stored); !ok || r != c.Room {
		return "", "", invalid
	}
	return c.Room, stored, nil
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
	start := time.Now()
	lease, err := withTimeout(ctx, a.storeTimeout(), func(ctx context.Context) (waitroom.Lease, error) {
		return a.Queue.BeginOrder(ctx, c, attempt)
	})
	if err != nil && lease.LockValue != "" {
		// A check that failed may have taken the lock: no order goes under
		// it, and left it would refuse the user's retries (409
		// order_in_progress) until the token expires. Its 503 waits for
		// this, within the commit's window from the check's start.
		uctx, cancel := context.WithDeadline(ctx, start.Add(commitBudget))
		a.unlock(uctx, lease)
		cancel()
	}
	switch code := waitroom.ErrorCode(err); {
	case code == waitroom.EUnavailable && a.Config.FailOpenOrders:
		// The operator chose to let orders through unguarded while the store is down.
		a.logWarn(ctx, "store unavailable: forwarding order unguarded (ORDER_GATE_FAIL_OPEN)", err)
		o := a.forward(ctx, room, order)
		o.counts = append([]counted{{room, ones(metrics.OrdersFailOpen)}}, o.counts...)
		return o
	case code == waitroom.EUnavailable:
		return a.storeError(ctx, room, err)
	case code == waitroom.ERateLimited:
		return rateLimited(room, err)
	case code == waitroom.ETokenInvalid || code == waitroom.EWrongRoom:
		return outcome{resp: ErrorResponse(err), counts: []counted{{room, ones(metrics.TokensRejected)}}}
	case err != nil:
		return refused(err)
	case lease.Replay != nil:
		return outcome{resp: answerResponse(*lease.Replay)}
	}
	claimed, stop := a.record(ctx, lease)
	if stop {
		return claimed
	}
	o := a.place(ctx, lease, order)
	o.counts = append(claimed.counts, o.counts...)
	return o
}

// forward places an order without the token check (fail-open mode only).
func (a *API) forward(ctx context.Context, room string, order orderapi.Request) outcome {
	answer, err := a.Orders.PlaceOrder(ctx, order)
	if err != nil {
		return outcome{resp: ErrorResponse(err), counts: []counted{{room, ones(metrics.OrdersFailed)}}}
	}
	return outcome{resp: answerResponse(answer)}
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
		failed := []counted{{lease.Room, ones(metrics.OrdersFailed)}}
		if err != nil {
			return outcome{resp: ErrorResponse(err), counts: failed}
		}
		return outcome{resp: answerResponse(answer), counts: failed}
	}
	a.commit(ctx, lease, answer)
	return outcome{resp: answerResponse(answer), counts: []counted{{lease.Room, ones(metrics.OrdersPassed, metrics.TokensConsumed)}}}
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
