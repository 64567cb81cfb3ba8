package httpapi_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// A check that failed leaves no lock behind. The gate answers 503 and
// calls nobody, so a lock its check took would only refuse the user's
// retries with 409 order_in_progress until the token expired: the token
// lost to an outage the answer said to wait out. Found by the failover
// benchmark (cluster, DURABLE_WRITES=wait): visitors held a token they
// could never use, their lock given up once, on a pool that had no
// connection free. Two ways in: the check's reply is lost after the store
// took the lock (any mode), and the first try to give an unreplicated lock
// up fails (DURABLE_WRITES=wait, redis-server only: the embedded store has
// no WAIT). A check whose call never left (the connection refused) took
// nothing, and its 503 does not wait for a release.
func TestAFailedCheckLeavesNoLock(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		t.Run("reply lost", func(t *testing.T) {
			h := newHarness(t, engine)
			tokens := h.admitted(t, "u")
			h.faults(t, 1, 0)
			wantError(t, h.order("u", tokens["u"], "K", `{"sku":"tv"}`), 503, "unavailable")
			h.wantNoLock(t, "u")
			if r := h.order("u", tokens["u"], "K", `{"sku":"tv"}`); r.StatusCode != 201 {
				t.Fatalf("the retry after the 503: %d %s, want 201", r.StatusCode, r.Body)
			}
		})
		t.Run("the store refused the connection", func(t *testing.T) {
			h := newHarness(t, engine)
			tokens := h.admitted(t, "u")
			f := h.faults(t, 0, 0)
			h.redis.Stop()
			defer h.redis.Restart()
			wantError(t, h.order("u", tokens["u"], "K", `{"sku":"tv"}`), 503, "unavailable")
			if n := f.unlocks.Load(); n != 0 {
				t.Fatalf("%d releases of a lock no check could have taken (its call never left): the 503 waited for them", n)
			}
		})
		if engine.Embedded() {
			return
		}
		t.Run("unreplicated, its first unlock failed", func(t *testing.T) {
			h := newHarness(t, engine, func(c *waitroom.Config) { c.DurableWrites = waitroom.DurableWait })
			tokens := h.admitted(t, "u")
			h.faults(t, 0, 1)
			wantError(t, h.order("u", tokens["u"], "K", `{"sku":"tv"}`), 503, "unavailable")
			h.wantNoLock(t, "u")
		})
	})
}

// faults puts the gate on a store whose client loses the replies of the
// first loseBegin order checks and fails the first failUnlock releases.
func (h *harness) faults(t *testing.T, loseBegin, failUnlock int32) *lockFaults {
	t.Helper()
	f := &lockFaults{}
	f.loseBegin.Store(loseBegin)
	f.failUnlock.Store(failUnlock)
	rdb, err := redisstore.NewClient(h.cfg, redisstore.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	rdb.AddHook(f)
	h.api.Queue = redisstore.New(rdb, h.cfg)
	return f
}

func (h *harness) wantNoLock(t *testing.T, user string) {
	t.Helper()
	keys, err := h.redis.Client().Keys(context.Background(), "wr:*lock*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) > 0 {
		t.Fatalf("%s's order lock is left after a 503 (%v): its retries meet 409 order_in_progress until the token expires", user, keys)
	}
}

// lockFaults loses the reply of the first loseBegin order checks (the
// script ran) and fails the first failUnlock lock releases (the script
// never ran), as a store the gate lost its connection to, or a pool with
// no connection free, does.
type lockFaults struct {
	loseBegin, failUnlock atomic.Int32
	unlocks               atomic.Int32 // releases tried
}

// errFault is a read that timed out: the command left, its reply never came.
var errFault = &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}

func (f *lockFaults) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f *lockFaults) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		script := scriptOf(cmd)
		if script == "unlock" {
			f.unlocks.Add(1)
		}
		if script == "unlock" && f.failUnlock.Add(-1) >= 0 {
			cmd.SetErr(errFault)
			return errFault
		}
		err := next(ctx, cmd)
		if script == "begin" && err == nil && f.loseBegin.Add(-1) >= 0 {
			return lose(cmd)
		}
		return err
	}
}

func (f *lockFaults) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if scriptOf(cmd) == "begin" && err == nil && f.loseBegin.Add(-1) >= 0 {
				err = lose(cmd)
			}
		}
		return err
	}
}

// lose makes cmd's reply one that never came: no value, an error.
func lose(cmd redis.Cmder) error {
	if c, ok := cmd.(interface{ SetVal(any) }); ok {
		c.SetVal(nil)
	}
	cmd.SetErr(errFault)
	return errFault
}

// scriptOf names the gate's script a command runs by its keys: the order
// check's second key is the user's lock (order_begin.lua), a release's
// first (unlock.lua).
func scriptOf(cmd redis.Cmder) string {
	args := cmd.Args()
	if name := strings.ToLower(cmd.Name()); (name != "evalsha" && name != "eval") || len(args) < 5 {
		return ""
	}
	switch {
	case strings.Contains(fmt.Sprint(args[3]), ":lock:"):
		return "unlock"
	case strings.Contains(fmt.Sprint(args[4]), ":lock:"):
		return "begin"
	}
	return ""
}
