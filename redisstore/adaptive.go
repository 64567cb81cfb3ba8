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

// decodeWindow reads admit.lua's window values into rb: end ms (0: none),
// length ms, counters "field=count,…", the controller's state, the adaptive
// setting: what the admission loop's law needs (waitroom.RunBatch).
func decodeWindow(rb *waitroom.RoomBatch, v []any) error {
	text := func(i int) string { return fmt.Sprint(v[i]) }
	end, _ := strconv.ParseInt(text(0), 10, 64)
	if end == 0 {
		return nil
	}
	length, _ := strconv.ParseInt(text(1), 10, 64)
	w := &waitroom.Window{End: time.UnixMilli(end), Duration: time.Duration(length) * time.Millisecond, Backlog: rb.Waiting > 0}
	for _, pair := range strings.Split(text(2), ",") {
		field, count, _ := strings.Cut(pair, "=")
		n, err := strconv.ParseInt(count, 10, 64)
		if err != nil || !w.Calls.AddField(field, n) {
			return fmt.Errorf("unexpected downstream counter (%d bytes)", len(pair))
		}
	}
	a, err := waitroom.ParseAdaptive(text(4))
	rb.Downstream, rb.Control, rb.Adaptive = w, waitroom.DecodeControl(text(3)), a
	return err
}

// StoreDecisions keeps the admission loop's decisions (adapt.lua: the
// state, the window's p95 and error rate, an adaptive room's rate and a
// pause owed) in one pipeline: one more round trip, once a window, and
// only in a batch that handed one over.
func (s *Store) StoreDecisions(ctx context.Context, decided []waitroom.RoomDecision) error {
	if len(decided) == 0 {
		return nil
	}
	run := func() []*redis.Cmd {
		cmds := make([]*redis.Cmd, len(decided))
		_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, d := range decided {
				keys, args := adaptCall(d)
				cmds[i] = adaptScript.evalSha(ctx, p, keys, args...)
			}
			return nil
		})
		return cmds
	}
	cmds := run()
	if isNoScript(cmds[0].Err()) {
		if err := adaptScript.load(ctx, s.rdb); err != nil {
			return waitroom.Unavailable(err)
		}
		cmds = run()
	}
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			return waitroom.Unavailable(err)
		}
	}
	return nil
}

// adaptCall is adapt.lua's keys and arguments for one decision.
func adaptCall(d waitroom.RoomDecision) (keys []string, args []any) {
	rate, debt := "", ""
	if d.Adapted {
		rate = strconv.FormatFloat(d.Rate, 'f', -1, 64)
		if d.Debt > 0 {
			debt = strconv.FormatFloat(d.Debt, 'f', 3, 64) // no exponent: the embedded store's tonumber refuses one
		}
	}
	k := roomKeys(d.Room)
	return k.adaptKeys(), []any{d.Window.UnixMilli(), waitroom.EncodeControl(d.State),
		strconv.FormatInt(d.P95.Milliseconds(), 10), strconv.FormatFloat(d.ErrorRate, 'f', 4, 64), rate, downstreamExpiry.Milliseconds(), debt}
}

// adaptKeys are adapt.lua's keys, in the order its top names them.
func (r roomKeys) adaptKeys() []string { return []string{r.settings(), r.control(), r.budget()} }
