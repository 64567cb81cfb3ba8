package redisstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
)

// Enter joins the line in one round trip: the script and, with OPEN_ROOMS,
// the room's registration for admission travel in one pipeline
// (re-registering on every enter heals a registration lost to an error;
// operator-created rooms stay registered, so closed rooms need none, and
// an unknown room then writes nothing at all). The first user of an empty
// line registers the room once more after the script has answered: on a
// cluster the pipeline's two commands go to two nodes in no set order, and
// forgetRoom, which re-checks the line after unregistering a room, must never
// miss a user this enter put in line.
func (s *Store) Enter(ctx context.Context, room string, c waitroom.Caller) (waitroom.Standing, error) {
	if err := checkUser(c.User); err != nil {
		return waitroom.Standing{}, err
	}
	reply, err := s.runEnter(ctx, s.scripts.enter, room, c, nil)
	if err != nil {
		return waitroom.Standing{}, waitroom.Unavailable(err)
	}
	return s.entered(ctx, room, reply)
}

// runEnter runs enter.lua, or a script that wraps it (Apply), with enter's
// keys and arguments for c followed by extraKeys and extraArgs. Its errors
// are the store's, for the caller to report unavailable.
func (s *Store) runEnter(ctx context.Context, script *luaScript, room string, c waitroom.Caller, extraKeys []string, extraArgs ...any) ([]any, error) {
	user := c.User
	draw, err := s.draw()
	if err != nil {
		return nil, err
	}
	k := roomKeys(room)
	// The token an instant admission issues (instant.lua's admitNow): drawn
	// for every enter, used by the few that find nobody waiting.
	token, err := s.randomToken()
	if err != nil {
		return nil, err
	}
	ms, challenge := challengeOf(c, k)
	keys := k.enterKeys(user, challenge)
	args := append(s.limited(c, []any{user, draw}, visitorBuckets), ms, room+"."+token, c.Place, c.PlaceAt.UnixMilli(), accountField(c))
	keys, args = append(keys, extraKeys...), append(args, extraArgs...)
	var res *redis.Cmd
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		res = script.evalSha(ctx, p, keys, args...)
		if s.openRooms {
			p.SAdd(ctx, roomsKey, room)
		}
		return nil
	})
	if isNoScript(err) { // the node lost its script cache
		res = script.run(ctx, s.rdb, keys, args...)
		err = res.Err()
	}
	if err != nil {
		return nil, err
	}
	reply, err := res.Slice()
	if err != nil {
		return nil, err
	}
	return reply, nil
}

// entered decodes enter.lua's answer and registers the room after the
// first user of an empty line (see Enter).
func (s *Store) entered(ctx context.Context, room string, reply []any) (waitroom.Standing, error) {
	if reply[0] == "LIMITED" {
		return waitroom.Standing{}, limitedError(reply)
	}
	if reply[0] == "FULL" {
		return waitroom.Standing{}, queueFull(room)
	}
	if reply[0] == "SPENT" {
		return waitroom.Standing{}, spentError()
	}
	st, err := standing(room, reply)
	if err != nil {
		return st, err
	}
	st.Joined = reply[2] == int64(1)
	st.AdmittedNow = st.Status == waitroom.Ready && (reply[2] == int64(2) || reply[2] == int64(3))
	// The first user of an empty line, or the room's only live token: the
	// room may have been unregistered (see Enter), and admission must visit
	// it to prune the token and expire the room's keys.
	if st.Joined && reply[1] == int64(1) || st.Status == waitroom.Ready && reply[2] == int64(3) {
		if err := s.rdb.SAdd(ctx, roomsKey, room).Err(); err != nil {
			return waitroom.Standing{}, waitroom.Unavailable(err)
		}
	}
	return st, nil
}

func queueFull(room string) error {
	return &waitroom.Error{Code: waitroom.EQueueFull,
		Message: fmt.Sprintf("the line of room %q is full, please retry later", room), RetryAfter: 10 * time.Second}
}

// draw is a pre-queue place: uniform in (0, 1), never either end, from
// the store's random source so that no visitor can choose it.
func (s *Store) draw() (float64, error) {
	var b [4]byte
	if _, err := io.ReadFull(s.random, b[:]); err != nil {
		return 0, err
	}
	return (float64(binary.BigEndian.Uint32(b[:])) + 0.5) / (1 << 32), nil
}

// enterKeys are enter.lua's keys (and apply.lua's first), in the order its
// top names them; a solved challenge's record follows them.
func (r roomKeys) enterKeys(user string, challenge []string) []string {
	return append([]string{r.settings(), r.line(), r.record(user), r.marks(), r.budget(), r.live(), r.admits(), r.account(user),
		r.batches(), r.unclaimed(), r.mark(user)}, challenge...)
}
