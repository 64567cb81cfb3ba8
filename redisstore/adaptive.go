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

// handedWindow is a control window admit.lua handed over: the gate's
// counters of the window and what the law needs to decide on them.
type handedWindow struct {
	endMs    int64
	window   waitroom.Window
	rate     float64 // the effective rate during the window
	state    waitroom.ControlState
	adaptive *waitroom.Adaptive // nil: measured only, for status
}

// decodeWindow reads admit.lua's window values: end ms (0: none), length
// ms, counters "field=count,…", the controller's state, the adaptive setting.
func decodeWindow(rb waitroom.RoomBatch, v []any) (*handedWindow, error) {
	text := func(i int) string { return fmt.Sprint(v[i]) }
	end, _ := strconv.ParseInt(text(0), 10, 64)
	if end == 0 {
		return nil, nil
	}
	length, _ := strconv.ParseInt(text(1), 10, 64)
	h := &handedWindow{endMs: end, rate: rb.EffectiveRatePerSec, state: waitroom.DecodeControl(text(3))}
	h.window = waitroom.Window{End: time.UnixMilli(end), Duration: time.Duration(length) * time.Millisecond, Backlog: rb.Waiting > 0}
	for _, pair := range strings.Split(text(2), ",") {
		field, count, _ := strings.Cut(pair, "=")
		n, err := strconv.ParseInt(count, 10, 64)
		if err != nil || !h.window.Calls.AddField(field, n) {
			return nil, fmt.Errorf("unexpected downstream counter (%d bytes)", len(pair))
		}
	}
	a, err := waitroom.ParseAdaptive(text(4))
	h.adaptive = a
	return h, err
}

// decide runs the control law on every window the batch handed over and
// stores the decisions (the rate, and a pause owed) in one pipeline: one more round trip, once a window,
// and only in a batch that handed one over (adapt.lua). A decision that
// does not land leaves the rate as it was; the next window decides again.
func (s *Store) decide(ctx context.Context, calls []admitCall) {
	type decision struct {
		keys []string
		args []any
	}
	var todo []decision
	for _, c := range calls {
		h := c.handed
		if h == nil {
			continue
		}
		p95, errRate := h.window.Calls.Quantile(0.95), h.window.Calls.ErrorRate()
		state, rate, debt := h.state, "", ""
		if h.adaptive != nil {
			var d waitroom.Decision
			d, state = h.adaptive.Next(h.rate, h.window, h.state)
			rate = strconv.FormatFloat(d.Rate, 'f', -1, 64)
			if d.Debt > 0 {
				debt = strconv.FormatFloat(d.Debt, 'f', 3, 64) // no exponent: the embedded store's tonumber refuses one
			}
		}
		k := roomKeys(c.room)
		todo = append(todo, decision{keys: []string{k.settings(), k.control(), k.budget()}, args: []any{h.endMs, waitroom.EncodeControl(state),
			strconv.FormatInt(p95.Milliseconds(), 10), strconv.FormatFloat(errRate, 'f', 4, 64), rate, downstreamExpiry.Milliseconds(), debt}})
	}
	if len(todo) == 0 {
		return
	}
	run := func() []*redis.Cmd {
		cmds := make([]*redis.Cmd, len(todo))
		_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, d := range todo {
				cmds[i] = adaptScript.evalSha(ctx, p, d.keys, d.args...)
			}
			return nil
		})
		return cmds
	}
	if cmds := run(); isNoScript(cmds[0].Err()) {
		if adaptScript.load(ctx, s.rdb) == nil {
			run()
		}
	}
}
