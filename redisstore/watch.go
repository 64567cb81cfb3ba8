package redisstore

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"github.com/waitroom/waitroom"
)

// A line only loses users at its front (admission pops the lowest sequence
// numbers) and every join takes the next sequence number, so the line holds
// every number from its front to its back: a waiting user's position is
// their sequence number minus the front's, plus one. Live streams read the
// front once per room and interval and compute every stream's position from
// it, instead of asking the store once per stream.

// Seat is Position plus, while waiting, the place: its sequence number, and
// whether the position can be computed from the front (not in a room with
// stored settings: its answers depend on them; a pre-queue has no place, its
// numbers are not whole), else the stream reads the seat again at every move.
func (s *Store) Seat(ctx context.Context, room string, c waitroom.Caller) (waitroom.Standing, waitroom.Place, error) {
	if err := checkUser(c.User); err != nil {
		return waitroom.Standing{}, waitroom.Place{}, err
	}
	args, err := s.positionArgs(room, c)
	if err != nil {
		return waitroom.Standing{}, waitroom.Place{}, waitroom.Unavailable(err)
	}
	reply, err := s.scripts.position.run(ctx, s.rdb, roomKeys(room).positionKeys(c.User), append(args, "seat")...).Slice()
	if err != nil {
		return waitroom.Standing{}, waitroom.Place{}, waitroom.Unavailable(err)
	}
	if reply[0] == "WAITING" && len(reply) == answerLen+2 {
		seq, _ := reply[answerLen].(int64)
		st, err := standing(room, reply[:answerLen])
		return st, waitroom.Place{Seq: seq, FromFront: reply[answerLen+1] == int64(1)}, err
	}
	st, err := standing(room, reply)
	return st, waitroom.Place{}, err
}

// Front reads the front of room's line (the sequence number at its front;
// Empty when there is none), whether the room is closed and its message,
// in one script.
func (s *Store) Front(ctx context.Context, room string) (waitroom.Front, error) {
	k := roomKeys(room)
	reply, err := frontScript.run(ctx, s.rdb, k.frontKeys()).Slice()
	if err == nil && len(reply) != 2 {
		err = malformed("front", reply)
	}
	var r hotRoom
	if err == nil && reply[1] != "" { // "": no stored settings
		hot, _ := reply[1].(string)
		r, err = decodeHot(hot)
	}
	if err != nil {
		return waitroom.Front{}, waitroom.Unavailable(fmt.Errorf("front of %s: %w", room, err))
	}
	seq, _ := reply[0].(int64)
	return waitroom.Front{Seq: seq, Empty: seq < 0, Closed: r.has(hotClosed), Message: r.message}, nil
}

// View reads room's front and the room in one command, since every
// process reads it every waitroom.ViewMaxAge: an HMGET of the room's hash,
// which holds beside the settings ('hot', 'page') the front's copy
// (line.lua), the line's start ('since': enter.lua), and admission's last
// batch and whether live tokens fill maxActive ('batch', 'full': admit.lua).
func (s *Store) View(ctx context.Context, room string) (waitroom.View, error) {
	k := roomKeys(room)
	fields, err := s.rdb.HMGet(ctx, k.settings(), "hot", "front", "page", "since", "batch", "full", "next").Result()
	if err != nil {
		return waitroom.View{}, waitroom.Unavailable(err)
	}
	hot, stored := fields[0].(string)
	if !stored && !s.openRooms {
		return waitroom.View{}, waitroom.Errorf(waitroom.ERoomNotFound, "there is no room %q", room)
	}
	if !stored {
		hot = s.rooms[1:] // roomsArg: OPEN_ROOMS's flag, then the default room's hot field
	}
	r, err := decodeHot(hot)
	if err != nil {
		return waitroom.View{}, waitroom.Unavailable(fmt.Errorf("view of %s: %w", room, err))
	}
	v := waitroom.View{RatePerSec: r.rate, Paused: r.has(hotPaused), Closed: r.has(hotClosed), Adaptive: r.has(hotAdaptive),
		Message: r.message, Full: r.maxActive > 0 && fields[5] == "1", ClaimWindow: r.claimWindow()}
	if r.opensAtMs > 0 {
		v.OpensAt = time.UnixMilli(r.opensAtMs).UTC()
	}
	// The front: negative while the sorted set may hold anyone (positions
	// are then not exact); none (0) while nobody waits, the front at the
	// counter's next number, or before the counter is born (line.lua).
	front, _ := strconv.ParseInt(fmt.Sprint(fields[1]), 10, 64)
	next, _ := strconv.ParseInt(fmt.Sprint(fields[6]), 10, 64)
	v.Front, v.Exact = max(front, -front), front > 0
	if v.Exact && front >= next {
		v.Front = 0
	}
	v.Since, v.LastBatch = micros(fields[3]), micros(fields[4])
	page, _ := fields[2].(string)
	if v.Page, err = decodePage(page); err != nil {
		return waitroom.View{}, waitroom.Unavailable(fmt.Errorf("view of %s: %w", room, err))
	}
	return v, nil
}

// micros reads a time the scripts store in microseconds ("at", "since");
// zero when absent.
func micros(stored any) time.Time {
	us, err := strconv.ParseInt(fmt.Sprint(stored), 10, 64)
	if err != nil || us <= 0 {
		return time.Time{}
	}
	return time.UnixMicro(us)
}

// frontKeys are front.lua's keys, in the order its top names them.
func (r roomKeys) frontKeys() []string { return []string{r.settings(), r.line()} }
