package redisstore

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
)

// LineKey is the key of room's pre-queue draws (line.lua's sorted set) and
// AccountPattern matches its accounts' buckets, for tools that measure the
// line (MEMORY USAGE, SCAN MATCH).
func LineKey(room string) string        { return roomKeys(room).line() }
func AccountPattern(room string) string { return roomKeys(room).key("a:*") }

// AccountKey is the bucket and field of user's record in room (line.lua:
// an account's number), for tools that measure or check the line.
func AccountKey(room, user string) (key, field string) {
	return roomKeys(room).account(user), accountField(waitroom.Caller{User: user})
}

// LineLength is how many wait in room's line (line.lua: the numbers the
// front has not passed, and the sorted set), read at one instant.
func LineLength(ctx context.Context, rdb redis.Cmdable, room string) (int64, error) {
	k := roomKeys(room)
	var sorted *redis.IntCmd
	var line *redis.SliceCmd
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		sorted, line = p.ZCard(ctx, k.line()), p.HMGet(ctx, k.settings(), "front", "next")
		return nil
	})
	if err != nil {
		return 0, err
	}
	front, next := lineNumbers(line.Val())
	return sorted.Val() + max(0, next-front), nil
}

// lineNumbers reads the front and the counter's next number of an HMGET
// of "front" and "next" (line.lua): 1 and 1 before the counter is born.
func lineNumbers(v []any) (front, next int64) {
	front, _ = strconv.ParseInt(fmt.Sprint(v[0]), 10, 64)
	next, _ = strconv.ParseInt(fmt.Sprint(v[1]), 10, 64)
	if next == 0 {
		next = 1
	}
	if front == 0 {
		front = next
	}
	return max(front, -front), next
}

// Waiting is which of users wait in room's line, first first, read at one
// instant: the pre-queue's draws, and the accounts whose records (line.lua)
// hold a number the front has not passed. Anonymous visitors' numbers are
// theirs alone, so only the candidates given are found. For tools and
// tests; the scripts never read the line whole.
func Waiting(ctx context.Context, rdb redis.Cmdable, room string, users []string) ([]string, error) {
	k := roomKeys(room)
	var draws *redis.ZSliceCmd
	var line *redis.SliceCmd
	records := make([]*redis.SliceCmd, len(users))
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		draws, line = p.ZRangeWithScores(ctx, k.line(), 0, -1), p.HMGet(ctx, k.settings(), "front", "next", "born")
		for i, u := range users {
			key, field := AccountKey(room, u)
			records[i] = p.HMGet(ctx, key, field, "b")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	type place struct {
		user string
		n    float64
	}
	var all []place
	for _, z := range draws.Val() {
		all = append(all, place{z.Member.(string), z.Score})
	}
	front, _ := lineNumbers(line.Val()[:2])
	for i, u := range users {
		r := records[i].Val()
		n, err := strconv.ParseInt(fmt.Sprint(r[0]), 10, 64)
		if err == nil && r[1] != nil && r[1] == line.Val()[2] && n >= front {
			all = append(all, place{u, float64(n)})
		}
	}
	slices.SortStableFunc(all, func(a, b place) int { return cmp.Compare(a.n, b.n) })
	out := make([]string, len(all))
	for i, p := range all {
		out[i] = p.user
	}
	return out, nil
}

// Append puts users at the back of room's line as enter.lua does for
// accounts (their numbers from the counter, each recorded in its bucket,
// and the front: line.lua), in pipelined slices, without the rest of an
// enter (no limiter, capacity, marks or instant admission): for tools and
// benchmarks that need a long line fast, with nobody else entering the
// room meanwhile. The records live a day (enter.lua's live as long as their
// place may wait). It returns each user's number, in users' order.
func Append(ctx context.Context, rdb redis.Cmdable, room string, users []string) ([]int64, error) {
	k := roomKeys(room)
	read, err := rdb.HMGet(ctx, k.settings(), "front", "next", "born").Result()
	if err != nil {
		return nil, err
	}
	front, next := lineNumbers(read[:2])
	born, _ := read[2].(string)
	if read[0] == nil || born == "" {
		born = "0"
		if err := rdb.HSet(ctx, k.settings(), "front", front, "born", born).Err(); err != nil {
			return nil, err
		}
	}
	buckets := map[string][]any{}
	numbers := make([]int64, len(users))
	for i, u := range users {
		key, field := AccountKey(room, u)
		numbers[i] = next + int64(i)
		buckets[key] = append(buckets[key], field, numbers[i])
	}
	keys := slices.Sorted(maps.Keys(buckets))
	for i := 0; i < len(keys); i += 1000 {
		part := keys[i:min(len(keys), i+1000)]
		if err := appendRecords(ctx, rdb, part, buckets, born); err != nil {
			return nil, err
		}
	}
	return numbers, rdb.HSet(ctx, k.settings(), "next", next+int64(len(users))).Err()
}

// appendRecords writes Append's records of the buckets keys in two round
// trips: a bucket of an earlier line (its 'b' not born) is dropped first,
// as keepAccount does.
func appendRecords(ctx context.Context, rdb redis.Cmdable, keys []string, buckets map[string][]any, born string) error {
	was := make([]*redis.StringCmd, len(keys))
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for j, key := range keys {
			was[j] = p.HGet(ctx, key, "b")
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return err
	}
	_, err = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for j, key := range keys {
			if was[j].Val() != born {
				p.Del(ctx, key)
			}
			p.HSet(ctx, key, append(buckets[key], "b", born)...)
			p.PExpire(ctx, key, 24*time.Hour)
		}
		return nil
	})
	return err
}
