// Package awslambda serves the waiting room as AWS Lambda handlers: HTTP
// routes on API Gateway HTTP API payload 2.0 events, and admission on
// EventBridge scheduled events. The local runner calls the very same code.
package httpapi

import (
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/metrics"
	"github.com/waitroom/waitroom/orderapi"
)

// DefaultStoreTimeout bounds one store call (waitroom.StoreCallTimeout).
const DefaultStoreTimeout = waitroom.StoreCallTimeout

// OrderPlacer sends an order downstream (orderapi.Client in production).
type OrderPlacer interface {
	PlaceOrder(ctx context.Context, r orderapi.Request) (waitroom.StoredAnswer, error)
}

// API holds the HTTP handlers.
type API struct {
	Config  waitroom.Config
	Queue   waitroom.Store
	Orders  OrderPlacer
	Record  OrderRecord       // the durable record of consumed tokens; nil keeps none
	Metrics *metrics.Recorder // nil records nothing
	Log     *slog.Logger      // nil logs nothing
	// Rand returns uniform numbers in [0, 1) for poll jitter; nil means math/rand.
	Rand         func() float64
	StoreTimeout time.Duration // 0 means DefaultStoreTimeout
	// Admin, when set, serves /admin/… in Route (the local runner).
	Admin *Admin
	// Now is the clock of queue tickets; nil means time.Now.
	Now func() time.Time
	// Broker and Applied serve INTAKE broker and fallback: enter accepts
	// into Broker, position reads Applied's record of applied entries.
	Broker  waitroom.Broker
	Applied waitroom.Applier
}

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
	Ticket               string          `json:"ticket,omitempty"`
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

// Enter handles POST /queue/enter.
func (a *API) Enter(ctx context.Context, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	return a.guard(ctx, func() events.APIGatewayV2HTTPResponse {
		who, room, err := a.caller(req, true)
		if err != nil {
			return CallerError(err)
		}
		if a.Config.Intake == waitroom.IntakeBroker {
			return a.accept(ctx, room, who, true)
		}
		st, err := withTimeout(ctx, a.storeTimeout(), func(ctx context.Context) (waitroom.Standing, error) {
			return a.Queue.Enter(ctx, room, AsCaller(who))
		})
		switch {
		case waitroom.ErrorCode(err) == waitroom.EUnavailable && a.Config.Intake == waitroom.IntakeFallback:
			a.storeError(ctx, room, err) // counted and logged as an outage all the same
			return a.accept(ctx, room, who, false)
		case waitroom.ErrorCode(err) == waitroom.EQueueFull:
			a.Metrics.Record(room, metrics.Of(metrics.QueueFull, metrics.Count, 1))
			return ErrorResponse(err)
		case waitroom.ErrorCode(err) == waitroom.EChallengeRequired: // a replayed solution
			return ErrorResponse(a.challengeRequired(room, err))
		case err != nil:
			return a.storeError(ctx, room, err)
		case st.Status == waitroom.Closed:
			return closedResponse(st)
		case st.AdmittedNow: // instant admission: entered and admitted, having waited for nothing
			a.Metrics.Record(room, metrics.InstantAdmission()...)
		case st.Joined:
			a.Metrics.Record(room, metrics.Of(metrics.Entered, metrics.Count, 1))
		}
		return a.standingResponse(st, who)
	})
}

// Position handles GET /queue/position.
func (a *API) Position(ctx context.Context, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	return a.guard(ctx, func() events.APIGatewayV2HTTPResponse {
		if receipt, ok := lookupHeader(req, waitroom.ReceiptHeader); ok {
			return a.receiptPosition(ctx, req, receipt)
		}
		who, room, err := a.caller(req, false)
		if err != nil {
			return CallerError(err)
		}
		st, err := withTimeout(ctx, a.storeTimeout(), func(ctx context.Context) (waitroom.Standing, error) {
			return a.Queue.Position(ctx, room, AsCaller(who))
		})
		if err != nil {
			return a.storeError(ctx, room, err)
		}
		return a.standingResponse(st, who)
	})
}

// standingResponse answers enter and position; a ticketed visitor's answer
// carries a renewed ticket, in the body and as the cookie.
func (a *API) standingResponse(st waitroom.Standing, who Identity) events.APIGatewayV2HTTPResponse {
	body := standingBody{Status: st.Status, Message: st.Message, pageFields: pageOf(st.Page)}
	room := a.Config.ForRoom(st)
	var cookie string
	body.Ticket, cookie = a.Ticket(who, st.Status)
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

// Order handles POST /orders: the gate in front of the order API. Once
// the request is read, the gate's work runs to its end on a context the
// caller cannot cancel (detached): a client that gives up mid-order must
// not release a token whose order the API may have taken.
func (a *API) Order(ctx context.Context, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	return a.guard(ctx, func() events.APIGatewayV2HTTPResponse {
		who, err := a.Identify(req, "") // never a new visitor
		if err != nil {
			return CallerError(err)
		}
		attempt, order, err := a.orderOf(req, who)
		if err != nil {
			return ErrorResponse(err)
		}
		ctx, cancel := detached(ctx)
		defer cancel()
		return a.attempt(ctx, AsCaller(who), attempt, order)
	})
}

// orderOf reads an order: its key, its body and its entry token, which
// must be the caller's and of a room that sells here (roomSells).
func (a *API) orderOf(req events.APIGatewayV2HTTPRequest, who Identity) (waitroom.OrderAttempt, orderapi.Request, error) {
	key, hasKey := lookupHeader(req, "Idempotency-Key")
	if hasKey {
		if err := waitroom.CheckIdempotencyKey(key); err != nil {
			return waitroom.OrderAttempt{}, orderapi.Request{}, err
		}
	}
	body, err := requestBody(req)
	if err != nil {
		return waitroom.OrderAttempt{}, orderapi.Request{}, err
	}
	room, token, err := a.gateToken(header(req, "X-Entry-Token"), who)
	createdOnly := false
	if err == nil {
		createdOnly, err = a.roomSells(room)
	}
	if err != nil {
		a.Metrics.Record("", metrics.Of(metrics.TokensRejected, metrics.Count, 1))
		return waitroom.OrderAttempt{}, orderapi.Request{}, err
	}
	attempt := waitroom.OrderAttempt{Room: room, Token: token, IdempotencyKey: key, RequestHash: requestHash(body), CreatedRoomsOnly: createdOnly}
	_, tokenID, _ := strings.Cut(token, ".")
	order := orderapi.Request{User: who.ID, Room: room, WaitroomUser: who.User, TokenID: tokenID, IdempotencyKey: key, ContentType: header(req, "Content-Type"), Body: body, Headers: a.forwardHeaders(req)}
	return attempt, order, nil
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

// attempt takes c's lock on the token (BeginOrder) and places the order
// under it, or answers why not: a replay, a refusal, an outage.
func (a *API) attempt(ctx context.Context, c waitroom.Caller, attempt waitroom.OrderAttempt, order orderapi.Request) events.APIGatewayV2HTTPResponse {
	room := attempt.Room
	lease, err := withTimeout(ctx, a.storeTimeout(), func(ctx context.Context) (waitroom.Lease, error) {
		return a.Queue.BeginOrder(ctx, c, attempt)
	})
	switch code := waitroom.ErrorCode(err); {
	case code == waitroom.EUnavailable && a.Config.FailOpenOrders:
		// The operator chose to let orders through unguarded while the store is down.
		a.logWarn(ctx, "store unavailable: forwarding order unguarded (ORDER_GATE_FAIL_OPEN)", err)
		a.Metrics.Record(room, metrics.Of(metrics.OrdersFailOpen, metrics.Count, 1))
		return a.forward(ctx, room, order)
	case code == waitroom.EUnavailable:
		return a.storeError(ctx, room, err)
	case a.rateLimited(room, err):
		return ErrorResponse(err)
	case code == waitroom.ETokenInvalid || code == waitroom.EWrongRoom:
		a.Metrics.Record(room, metrics.Of(metrics.TokensRejected, metrics.Count, 1))
		return ErrorResponse(err)
	case err != nil:
		return ErrorResponse(err)
	case lease.Replay != nil:
		return answerResponse(*lease.Replay)
	}
	if resp, stop := a.record(ctx, lease); stop {
		return resp
	}
	return a.place(ctx, lease, order)
}

// place sends the order downstream under the lease, then consumes the
// token (commit) after a 2xx, or keeps it (release). The call's latency
// and outcome ride on the lease into the commit or release, whose script
// counts them for the room's controller (ClassifyOrder: a refused order or
// the caller's abort in no measure).
func (a *API) place(ctx context.Context, lease waitroom.Lease, order orderapi.Request) events.APIGatewayV2HTTPResponse {
	start := a.now()
	answer, err := a.Orders.PlaceOrder(ctx, order)
	lease.Downstream = waitroom.DownstreamCall{Latency: a.now().Sub(start), Outcome: waitroom.ClassifyOrder(answer.Status, err)}
	if err != nil || answer.Status < 200 || answer.Status > 299 {
		a.Metrics.Record(lease.Room, metrics.Of(metrics.OrdersFailed, metrics.Count, 1))
		a.release(ctx, lease)
		if err != nil {
			return ErrorResponse(err)
		}
		return answerResponse(answer)
	}
	a.Metrics.Record(lease.Room, metrics.Of(metrics.OrdersPassed, metrics.Count, 1), metrics.Of(metrics.TokensConsumed, metrics.Count, 1))
	a.commit(ctx, lease, answer)
	return answerResponse(answer)
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

// forward places an order without the token check (fail-open mode only).
func (a *API) forward(ctx context.Context, room string, order orderapi.Request) events.APIGatewayV2HTTPResponse {
	answer, err := a.Orders.PlaceOrder(ctx, order)
	if err != nil {
		a.Metrics.Record(room, metrics.Of(metrics.OrdersFailed, metrics.Count, 1))
		return ErrorResponse(err)
	}
	return answerResponse(answer)
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

// Route dispatches on method and path, for hosts that send every route to
// one handler (the local runner, a single-function deployment).
func (a *API) Route(ctx context.Context, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	path := strings.TrimSuffix(req.RawPath, "/")
	if path == "" {
		path = req.RequestContext.HTTP.Path
	}
	if a.Admin != nil && strings.HasPrefix(path+"/", "/admin/") {
		return a.Admin.Route(ctx, req)
	}
	routes := map[string]struct {
		method  string
		handler func(context.Context, events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse
	}{
		"/queue/enter":    {http.MethodPost, a.Enter},
		"/queue/position": {http.MethodGet, a.Position},
		"/orders":         {http.MethodPost, a.Order},
		JWKSPath:          {http.MethodGet, a.JWKS},
	}
	r, ok := routes[path]
	switch {
	case !ok:
		return ErrorResponse(waitroom.Errorf(waitroom.ENotFound, "no route %s", path))
	case req.RequestContext.HTTP.Method != r.method:
		resp := ErrorResponse(waitroom.Errorf(waitroom.EMethodNotAllowed, "%s takes %s", path, r.method))
		resp.Headers["Allow"] = r.method
		return resp
	}
	return r.handler(ctx, req)
}

// caller returns who sends an enter (create) or position request, and its room.
func (a *API) caller(req events.APIGatewayV2HTTPRequest, create bool) (who Identity, room string, err error) {
	if _, err := url.ParseQuery(req.RawQueryString); err != nil {
		// Never read a query that cannot be decoded as "no room": the user
		// would land in another room's line.
		return Identity{}, "", waitroom.Errorf(waitroom.EInvalidRequest, "the query string cannot be decoded")
	}
	room, ok := req.QueryStringParameters["room"]
	if !ok {
		room = waitroom.DefaultRoom
	} else if !waitroom.ValidRoom(room) {
		return Identity{}, "", waitroom.Errorf(waitroom.EInvalidRoom, "room must match ^[a-z0-9][a-z0-9-]{0,63}$")
	}
	enterRoom := ""
	if create {
		enterRoom = room
	}
	if who, err = a.Identify(req, enterRoom); err != nil {
		return Identity{}, "", err
	}
	return who, room, nil
}

func lookupHeader(req events.APIGatewayV2HTTPRequest, name string) (string, bool) {
	if v, ok := req.Headers[strings.ToLower(name)]; ok {
		return v, true
	}
	for k, v := range req.Headers { // payload 2.0 lowercases names; tolerate other hosts
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

func header(req events.APIGatewayV2HTTPRequest, name string) string {
	v, _ := lookupHeader(req, name)
	return v
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

// storeError answers a store failure; it is logged and counted.
func (a *API) storeError(ctx context.Context, room string, err error) events.APIGatewayV2HTTPResponse {
	if a.rateLimited(room, err) {
		return ErrorResponse(err)
	}
	if waitroom.ErrorCode(err) == waitroom.EUnavailable {
		a.Metrics.Record(room, metrics.Of(metrics.StoreUnavailable, metrics.Count, 1))
		a.logWarn(ctx, "store unavailable", err)
	}
	return ErrorResponse(err)
}

// guard turns a panic into a JSON 500 so that one bad request never takes
// the process (and everyone's requests) down with it.
func (a *API) guard(ctx context.Context, h func() events.APIGatewayV2HTTPResponse) (resp events.APIGatewayV2HTTPResponse) {
	defer func() {
		if p := recover(); p != nil {
			if a.Log != nil {
				a.Log.ErrorContext(ctx, "handler panic", "panic", p)
			}
			resp = ErrorResponse(errors.New("panic"))
		}
	}()
	return h()
}

func (a *API) logWarn(ctx context.Context, msg string, err error) {
	if a.Log != nil {
		a.Log.WarnContext(ctx, msg, "err", err)
	}
}

func (a *API) storeTimeout() time.Duration {
	if a.StoreTimeout > 0 {
		return a.StoreTimeout
	}
	return DefaultStoreTimeout
}

func (a *API) random() float64 {
	if a.Rand != nil {
		return a.Rand()
	}
	return rand.Float64()
}

// withTimeout bounds one store call; a deadline is reported as the store
// being unavailable, which is what it means to the user.
func withTimeout[T any](ctx context.Context, d time.Duration, call func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	v, err := call(ctx)
	if err != nil && waitroom.ErrorCode(err) == waitroom.EInternal {
		err = waitroom.Unavailable(err)
	}
	return v, err
}
