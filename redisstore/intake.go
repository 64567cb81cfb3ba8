package redisstore

import (
	"context"
	_ "embed"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
)

var (
	//go:embed apply_head.lua
	applyHead string
	//go:embed apply_tail.lua
	applyTail string

	// applyScript wraps enter.lua itself, so that an applied entry joins the
	// line exactly as a direct enter does.
	applyScript = redis.NewScript(applyHead + enterLua + "\n" + applyTail)
)

var _ waitroom.Applier = (*Store)(nil)

// applied names the record of the last entry applied for user; the user's
// length comes first because a user id may contain ':'.
func (r roomKeys) applied(user string) string {
	return r.key("applied:" + strconv.Itoa(len(user)) + ":" + user)
}

// Apply puts an accepted entry in line, as Enter does, unless an entry of the
// same user accepted at the same time or later was applied already: the
// check, the enter and the record are one script, so a redelivered entry is
// never applied twice, whatever happened to the consumer in between.
func (s *Store) Apply(ctx context.Context, e waitroom.Entry, keep time.Duration) (waitroom.Standing, bool, error) {
	k := roomKeys(e.Room)
	keys := []string{k.line(), k.seq(), k.token(e.User), k.marks(), k.lastMark(), k.applied(e.User)}
	args := []any{e.User, s.capacity, e.AcceptedAt.UnixMicro(), keep.Milliseconds()}
	var res *redis.Cmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		res = applyScript.EvalSha(ctx, p, keys, args...)
		p.SAdd(ctx, roomsKey, e.Room)
		return nil
	})
	if isNoScript(err) {
		res = applyScript.Run(ctx, s.rdb, keys, args...)
		err = res.Err()
	}
	if err != nil {
		return waitroom.Standing{}, false, waitroom.Unavailable(err)
	}
	reply, err := res.Slice()
	switch {
	case err != nil:
		return waitroom.Standing{}, false, waitroom.Unavailable(err)
	case reply[0] == "APPLIED":
		return waitroom.Standing{}, true, nil
	case reply[0] == "FULL":
		return waitroom.Standing{}, false, queueFull(e.Room)
	}
	st, err := standing(reply)
	st.Joined = len(reply) == 3 && reply[2] == int64(1)
	if err == nil && st.Joined && st.Position == 1 { // as Enter: register after the insert too
		if err := s.rdb.SAdd(ctx, roomsKey, e.Room).Err(); err != nil {
			return waitroom.Standing{}, false, waitroom.Unavailable(err)
		}
	}
	return st, false, err
}

// LastApplied reads the record Apply keeps of user's last applied entry.
func (s *Store) LastApplied(ctx context.Context, room, user string) (waitroom.Applied, bool, error) {
	rec, err := s.rdb.Get(ctx, roomKeys(room).applied(user)).Result()
	switch {
	case err == redis.Nil:
		return waitroom.Applied{}, false, nil
	case err != nil:
		return waitroom.Applied{}, false, waitroom.Unavailable(err)
	}
	us, full := strings.CutSuffix(rec, ":full")
	n, err := strconv.ParseInt(us, 10, 64)
	if err != nil {
		return waitroom.Applied{}, false, waitroom.Unavailable(err)
	}
	return waitroom.Applied{AcceptedAt: time.UnixMicro(n), Full: full}, true, nil
}
