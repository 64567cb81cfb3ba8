package main

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/runnertest"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// lineWatcher samples a room's line length every 2 ms: each drop is an
// admission, timed by the store itself rather than by a client's answer.
type lineWatcher struct {
	mu    sync.Mutex
	drops []time.Time // one per admitted user
}

func watchLine(ctx context.Context, rdb *redis.Client, room string) *lineWatcher {
	w := &lineWatcher{}
	go func() {
		last := int64(-1)
		for ctx.Err() == nil {
			n, err := redisstore.LineLength(ctx, rdb, room)
			now := time.Now()
			if err == nil {
				w.mu.Lock()
				for i := n; last >= 0 && i < last; i++ {
					w.drops = append(w.drops, now)
				}
				w.mu.Unlock()
				last = n
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return w
}

func (w *lineWatcher) between(from, to time.Time) (n int, last time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range w.drops {
		if !d.Before(from) && d.Before(to) {
			n, last = n+1, d
		}
	}
	return n, last
}

// How quickly pause and a rate change take effect while the local runner
// admits (100 ms batches), as an operator sees it through waitroomctl. The
// invariants are checked, the times are logged (notes): after pause returns
// nobody is admitted; after the rate drops from 100/s to 10/s, no more than
// 10 × elapsed + one batch + one user are admitted.
func TestMeasureSettingChanges(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	env := map[string]string{"REDIS_URL": srv.URL(), "ADDR": "127.0.0.1:0", "ADMIN_TOKEN": token, "OPEN_ROOMS": "false"}
	r := runnertest.Start(t, runnertest.Config(t, env))
	rdb := srv.Client()
	if res := ctl(t, ctx, r.URL, "set", "sale", "--paused", "true", "--rate", "100"); res.code != 0 {
		t.Fatal(res)
	}
	users := make([]string, 1500)
	for i := range users {
		users[i] = fmt.Sprint(i)
	}
	if _, err := redisstore.Append(ctx, rdb, "sale", users); err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	w := watchLine(wctx, rdb, "sale")

	ctl(t, ctx, r.URL, "resume", "sale")
	time.Sleep(1500 * time.Millisecond)
	start := time.Now()
	if res := ctl(t, ctx, r.URL, "pause", "sale"); res.code != 0 {
		t.Fatal(res)
	}
	returned := time.Now()
	time.Sleep(time.Second)
	before, lastBefore := w.between(start.Add(-time.Second), returned)
	after, _ := w.between(returned, time.Now())
	t.Logf("pause: the command took %v; the last admission came %v after it began (negative: before; %d admitted in the second before); %d admitted after it returned",
		returned.Sub(start).Round(time.Millisecond), lastBefore.Sub(start).Round(time.Millisecond), before, after)
	if after != 0 {
		t.Errorf("%d admitted after pause returned", after)
	}

	ctl(t, ctx, r.URL, "resume", "sale")
	time.Sleep(1500 * time.Millisecond)
	start = time.Now()
	if res := ctl(t, ctx, r.URL, "set", "sale", "--rate", "10"); res.code != 0 {
		t.Fatal(res)
	}
	returned = time.Now()
	time.Sleep(3 * time.Second)
	for _, win := range []time.Duration{100 * time.Millisecond, 500 * time.Millisecond, time.Second, 3 * time.Second} {
		n, _ := w.between(returned, returned.Add(win))
		t.Logf("rate 100/s → 10/s: the command took %v; %d admitted in the %v after it returned (at 10/s: %.1f + one batch)",
			returned.Sub(start).Round(time.Millisecond), n, win, 10*win.Seconds())
	}
	if n, _ := w.between(returned, returned.Add(3*time.Second)); n > 10*3+1+1 {
		t.Errorf("%d admitted in 3 s at 10/s", n)
	}
}
