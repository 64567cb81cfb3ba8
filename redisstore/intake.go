package redisstore

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
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
	if err := checkUser(e.User); err != nil {
		return waitroom.Standing{}, false, err
	}
	reply, err := s.runEnter(ctx, s.scripts.apply, e.Room, waitroom.Unlimited(e.User), []string{roomKeys(e.Room).applied(e.User)},
		e.AcceptedAt.UnixMicro(), keep.Milliseconds())
	if err != nil {
		return waitroom.Standing{}, false, waitroom.Unavailable(err)
	}
	if reply[0] == "APPLIED" {
		return waitroom.Standing{}, true, nil
	}
	st, err := s.entered(ctx, e.Room, reply)
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
	us, refusal, _ := strings.Cut(rec, ":")
	n, err := strconv.ParseInt(us, 10, 64)
	if err != nil {
		return waitroom.Applied{}, false, waitroom.Unavailable(err)
	}
	return waitroom.Applied{AcceptedAt: time.UnixMicro(n), Full: refusal == "FULL"}, true, nil
}
