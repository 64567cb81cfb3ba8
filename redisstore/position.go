package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
)

// Position reads where the user stands: one script, one round trip. With
// OPEN_ROOMS the room's registration travels in the same pipeline, as in
// Enter: a registration lost after an enter (a failed SADD, a retried
// script) is healed by the waiting user's next poll, so admission never
// forgets a room someone waits in. Operator-created rooms are never
// forgotten, so closed stores need none.
func (s *Store) Position(ctx context.Context, room string, c waitroom.Caller) (waitroom.Standing, error) {
	if err := checkUser(c.User); err != nil {
		return waitroom.Standing{}, err
	}
	args, err := s.positionArgs(room, c)
	if err != nil {
		return waitroom.Standing{}, waitroom.Unavailable(err)
	}
	reply, err := s.runPosition(ctx, room, roomKeys(room).positionKeys(c.User), args)
	if err != nil {
		return waitroom.Standing{}, waitroom.Unavailable(err)
	}
	return standing(room, reply)
}

// runPosition runs position.lua, in one pipeline with the room's
// registration when rooms are open (see Position).
func (s *Store) runPosition(ctx context.Context, room string, keys []string, args []any) ([]any, error) {
	if !s.openRooms {
		return s.scripts.position.run(ctx, s.rdb, keys, args...).Slice()
	}
	var res *redis.Cmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		res = s.scripts.position.evalSha(ctx, p, keys, args...)
		p.SAdd(ctx, roomsKey, room)
		return nil
	})
	if isNoScript(err) {
		res = s.scripts.position.run(ctx, s.rdb, keys, args...)
		err = res.Err()
	}
	if err != nil {
		return nil, err
	}
	return res.Slice()
}

// positionArgs are position.lua's arguments for c, Position's and Seat's:
// the token a claim issues is drawn for every call, used by the few that
// claim (claim.lua).
func (s *Store) positionArgs(room string, c waitroom.Caller) ([]any, error) {
	token, err := s.randomToken()
	if err != nil {
		return nil, err
	}
	return append(s.limited(c, []any{c.User}, callerBuckets), c.Place, c.PlaceAt.UnixMilli(), accountField(c), room+"."+token), nil
}

// positionKeys are position.lua's keys, Position's and Seat's.
func (r roomKeys) positionKeys(user string) []string {
	return []string{r.settings(), r.line(), r.record(user), r.budget(), r.live(), r.account(user), r.batches(), r.unclaimed(), r.mark(user)}
}

// answerLen is the length of room.lua's answer: kind, two values, then the
// room as the script saw it (its hot field: the rate, the flags, the
// opening and the message; hot.go), 2 when stalled, else 0, the room's
// page (” but in enter's answers) and a waiting place's number.
const answerLen = 7

// standing decodes the answers of enter.lua and position.lua.
func standing(room string, reply []any) (waitroom.Standing, error) {
	if reply[0] == "NOROOM" {
		return waitroom.Standing{}, waitroom.Errorf(waitroom.ERoomNotFound, "there is no room %q", room)
	}
	if reply[0] == "LIMITED" {
		return waitroom.Standing{}, limitedError(reply)
	}
	if len(reply) != answerLen {
		return waitroom.Standing{}, waitroom.Unavailable(malformed("script", reply))
	}
	hot, _ := reply[3].(string)
	r, err := decodeHot(hot)
	if err != nil {
		return waitroom.Standing{}, waitroom.Unavailable(err)
	}
	stalled, _ := reply[4].(int64)
	st := waitroom.Standing{RatePerSec: r.rate, Paused: r.has(hotPaused), Stalled: stalled&hotStalled != 0,
		Adaptive: r.has(hotAdaptive), Message: r.message, ClaimWindow: r.claimWindow()}
	if r.opensAtMs > 0 {
		st.OpensAt = time.UnixMilli(r.opensAtMs).UTC()
	}
	page, _ := reply[5].(string)
	if st.Page, err = decodePage(page); err != nil {
		return waitroom.Standing{}, waitroom.Unavailable(err)
	}
	switch reply[0] {
	case "READY":
		rec, _ := reply[1].(string)
		token, expiresAt, issuedAt, err := parseRecord(rec)
		if err != nil {
			return waitroom.Standing{}, waitroom.Unavailable(err)
		}
		st.Status, st.Token, st.ExpiresAt, st.IssuedAt = waitroom.Ready, token, expiresAt, issuedAt
		st.Number, _ = reply[6].(int64) // an admission at enter's number (instant.lua's admitNow)
	case "WAITING":
		st.Status = waitroom.Waiting
		st.Position, _ = reply[1].(int64)
		st.Number, _ = reply[6].(int64)
	case "PREQUEUE":
		st.Status = waitroom.PreQueue
	case "NOT_IN_QUEUE":
		st.Status = waitroom.NotInQueue
	case "CLOSED":
		st.Status = waitroom.Closed
	default:
		return waitroom.Standing{}, waitroom.Unavailable(malformed("script", reply))
	}
	return st, nil
}

// A token record is "<expiresAtUnixMs>:<issuedAtUnixMs>:<token>" (admit.lua's
// admitTokens, instant.lua's admitNow).
func parseRecord(rec string) (token string, expiresAt, issuedAt time.Time, err error) {
	parts := strings.Split(rec, ":")
	if len(parts) != 3 || parts[2] == "" {
		return "", time.Time{}, time.Time{}, fmt.Errorf("malformed token record (%d bytes)", len(rec)) // never the token itself
	}
	exp, eerr := strconv.ParseInt(parts[0], 10, 64)
	iat, ierr := strconv.ParseInt(parts[1], 10, 64)
	if eerr != nil || ierr != nil {
		return "", time.Time{}, time.Time{}, fmt.Errorf("malformed token record (%d bytes)", len(rec))
	}
	return parts[2], time.UnixMilli(exp).UTC(), time.UnixMilli(iat).UTC(), nil
}
