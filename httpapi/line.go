package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
)

// The line at any size: a waiting visitor carries its place (a spot, in
// its ticket or an account's signed place), every process reads each
// room's view at most once per waitroom.ViewMaxAge, and a poll whose spot
// the front has not reached is answered from the view: no store call, no
// limiter (it costs the store nothing to limit). GET /queue/line serves the
// same view to everyone, cacheable for a second, so that the page follows
// the line through the CDN (docs/design.md, "The line at any size").

// views keeps each room's last view read by this process.
type views struct {
	mu    sync.Mutex
	rooms map[string]*viewRead
}

// viewRead is one reading of a room's view: done is closed once v and err
// are set, so that concurrent polls of a room wait for one store call.
type viewRead struct {
	done chan struct{}
	at   time.Time
	v    waitroom.View
	err  error
}

// view is room's view, read from the store when this process's reading is
// older than waitroom.ViewMaxAge (an error too is kept that long: a store
// that fails is not asked once per poll). The reading is everyone's, so a
// caller that hangs up does not cut it short: it has the store's timeout.
func (a *API) view(ctx context.Context, room string) (waitroom.View, error) {
	r, fresh := a.viewReading(room)
	if !fresh {
		r.v, r.err = withTimeout(context.WithoutCancel(ctx), a.storeTimeout(), func(ctx context.Context) (waitroom.View, error) {
			return a.Queue.View(ctx, room)
		})
		close(r.done)
	}
	select {
	case <-r.done:
		return r.v, r.err
	case <-ctx.Done():
		return waitroom.View{}, waitroom.Unavailable(ctx.Err())
	}
}

// viewReading is room's current reading, or a new one for the caller to
// make (fresh false): one reader a room at a time.
func (a *API) viewReading(room string) (r *viewRead, fresh bool) {
	now := time.Now() // the process's own clock: ages, not the tickets' a.Now
	vs := a.viewsOf()
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if r := vs.rooms[room]; r != nil && now.Sub(r.at) < waitroom.ViewMaxAge {
		return r, true
	}
	if len(vs.rooms) >= maxViews { // rooms nobody asks about any more: GET /queue/line takes any room's name
		for name, old := range vs.rooms {
			if now.Sub(old.at) >= waitroom.ViewMaxAge {
				delete(vs.rooms, name)
			}
		}
	}
	r = &viewRead{done: make(chan struct{}), at: now}
	vs.rooms[room] = r
	return r, false
}

// maxViews is how many rooms' readings a process keeps before it drops the
// old ones: a sweep per maxViews new rooms at most.
const maxViews = 1024

// viewsMade guards the making of an API's views: APIs are struct literals,
// with no constructor to make them in (a copy of an API shares them).
var viewsMade sync.Mutex

func (a *API) viewsOf() *views {
	viewsMade.Lock()
	defer viewsMade.Unlock()
	if a.views == nil {
		a.views = &views{rooms: map[string]*viewRead{}}
	}
	return a.views
}

// fromView is who's standing in room as the room's view tells it, when
// who's spot can be answered there (waitroom.View.Standing), and the view;
// ok false sends the call to the store, as does a view that cannot be read.
func (a *API) fromView(ctx context.Context, room string, who Identity) (st waitroom.Standing, v waitroom.View, ok bool) {
	if !who.Spot.In(room) {
		return st, v, false
	}
	v, err := a.view(ctx, room)
	if err != nil {
		return st, v, false
	}
	st, ok = v.Standing(who.Spot, room, a.now(), a.Config)
	return st, v, ok
}

// WithLine serves GET /queue/line beside h: the position function's routes.
func (a *API) WithLine(h Handler) Handler {
	return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
		if req.RawPath == LinePath || (req.RawPath == "" && req.RequestContext.HTTP.Path == LinePath) {
			return a.Line(ctx, req)
		}
		return h(ctx, req)
	}
}

// LinePath is the route of the cacheable view of a room's line.
const LinePath = "/queue/line"

// CallerIn is who as the store's caller in room, with the place its
// credential carries in room: an anonymous visitor's whole place, an
// account's the store puts back if a failover lost it
// (waitroom.Caller.Place). The store tells a place of an earlier line by
// when it was signed.
func CallerIn(room string, who Identity) waitroom.Caller {
	c := AsCaller(who)
	if who.Spot.In(room) {
		c.Place, c.PlaceAt = who.Spot.Number, who.Spot.At
	}
	return c
}

// LineCacheControl lets a CDN (the stack's CloudFront) and browsers share
// one answer of GET /queue/line for about a second: the same bytes for
// every visitor of the room.
const LineCacheControl = "public, max-age=1"

// lineBody is GET /queue/line's answer.
type lineBody struct {
	Room       string  `json:"room"`
	Status     string  `json:"status"`
	Front      int64   `json:"front,omitempty"`
	Exact      bool    `json:"exact"`
	RatePerSec float64 `json:"ratePerSec"`
	Paused     bool    `json:"paused"`
	Stalled    bool    `json:"stalled"`
	Message    string  `json:"message,omitempty"`
	OpensAt    string  `json:"opensAt,omitempty"`
	// PollTiers and BatchIntervalMs let a client pace itself as pollAfterMs
	// would: the tier of its estimated wait, never past its own turn.
	PollTiers       []lineTier `json:"pollTiers"`
	BatchIntervalMs int64      `json:"batchIntervalMs"`
	// ClaimWindowMs is the room's entry token life: a client comes back
	// within half of it, as pollAfterMs does (Config.PollAfterMs), so that
	// a number admitted meanwhile is still claimed.
	ClaimWindowMs int64 `json:"claimWindowMs"`
}

// lineTier is one POLL_TIERS tier.
type lineTier struct {
	MinWaitSeconds int64 `json:"minWaitSeconds"`
	PollMs         int64 `json:"pollMs"`
}

// The room's state in GET /queue/line.
const (
	lineOpen     = "OPEN"
	linePreQueue = "PREQUEUE"
	lineClosed   = "CLOSED"
)

// Line handles GET /queue/line: room's view, for everyone, cacheable.
// It takes no identity, so it reads no ticket and no limiter; an unknown
// room's 404 is cacheable as well, so that a flood of made-up rooms stops
// at the CDN too.
func (a *API) Line(ctx context.Context, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	return a.serve(ctx, func() outcome {
		q, err := url.ParseQuery(req.RawQueryString)
		if err != nil { // never read as "no room": another room's line (caller, identity.go)
			return refused(waitroom.Errorf(waitroom.EInvalidRequest, "the query string cannot be decoded"))
		}
		room := q.Get("room")
		if !q.Has("room") {
			room = waitroom.DefaultRoom
		}
		if !waitroom.ValidRoom(room) {
			return refused(waitroom.Errorf(waitroom.EInvalidRoom, "room must match ^[a-z0-9][a-z0-9-]{0,63}$"))
		}
		v, err := a.view(ctx, room)
		if waitroom.ErrorCode(err) == waitroom.ERoomNotFound {
			resp := ErrorResponse(err)
			resp.Headers["Cache-Control"] = LineCacheControl
			return outcome{resp: resp}
		}
		if err != nil {
			return a.storeError(ctx, room, err)
		}
		resp := jsonResponse(http.StatusOK, lineOf(room, v, a.now(), a.Config))
		resp.Headers["Cache-Control"] = LineCacheControl
		return outcome{resp: resp}
	})
}

// lineOf is the answer of GET /queue/line for room's view at now. Stalled
// is the room's admission, whatever one's position: a client backs off to
// the farthest tier while it lasts, as a poll's answer near the front says.
func lineOf(room string, v waitroom.View, now time.Time, c waitroom.Config) lineBody {
	b := lineBody{Room: room, Status: lineOpen, RatePerSec: v.RatePerSec, Paused: v.Paused, Message: v.Message,
		Stalled: v.Stalled(now, c), Exact: v.Exact && v.Front > 0, BatchIntervalMs: c.AdmitInterval.Milliseconds(),
		ClaimWindowMs: c.EntryTokenTTL.Milliseconds()}
	if v.ClaimWindow > 0 {
		b.ClaimWindowMs = v.ClaimWindow.Milliseconds()
	}
	for _, t := range c.Tiers() {
		b.PollTiers = append(b.PollTiers, lineTier(t))
	}
	if b.Exact {
		b.Front = v.Front
	}
	switch {
	case v.Closed:
		b.Status = lineClosed
	case v.OpensAt.After(now):
		b.Status, b.OpensAt = linePreQueue, v.OpensAt.UTC().Format(time.RFC3339Nano)
	}
	return b
}
