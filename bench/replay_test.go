package bench

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// recorder is a go-redis hook that keeps the script calls (EVALSHA, or
// the EVAL that loads a script) a client makes, as EVALSHA command lines:
// the benchmarks replay exactly what the store sends, whatever its keys
// and arguments become, instead of a copy of its layout that drifts.
type recorder struct {
	mu    sync.Mutex
	calls [][]string
}

func (r *recorder) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *recorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.keep(cmd)
		return next(ctx, cmd)
	}
}

func (r *recorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			r.keep(c)
		}
		return next(ctx, cmds)
	}
}

func (r *recorder) keep(cmd redis.Cmder) {
	args := make([]string, len(cmd.Args()))
	for i, a := range cmd.Args() {
		args[i] = fmt.Sprint(a)
	}
	switch strings.ToUpper(args[0]) {
	case "EVAL":
		sum := sha1.Sum([]byte(args[1]))
		args[0], args[1] = "EVALSHA", hex.EncodeToString(sum[:])
	case "EVALSHA":
		args[0] = "EVALSHA"
	default:
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.calls); n > 0 && strings.Join(r.calls[n-1], "\x00") == strings.Join(args, "\x00") {
		return // the EVAL after a NOSCRIPT EVALSHA: one call
	}
	r.calls = append(r.calls, args)
}

// recordCalls runs call on a client whose script calls are recorded and returns
// them, each with every occurrence of user replaced by template (say
// "u__rand_int__" for uid("u", 0): redis-benchmark draws a 12-digit number;
// user "": the calls as made, for a call of no user's).
func recordCalls(tb testing.TB, c *redis.Client, user, template string, call func(*redis.Client) error) [][]string {
	tb.Helper()
	r := &recorder{}
	rc := redis.NewClient(c.Options())
	defer rc.Close()
	rc.AddHook(r)
	if err := call(rc); err != nil {
		tb.Fatal(err)
	}
	if len(r.calls) == 0 {
		tb.Fatal("the call made no script call")
	}
	for _, args := range r.calls {
		for i := range args {
			if user == "" {
				break
			}
			args[i] = strings.ReplaceAll(args[i], user, template)
		}
	}
	return r.calls
}

// The recorder replays what the store sends: a recorded position call,
// run again as recorded for another user, answers as the store would, on
// each engine the tests run (the benchmarks replay through redis-benchmark).
// An account's record is found by a digest of its id (its bucket and field:
// redisstore's line.lua), which the template does not rewrite: the replay
// reads the recorded account's record, as costly as any other's, and
// answers its place.
func TestRecordedCallsReplay(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		c := engine.Start(t).Client()
		ctx := context.Background()
		fillLine(t, c, "bench", "u", 0, 3)
		calls := recordCalls(t, c, uid("u", 2), "u__rand_int__", func(rc *redis.Client) error {
			_, err := redisstore.New(rc, config()).Position(ctx, "bench", waitroom.Unlimited("h:"+uid("u", 2)))
			return err
		})
		args := make([]any, 0, len(calls[0]))
		for _, a := range calls[0] {
			args = append(args, strings.ReplaceAll(a, "u__rand_int__", uid("u", 1)))
		}
		reply, err := c.Do(ctx, args...).Slice()
		if err != nil || reply[0] != "WAITING" || reply[1] != int64(3) {
			t.Fatalf("replayed position of u…1: %v %v, want WAITING at 3 (u…2's record)", reply, err)
		}
	})
}
