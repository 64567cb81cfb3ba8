package redistest

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// RoundTrips is a go-redis hook (AddHook) that counts what a client sends:
// one per command, one per pipeline; the connection's HELLO is setup, not
// an operation's.
type RoundTrips struct{ n atomic.Int64 }

// Count is the round trips so far.
func (r *RoundTrips) Count() int64 { return r.n.Load() }

func (r *RoundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *RoundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !strings.EqualFold(cmd.Name(), "hello") {
			r.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (r *RoundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
	}
}
