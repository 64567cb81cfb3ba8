package redisstore

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
)

// A line only loses users at its front (admission pops the lowest sequence
// numbers) and every join takes the next sequence number, so the line holds
// every number from its front to its back: a waiting user's position is
// their sequence number minus the front's, plus one. Live streams read the
// front once per room and interval and compute every stream's position from
// it, instead of asking the store once per stream.

var (
	//go:embed seat.lua
	seatLua string
	//go:embed front.lua
	frontLua string

	seatScript  = redis.NewScript(seatLua)
	frontScript = redis.NewScript(frontLua)
)

// Seat is Position plus, while waiting, the sequence number of the place.
func (s *Store) Seat(ctx context.Context, room, user string) (waitroom.Standing, int64, error) {
	k := roomKeys(room)
	reply, err := seatScript.Run(ctx, s.rdb, []string{k.line(), k.token(user)}, user).Slice()
	if err != nil {
		return waitroom.Standing{}, 0, waitroom.Unavailable(err)
	}
	if reply[0] == "WAITING" && len(reply) == 3 {
		seq, _ := reply[2].(int64)
		st, err := standing(reply[:2])
		return st, seq, err
	}
	st, err := standing(reply)
	return st, 0, err
}

// Front is the sequence number at the front of room's line; ok is false
// when the line is empty.
func (s *Store) Front(ctx context.Context, room string) (seq int64, ok bool, err error) {
	n, err := frontScript.Run(ctx, s.rdb, []string{roomKeys(room).line()}).Int64()
	if err != nil {
		return 0, false, waitroom.Unavailable(fmt.Errorf("front of %s: %w", room, err))
	}
	return n, n >= 0, nil
}
