package localrun

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/httpapi"
)

// Stream timing (docs/API.md, "GET /queue/events").
const (
	// keepAliveEvery sends a comment so that proxies keep an idle stream open.
	keepAliveEvery = 15 * time.Second
	// positionEvery is the most often a changed position is sent; a change
	// of status is sent at once.
	positionEvery = time.Second
	// maxStreamLife ends a stream (or half the ticket's lifetime, if
	// shorter: API.StreamLife) while the cookie set when it opened is still
	// valid; the page reconnects through position, which renews it, so a
	// reload never finds the cookie expired.
	maxStreamLife = 30 * time.Minute
	// streamWriteTimeout bounds each write: a client that stops reading
	// would otherwise block the stream in a write for good, its life timer
	// unseen and its slot (streamCaps) never given back.
	streamWriteTimeout = 10 * time.Second
)

// events serves GET /queue/events: the visitor's standing as server-sent
// events, under the identity rules of GET /queue/position.
type events struct {
	api   *httpapi.API
	seats Seats
	hub   *hub
	caps  *streamCaps
	done  <-chan struct{} // closed at shutdown
	// keepAlive, life and writeTimeout are keepAliveEvery, the API's
	// StreamLife and streamWriteTimeout, shorter in tests.
	keepAlive, life, writeTimeout time.Duration
}

func (e *events) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ev := httpapi.EventFromHTTP(r, nil)
	who, room, err := e.api.Caller(ev)
	if err != nil {
		httpapi.WriteHTTP(w, httpapi.CallerError(err))
		return
	}
	if _, ok := w.(http.Flusher); !ok { // every net/http server's writer flushes; a wrapping middleware might not
		httpapi.WriteHTTP(w, httpapi.CallerError(waitroom.Errorf(waitroom.EInternal, "this server cannot stream")))
		return
	}
	// The caps come before any store call: a refused connect costs the store
	// nothing, and a burst of them cannot hold more streams than the caps.
	// They count the limiter's address: behind a trusted proxy the client's.
	slot, err := e.caps.acquire(r.Context(), room, who.User, who.Address)
	if err != nil {
		if r.Context().Err() == nil { // else the client is gone: nobody to answer
			httpapi.WriteHTTP(w, httpapi.CallerError(err))
		}
		return
	}
	defer e.caps.release(slot)
	// Subscribe before the first read, so that no admission between the two is missed.
	sub := e.hub.subscribe(room)
	defer e.hub.unsubscribe(sub)
	// Connecting is limited like a poll (the stream's own re-reads are not:
	// the server, not the client, decides them).
	caller := httpapi.CallerIn(room, who)
	st, place, err := e.seat(r.Context(), room, caller)
	if err != nil {
		httpapi.WriteHTTP(w, httpapi.CallerError(err))
		return
	}
	first := e.api.StandingAnswer(room, st, who)
	for _, c := range first.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	// The connection ends with the stream: the write deadlines below stay
	// on the connection, and would cut a next response on it.
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusOK)
	s := &stream{w: w, rc: http.NewResponseController(w), timeout: orDefault(e.writeTimeout, streamWriteTimeout), replaced: slot.replaced}
	if !s.send(first.Body, st) {
		return
	}
	e.follow(r.Context(), s, sub, who, room, st, place)
}

// follow sends the standing as the room's front moves, until the visitor
// leaves the line (READY, NOT_IN_QUEUE or CLOSED), the client goes, the
// stream's life is over, a newer stream of the visitor in the room replaces
// it, or the server shuts down. A new message of the operator is sent at
// the reading that brings it.
func (e *events) follow(ctx context.Context, s *stream, sub *subscription, who httpapi.Identity, room string, first waitroom.Standing, place waitroom.Place) {
	keepAlive := time.NewTicker(orDefault(e.keepAlive, keepAliveEvery))
	defer keepAlive.Stop()
	life := time.NewTimer(orDefault(e.life, e.api.StreamLife(maxStreamLife)))
	defer life.Stop()
	sent, sentMsg, sentAt := first.Position, first.Message, time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.done:
			return
		case <-life.C:
			return
		case <-s.replaced: // the page reconnects through position, as at any end
			s.comment("replaced by a newer stream")
			return
		case <-keepAlive.C:
			if !s.comment("keep-alive") {
				return
			}
		case f := <-sub.ch:
			if f.err != nil { // the store is down: keep the stream, say nothing new
				continue
			}
			st, ok := e.standing(ctx, f, room, httpapi.CallerIn(room, who), &place)
			if !ok || st.Status == waitroom.Waiting && st.Message == sentMsg && (st.Position == sent || time.Since(sentAt) < positionEvery) {
				continue
			}
			if !s.send(e.api.StandingAnswer(room, st, who).Body, st) {
				return
			}
			sent, sentMsg, sentAt = st.Position, st.Message, time.Now()
		}
	}
}

// standing is the visitor's standing after reading f: computed from the
// front while the visitor is behind it (in a closed room CLOSED, whatever
// the room's settings: a visitor the front has not passed was never
// admitted, so holds no token), else read again from the store (admitted,
// gone, or a room whose answers need the store: place.FromFront false).
// ok is false when the store cannot say.
func (e *events) standing(ctx context.Context, f front, room string, c waitroom.Caller, place *waitroom.Place) (waitroom.Standing, bool) {
	behind := place.Seq > 0 && !f.Empty && f.Seq <= place.Seq
	switch {
	case behind && f.Closed:
		return waitroom.Standing{Status: waitroom.Closed, Message: f.Message}, true
	case behind && place.FromFront:
		return waitroom.Standing{Status: waitroom.Waiting, Position: place.Seq - f.Seq + 1, Message: f.Message}, true
	}
	// The server's re-read, not limited: the caller's place as it came (an
	// anonymous visitor's is all there is of it, and claims its turn).
	re := waitroom.Unlimited(c.User)
	re.Anonymous, re.Place, re.PlaceAt = c.Anonymous, c.Place, c.PlaceAt
	st, next, err := e.seat(ctx, room, re)
	if err != nil {
		return st, false
	}
	*place = next
	return st, true
}

func (e *events) seat(ctx context.Context, room string, c waitroom.Caller) (waitroom.Standing, waitroom.Place, error) {
	ctx, cancel := context.WithTimeout(ctx, httpapi.DefaultStoreTimeout)
	defer cancel()
	return e.seats.Seat(ctx, room, c)
}

// orDefault is d, or def when d is not set.
func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

type stream struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	timeout  time.Duration // for each write
	replaced <-chan struct{}
}

// send writes one standing event; it reports false when the stream is to
// end, after READY, NOT_IN_QUEUE or CLOSED, or on a write error.
func (s *stream) send(body string, st waitroom.Standing) bool {
	return s.write("event: standing\ndata: %s\n\n", body) && st.Status == waitroom.Waiting
}

func (s *stream) comment(text string) bool {
	return s.write(": %s\n\n", text)
}

// write sends one event or comment at once, within the stream's timeout.
func (s *stream) write(format string, args ...any) bool {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout)) // a server without deadlines: unbounded, as before
	if _, err := fmt.Fprintf(s.w, format, args...); err != nil {
		return false
	}
	return s.rc.Flush() == nil
}
