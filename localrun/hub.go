package localrun

import (
	"context"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
)

// Seats is what live streams read from the store (redisstore.Store).
type Seats interface {
	// Seat is where c.User stands, and while waiting the sequence number of
	// the place; the abuse limiter counts c.
	Seat(ctx context.Context, room string, c waitroom.Caller) (waitroom.Standing, waitroom.Place, error)
	// Front is the sequence number at the front of room's line, and the
	// room's closed flag and message.
	Front(ctx context.Context, room string) (waitroom.Front, error)
}

// front is one reading of a line's front, fanned out to every stream of the room.
type front struct {
	waitroom.Front
	err error
}

// hub reads the front of each watched room's line once per interval and
// hands it to every stream of that room in this process: the store's load
// grows with the rooms watched, not with the streams open. An admission in
// this process (the local runner's admitter) triggers the read at once
// instead of at the next tick; admissions elsewhere are seen at the tick.
type hub struct {
	seats    Seats
	interval time.Duration
	timeout  time.Duration

	mu    sync.Mutex
	rooms map[string]*watch
}

type watch struct {
	subs map[*subscription]struct{}
	stop context.CancelFunc
	kick chan struct{} // read now
}

// subscription receives the latest front of its room; older readings are
// dropped, since only the latest matters.
type subscription struct {
	room string
	ch   chan front
}

// newHub reads every interval, each read bounded by timeout.
func newHub(seats Seats, interval, timeout time.Duration) *hub {
	return &hub{seats: seats, interval: interval, timeout: timeout, rooms: map[string]*watch{}}
}

// subscribe starts watching room (if no stream watches it yet).
func (h *hub) subscribe(room string) *subscription {
	s := &subscription{room: room, ch: make(chan front, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.rooms[room]
	if w == nil {
		ctx, stop := context.WithCancel(context.Background())
		w = &watch{subs: map[*subscription]struct{}{}, stop: stop, kick: make(chan struct{}, 1)}
		h.rooms[room] = w
		go h.read(ctx, room, w)
	}
	w.subs[s] = struct{}{}
	return s
}

// unsubscribe stops the room's reads with its last stream.
func (h *hub) unsubscribe(s *subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.rooms[s.room]
	if w == nil {
		return
	}
	delete(w.subs, s)
	if len(w.subs) == 0 {
		w.stop()
		delete(h.rooms, s.room)
	}
}

// admitted is the admitter's OnBatch: the rooms where someone was admitted
// are read at once.
func (h *hub) admitted(b waitroom.Batch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range b.Rooms {
		if w := h.rooms[r.Room]; w != nil && len(r.Admitted) > 0 {
			select {
			case w.kick <- struct{}{}:
			default:
			}
		}
	}
}

func (h *hub) read(ctx context.Context, room string, w *watch) {
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.kick:
			t.Reset(h.interval) // one read per interval, whichever came first
		}
		rctx, cancel := context.WithTimeout(ctx, h.timeout)
		read, err := h.seats.Front(rctx, room)
		cancel()
		if ctx.Err() != nil {
			return
		}
		f := front{Front: read, err: err}
		h.mu.Lock()
		for s := range w.subs {
			s.offer(f)
		}
		h.mu.Unlock()
	}
}

// offer replaces an unread reading with f; only the hub's reader sends.
func (s *subscription) offer(f front) {
	select {
	case s.ch <- f:
		return
	default:
	}
	select {
	case <-s.ch:
	default:
	}
	select {
	case s.ch <- f:
	default:
	}
}
