package redisstore

import (
	"context"
	"crypto/sha1"
	"encoding/hex"

	"github.com/redis/go-redis/v9"
)

// luaScript is one of the store's Lua scripts. Its calls are sent once.
//
// go-redis sends a command again when its reply does not come (a read
// timeout, a connection dropped after the write; in a cluster once more on
// the node and again on another). A script's call may have run by then, and
// most of the store's scripts are not idempotent: a poll takes its caller's
// limiter tokens, an admission a batch, an order its lock and its limiter's
// token. Sent again, a late poll took two tokens, a late admission a second
// batch (within the room's budget, but not the batch the admitter saw). So a
// call whose reply is late fails (the caller answers 503 with Retry-After,
// the admitter tries at its next tick), as any other call the store cannot
// answer, and it ran at most once. go-redis still sends it again when it
// knows the first never left (a connection it closed before writing), and
// plain commands (GET, SADD) keep their retry: they are idempotent.
type luaScript struct{ src, sha string }

func newScript(src string) *luaScript {
	sum := sha1.Sum([]byte(src))
	return &luaScript{src: src, sha: hex.EncodeToString(sum[:])}
}

// processor is a client or a pipeline.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// once is a command go-redis does not send a second time (NoRetry).
type once struct{ *redis.Cmd }

func (once) NoRetry() bool { return true }

// evalSha runs the script by its hash on c, or queues it when c is a
// pipeline.
func (s *luaScript) evalSha(ctx context.Context, c processor, keys []string, args ...any) *redis.Cmd {
	return s.call(ctx, c, "evalsha", s.sha, keys, args)
}

// eval runs the script by its text (a node that lost its script cache).
func (s *luaScript) eval(ctx context.Context, c processor, keys []string, args ...any) *redis.Cmd {
	return s.call(ctx, c, "eval", s.src, keys, args)
}

// run runs the script by its hash, and by its text when the node has not
// cached it: a NOSCRIPT reply ran nothing.
func (s *luaScript) run(ctx context.Context, c processor, keys []string, args ...any) *redis.Cmd {
	cmd := s.evalSha(ctx, c, keys, args...)
	if isNoScript(cmd.Err()) {
		cmd = s.eval(ctx, c, keys, args...)
	}
	return cmd
}

// load caches the script on c's nodes (every master of a cluster).
func (s *luaScript) load(ctx context.Context, c redis.Scripter) error {
	return c.ScriptLoad(ctx, s.src).Err()
}

func (s *luaScript) call(ctx context.Context, c processor, name, body string, keys []string, args []any) *redis.Cmd {
	cmdArgs := make([]any, 0, 3+len(keys)+len(args))
	cmdArgs = append(cmdArgs, name, body, len(keys))
	for _, k := range keys {
		cmdArgs = append(cmdArgs, k)
	}
	cmd := redis.NewCmd(ctx, append(cmdArgs, args...)...)
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3) // a cluster routes the call by its first key
	}
	_ = c.Process(ctx, once{cmd})
	return cmd
}
