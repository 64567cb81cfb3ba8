package redisstore

import (
	"context"
	"strconv"
	"time"

	"github.com/waitroom/waitroom"
)

// limited appends the abuse limiter's two bucket keys and four limits to a
// script call (ratelimit.lua). The buckets are in the room's hash slot, as
// every key of a script must be on a cluster: a caller's budget is per
// room (docs/security.md, "Floods across rooms"). Without a caller in ctx
// the limits are 0: admission, tools and benchmarks are not limited.
func (s *Store) limited(ctx context.Context, k roomKeys, keys []string, args []any) ([]string, []any) {
	c, ok := waitroom.CallerOf(ctx)
	l := s.limits
	if !ok {
		l = waitroom.Limits{}
	}
	clientRate, ipRate := l.ClientRatePerSec, l.IPRatePerSec
	if c.ID == "" {
		clientRate = 0
	}
	if c.IP == "" {
		ipRate = 0
	}
	// The id's length first: an id may contain ':' (any printable ASCII).
	keys = append(keys, k.key("rl:c:"+strconv.Itoa(len(c.ID))+":"+c.ID), k.key("rl:ip:"+c.IP))
	args = append(args, clientRate, l.ClientBurst, ipRate, l.IPBurst)
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
