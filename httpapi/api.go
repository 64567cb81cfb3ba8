// Package httpapi holds the waiting room's HTTP rules: who is asking
// (identity, challenge, tickets), the handlers of enter, position and
// order, and the one table of errors to statuses, on API Gateway HTTP API
// payload 2.0 events. The Lambda adapters (package awslambda) and the local
// runner call the very same code.
package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
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

	views *views // this process's readings of each room's view (line.go); made at first use
}

// Enter handles POST /queue/enter.
func (a *API) Enter(ctx context.Context, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	return a.serve(ctx, func() outcome {
		who, room, err := a.caller(req, true)
		if err != nil {
			return outcome{resp: CallerError(err)}
		}
		return a.enter(ctx, room, who)
	})
}

// enter takes who's place in room's line (Queue.Enter); with INTAKE broker
// it hands the entry to the broker instead (accept), and with INTAKE
// fallback when the store does not answer. Its answer is entered's.
func (a *API) enter(ctx context.Context, room string, who Identity) outcome {
	// A refresh of a place held: nothing to write. Its answer is enter's,
	// with the room's page; a closed room's refusal is the store's (403).
	if st, v, ok := a.fromView(ctx, room, who); ok && st.Status != waitroom.Closed {
		st.Page = v.Page
		return outcome{resp: a.standingResponse(room, st, who)}
	}
	var (
		st  waitroom.Standing
		err error
	)
	handOver := a.Config.Intake == waitroom.IntakeBroker
	if !handOver {
		c := CallerIn(room, who)
		st, err = withTimeout(ctx, a.storeTimeout(), func(ctx context.Context) (waitroom.Standing, error) {
			return a.Queue.Enter(ctx, room, c)
		})
		handOver = waitroom.ErrorCode(err) == waitroom.EUnavailable && a.Config.Intake == waitroom.IntakeFallback
	}
	if handOver {
		return a.accept(ctx, room, who, err)
	}
	return a.entered(ctx, room, who, st, err)
}

// accept hands who's entry to the broker and answers 202 with the signed
// receipt of it. Under INTAKE broker (outage nil) the room and the limiter
// are asked first, in one store call, as enter asks them (an unknown room
// or a caller over its limit is refused, nothing sent); a store that does
// not answer then lets the entry through, counted as the limiter failing
// open: the broker is there so that an outage loses no newcomer. Under
// INTAKE fallback, outage is the store's failure that sent the entry here:
// it is counted and logged as an outage all the same, and not asked again.
func (a *API) accept(ctx context.Context, room string, who Identity, outage error) outcome {
	var o outcome // what came before the broker: the outage, or the limiter failing open
	if outage != nil {
		o = a.storeError(ctx, room, outage)
	}
	if a.Broker == nil {
		o.resp = ErrorResponse(waitroom.Unavailable(nil))
		return o
	}
	if outage == nil {
		_, err := withTimeout(ctx, a.storeTimeout(), func(ctx context.Context) (struct{}, error) {
			return struct{}{}, a.Queue.Admissible(ctx, room, AsCaller(who))
		})
		switch code := waitroom.ErrorCode(err); {
		case code == waitroom.EUnavailable:
			o = a.limiterFailedOpen(ctx, room)
		case code == waitroom.EChallengeRequired: // a replayed solution
			return refused(a.challengeRequired(room, err))
		case code == waitroom.ERateLimited:
			return rateLimited(room, err)
		case err != nil:
			return refused(err)
		}
	}
	sent := a.send(ctx, room, who)
	sent.counts = append(o.counts, sent.counts...)
	return sent
}

// send signs the receipt of who's entry and sends the entry to the broker.
func (a *API) send(ctx context.Context, room string, who Identity) outcome {
	e := waitroom.Entry{Room: room, User: who.User, AcceptedAt: a.now()}
	receipt, err := a.Config.Visitor.Tickets.SignReceipt(e, e.AcceptedAt.Add(a.ticketTTL()))
	if err != nil {
		return refused(err) // a missing key is a configuration bug: 500
	}
	if _, err := withTimeout(ctx, a.storeTimeout(), func(ctx context.Context) (struct{}, error) {
		return struct{}{}, a.Broker.Send(ctx, e)
	}); err != nil {
		return a.storeError(ctx, room, err)
	}
	return outcome{resp: a.intakeResponse(http.StatusAccepted, intakeBody{Status: waitroom.Accepted, Receipt: receipt}, who),
		counts: []counted{{room, ones(metrics.Accepted)}}}
}

// Position handles GET /queue/position.
func (a *API) Position(ctx context.Context, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	return a.serve(ctx, func() outcome {
		if receipt, ok := lookupHeader(req, waitroom.ReceiptHeader); ok {
			return a.receiptPosition(ctx, req, receipt)
		}
		who, room, err := a.caller(req, false)
		if err != nil {
			return outcome{resp: CallerError(err)}
		}
		if st, _, ok := a.fromView(ctx, room, who); ok {
			return outcome{resp: a.standingResponse(room, st, who)}
		}
		c := CallerIn(room, who)
		st, err := withTimeout(ctx, a.storeTimeout(), func(ctx context.Context) (waitroom.Standing, error) {
			return a.Queue.Position(ctx, room, c)
		})
		if err != nil {
			return a.storeError(ctx, room, err)
		}
		return outcome{resp: a.standingResponse(room, st, who)}
	})
}

// Order handles POST /orders: the gate in front of the order API. Once
// the request is read, the gate's work runs to its end on a context the
// caller cannot cancel (detached): a client that gives up mid-order must
// not release a token whose order the API may have taken.
func (a *API) Order(ctx context.Context, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	return a.serve(ctx, func() outcome {
		who, err := a.Identify(req, "") // never a new visitor
		if err != nil {
			return outcome{resp: CallerError(err)}
		}
		attempt, order, refusal, ok := a.orderOf(req, who)
		if !ok {
			return refusal
		}
		ctx, cancel := detached(ctx)
		defer cancel()
		return a.attempt(ctx, AsCaller(who), attempt, order)
	})
}

// outcome is what one request came to: its answer, and the metrics it
// counts, in the order they happened. The steps of a request return it to
// the public handler, which records the metrics (count) and answers.
type outcome struct {
	resp   events.APIGatewayV2HTTPResponse
	counts []counted
}

// counted is one metrics record: values counted for room ("" for none).
type counted struct {
	room   string
	values []metrics.Value
}

// ones counts 1 of each metric named: the values of most records.
func ones(names ...string) []metrics.Value {
	values := make([]metrics.Value, len(names))
	for i, name := range names {
		values[i] = metrics.Of(name, metrics.Count, 1)
	}
	return values
}

// refused answers err and counts nothing.
func refused(err error) outcome { return outcome{resp: ErrorResponse(err)} }

// serve runs a request's step under the panic guard, records what it
// counted and answers.
func (a *API) serve(ctx context.Context, step func() outcome) events.APIGatewayV2HTTPResponse {
	o := a.guard(ctx, step)
	a.count(o)
	return o.resp
}

// count turns an outcome into metrics: the one place a request's metrics
// are recorded.
func (a *API) count(o outcome) {
	for _, c := range o.counts {
		a.Metrics.Record(c.room, c.values...)
	}
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
		LinePath:          {http.MethodGet, a.Line},
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

// guard turns a panic into a JSON 500 so that one bad request never takes
// the process (and everyone's requests) down with it.
func (a *API) guard(ctx context.Context, h func() outcome) (o outcome) {
	defer func() {
		if p := recover(); p != nil {
			if a.Log != nil {
				a.Log.ErrorContext(ctx, "handler panic", "panic", p)
			}
			o = refused(errors.New("panic"))
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

// storeError answers a store failure; it is logged and counted.
func (a *API) storeError(ctx context.Context, room string, err error) outcome {
	switch waitroom.ErrorCode(err) {
	case waitroom.ERateLimited:
		return rateLimited(room, err)
	case waitroom.EUnavailable:
		a.logWarn(ctx, "store unavailable", err)
		return outcome{resp: ErrorResponse(err), counts: []counted{{room, ones(metrics.StoreUnavailable)}}}
	}
	return refused(err)
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
