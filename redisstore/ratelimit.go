package redisstore

import (
	"context"
	"strconv"
	"time"

	"github.com/waitroom/waitroom"
)

// limited appends the abuse limiter's three bucket keys and six limits to
// a script call (ratelimit.lua): the caller's identity, its source address
// (an IPv6 address by its /64: waitroom.SourceAddress), and the new
// visitors of that address, charged only by an enter that makes one. The
// buckets are in the room's hash slot, as every key of a script must be on
// a cluster: a caller's budget is per room (docs/security.md, "Floods
// across rooms"). Without a caller in ctx the limits are 0: admission,
// tools and benchmarks are not limited.
func (s *Store) limited(ctx context.Context, k roomKeys, keys []string, args []any) ([]string, []any) {
	c, ok := waitroom.CallerOf(ctx)
	l := s.limits
	if !ok {
		l = waitroom.Limits{}
	}
	clientRate, ipRate, visitorRate := l.ClientRatePerSec, l.IPRatePerSec, l.VisitorRatePerSec
	if c.ID == "" {
		clientRate = 0
	}
	addr := waitroom.SourceAddress(c.IP)
	if addr == "" {
		ipRate, visitorRate = 0, 0
	}
	if !c.NewVisitor {
		visitorRate = 0
	}
	// GCRA buckets (strings); "gcra:" keeps them apart from the hashes of
	// the limiter before it. The id's length first: an id may contain ':'.
	keys = append(keys, k.key("gcra:c:"+strconv.Itoa(len(c.ID))+":"+c.ID), k.key("gcra:a:"+addr), k.key("gcra:v:"+addr))
	args = append(args, clientRate, l.ClientBurst, ipRate, l.IPBurst, visitorRate, l.VisitorBurst)
	return keys, args
}

// limitedError reads {'LIMITED', ms} into a rate_limited error.
func limitedError(reply []any) error {
	ms, _ := reply[1].(int64)
	if len(reply) != 2 {
		return waitroom.Unavailable(malformed("limiter", reply))
	}
	return waitroom.RateLimited(time.Duration(ms) * time.Millisecond)
}

// Admissible makes the checks an enter makes before it touches the line,
// for an entry about to go to the broker: the room exists, and the caller in
// ctx is within the limiter (new visitors' bucket included). failedOpen: the
// limiter could not run and let the call through.
func (s *Store) Admissible(ctx context.Context, room string) (failedOpen bool, err error) {
	k := roomKeys(room)
	keys, args := s.limited(ctx, k, []string{k.settings()}, s.args())
	reply, err := acceptScript.Run(ctx, s.rdb, keys, args...).Slice()
	switch {
	case err != nil:
		return false, waitroom.Unavailable(err)
	case reply[0] == "NOROOM":
		return false, waitroom.Errorf(waitroom.ERoomNotFound, "there is no room %q", room)
	case reply[0] == "LIMITED":
		return false, limitedError(reply)
	case reply[0] != "OK" || len(reply) != 2:
		return false, waitroom.Unavailable(malformed("accept", reply))
	}
	return reply[1] == int64(1), nil
}
