package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/bench/internal/fnstore"
	"github.com/waitroom/waitroom/bench/spike/sim"
	"github.com/waitroom/waitroom/redisstore"
)

// The room that warms the memory run's clients up, and its users.
const (
	scratchRoom  = "warm"
	scratchUsers = 20_000
)

// measureMemory fills a plain redis-server's room with p.memoryUsers
// users through Store.Enter (unlimited callers: no limiter buckets), reading
// used_memory before and after; then p.memoryCallers of them poll once
// with the limiter on, each a caller of its own (id and IP), and the
// used_memory delta over them is a live caller's two buckets (fields of
// the room's hash, which only admission sweeps: none runs here). Active
// expiry is off for that part, so that no key leaves before the read.
func measureMemory(ctx context.Context, p params) (sim.RedisCostMemory, error) {
	m := sim.RedisCostMemory{Users: p.memoryUsers, UserIDBytes: len(uid(waitGroup, 0)), Callers: p.memoryCallers}
	srv, err := sim.StartRedisWrapped(nil, 10*time.Second, "--enable-debug-command", "local")
	if err != nil {
		return m, err
	}
	defer srv.Stop()
	cfg, err := fnstore.Config()
	if err != nil {
		return m, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: p.fillClients, MaxRetries: -1})
	defer rdb.Close()
	st := fnstore.NewStores(rdb, cfg)
	for _, name := range []string{room, scratchRoom} {
		if err := fnstore.SetRoom(ctx, st.Off, name, fnstore.RoomSettings(cfg, cfg.AdmitRatePerSec)); err != nil {
			return m, err
		}
	}
	// The same clients fill another room first, so that both reads find
	// their buffers as a fill leaves them: the delta is the line's alone.
	if err := enterAll(ctx, st.Off, scratchRoom, waitGroup, 0, scratchUsers, p.fillClients); err != nil {
		return m, err
	}
	if m.Before, err = sim.InfoField(ctx, rdb, "memory", "used_memory"); err != nil {
		return m, err
	}
	t0 := time.Now()
	if err := enterAll(ctx, st.Off, room, waitGroup, 0, p.memoryUsers, p.fillClients); err != nil {
		return m, err
	}
	m.FillSeconds = time.Since(t0).Seconds()
	if m.After, err = sim.InfoField(ctx, rdb, "memory", "used_memory"); err != nil {
		return m, err
	}
	if m.LineBytes, err = lineBytes(ctx, rdb, room); err != nil {
		return m, err
	}
	m.FillMethod = fmt.Sprintf("Store.Enter, one call per user (the enter script and nothing else, no caller), %d clients at once, ids %q…, "+
		"the same clients having first entered %d users into another room, so that both reads find their buffers alike", p.fillClients, uid(waitGroup, 0), scratchUsers)
	return m, callerMemory(ctx, rdb, st, &m)
}

// callerMemory is the second part of measureMemory: callers' buckets.
func callerMemory(ctx context.Context, rdb *redis.Client, st fnstore.Stores, m *sim.RedisCostMemory) error {
	if err := rdb.Do(ctx, "DEBUG", "SET-ACTIVE-EXPIRE", "0").Err(); err != nil {
		return fmt.Errorf("DEBUG SET-ACTIVE-EXPIRE 0: %w", err)
	}
	m.ActiveExpiryPaused = true
	keys0, expires0, err := keyspace(ctx, rdb)
	if err != nil {
		return err
	}
	expired0, err := sim.InfoField(ctx, rdb, "stats", "expired_keys")
	if err != nil {
		return err
	}
	if m.CallersBefore, err = sim.InfoField(ctx, rdb, "memory", "used_memory"); err != nil {
		return err
	}
	err = parallel(m.Callers, 8, func(i int) error {
		j := spread(i, m.Callers, m.Users)
		user := uid(waitGroup, j)
		s, err := st.On.Position(ctx, room, waitroom.Caller{User: user, IP: ipOf(waitGroup, i)})
		return fnstore.Expect(s, err, waitroom.Waiting)
	})
	if err != nil {
		return err
	}
	if m.CallersAfter, err = sim.InfoField(ctx, rdb, "memory", "used_memory"); err != nil {
		return err
	}
	keys1, expires1, err := keyspace(ctx, rdb)
	if err != nil {
		return err
	}
	if expired, err := sim.InfoField(ctx, rdb, "stats", "expired_keys"); err != nil || expired != expired0 {
		return fmt.Errorf("%d keys expired while measuring the buckets (%v)", expired-expired0, err)
	}
	m.KeysPerCaller = float64(keys1-keys0) / float64(m.Callers)
	m.ExpiresPerCaller = float64(expires1-expires0) / float64(m.Callers)
	m.CallerFillMethod = fmt.Sprintf("Store.Position with the limiter at its defaults, one call per caller (its own id and IP), %d clients at once, active expiry off", 8)
	return nil
}

// keyspace reads db0's keys and keys with a TTL from INFO keyspace.
func keyspace(ctx context.Context, rdb *redis.Client) (keys, expires int64, err error) {
	info, err := rdb.Info(ctx, "keyspace").Result()
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "db0:")
		if !ok {
			continue
		}
		for _, f := range strings.Split(v, ",") {
			name, n, _ := strings.Cut(f, "=")
			x, _ := strconv.ParseInt(n, 10, 64)
			switch name {
			case "keys":
				keys = x
			case "expires":
				expires = x
			}
		}
		return keys, expires, nil
	}
	return 0, 0, fmt.Errorf("INFO keyspace has no db0")
}

// lineBytes is MEMORY USAGE (every element counted) of the keys that hold
// room's line, as the store names them (redisstore.LineKey and the
// accounts' buckets, redisstore.AccountPattern).
func lineBytes(ctx context.Context, rdb *redis.Client, room string) (int64, error) {
	keys, err := rdb.Keys(ctx, redisstore.AccountPattern(room)).Result()
	if err != nil {
		return 0, err
	}
	var total int64
	for _, key := range append(keys, redisstore.LineKey(room)) {
		n, err := rdb.MemoryUsage(ctx, key, 0).Result()
		if err != nil && err != redis.Nil {
			return 0, fmt.Errorf("MEMORY USAGE %s: %w", key, err)
		}
		total += n
	}
	if total == 0 {
		return 0, fmt.Errorf("room %q has no line: where did the users go?", room)
	}
	return total, nil
}
