package redisstore_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// A script call whose reply comes late (the store busy with a slow command
// here; a stalled node or a dropped connection alike) fails, and is not sent
// again: the script may have run, and most of the store's scripts are not
// idempotent (the caller's limiter tokens, an admission's batch). go-redis
// sends a call again after a read timeout (MaxRetries; in a cluster once
// more on the same node and again on another), so a late poll took its
// caller's limiter token twice: the flake of TestLimiterAcrossTwoRunners.
// Each call here takes one token of a burst of 6, the late ones included
// (they ran once, after the stall); the calls after them find exactly the
// tokens left.
func TestALateScriptRunsOnce(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		srv := engine.Start(t)
		cfg := lateConfig()
		cfg.RedisURL = "redis://" + srv.Addr
		checkLateScriptsRunOnce(t, cfg, []string{srv.Addr})
	})
}

func TestALateScriptRunsOnceCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	cfg := lateConfig()
	cfg.RedisCluster, cfg.RedisURL = true, "redis://"+c.Addrs[0]+"?addr="+strings.Join(c.Addrs[1:], "&addr=")
	checkLateScriptsRunOnce(t, cfg, c.Addrs)
}

func lateConfig() waitroom.Config {
	return limitedConfig(waitroom.Limits{ClientRatePerSec: 0.001, ClientBurst: 6, IPRatePerSec: 1000, IPBurst: 1000})
}

func checkLateScriptsRunOnce(t *testing.T, cfg waitroom.Config, addrs []string) {
	t.Helper()
	rdb, err := redisstore.NewClient(cfg) // the clients the functions use, with their timeouts
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	s := redisstore.New(rdb, cfg)
	ctx, caller := context.Background(), waitroom.Caller{User: "late", IP: "192.0.2.9"}
	// The first calls load the scripts (a NOSCRIPT reply runs nothing).
	if _, err := s.Enter(ctx, "r", caller); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Position(ctx, "r", caller); err != nil {
		t.Fatal(err)
	}
	late := map[string]func() error{
		"enter":    func() error { _, err := s.Enter(ctx, "r", caller); return err },
		"position": func() error { _, err := s.Position(ctx, "r", caller); return err },
	}
	for name, call := range late {
		stalled := stall(t, addrs, 1500*time.Millisecond)
		err := call()
		<-stalled
		if code := waitroom.ErrorCode(err); code != "" && code != waitroom.EUnavailable {
			t.Fatalf("a late %s: %v, want an answer or unavailable", name, err)
		}
	}
	left := 0
	for ; left < 10; left++ {
		if _, err := s.Position(ctx, "r", caller); waitroom.ErrorCode(err) == waitroom.ERateLimited {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if left != 2 {
		t.Fatalf("after 4 calls of a burst of 6, %d more were allowed, want 2: a late call ran twice", left)
	}
}

// stall keeps every node busy with a script for d, from before stall
// returns; the channel closes when the nodes are free again.
func stall(t *testing.T, addrs []string, d time.Duration) <-chan struct{} {
	t.Helper()
	const busy = `local t0 = redis.call('TIME')
repeat local t = redis.call('TIME') until (t[1] - t0[1]) * 1000000 + (t[2] - t0[2]) >= tonumber(ARGV[1])`
	var busyNodes sync.WaitGroup
	connected := make(chan struct{}, len(addrs))
	for _, addr := range addrs {
		busyNodes.Go(func() {
			c := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: time.Minute, MaxRetries: -1})
			defer c.Close()
			_ = c.Ping(context.Background()).Err() // connected before the stall begins
			connected <- struct{}{}
			if err := c.Eval(context.Background(), busy, nil, d.Microseconds()).Err(); err != nil && err != redis.Nil {
				t.Errorf("stalling %s: %v", addr, err)
			}
		})
	}
	for range addrs {
		<-connected
	}
	time.Sleep(50 * time.Millisecond) // the scripts have begun
	free := make(chan struct{})
	go func() {
		busyNodes.Wait()
		close(free)
	}()
	return free
}
