package redisstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// LineKeys are the keys that hold room's line (line.lua: the queue, the
// places and the sorted set), for tools that measure it (MEMORY USAGE).
func LineKeys(room string) []string {
	k := roomKeys(room)
	return []string{k.queue(), k.places(), k.line()}
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

// Line is the kept places of room's line (line.lua: the accounts' queue
// and the sorted set, not the anonymous numbers, of which nothing is
// kept) in the order admission serves them, first first, read at one
// instant. For tools and tests; the scripts never read it whole.
func Line(ctx context.Context, rdb redis.Cmdable, room string) ([]string, error) {
	type place struct {
		user string
		seq  float64
	}
	k := roomKeys(room)
	var sorted *redis.ZSliceCmd
	var queued *redis.StringSliceCmd
	var seqs *redis.MapStringStringCmd
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		sorted, queued, seqs = p.ZRangeWithScores(ctx, k.line(), 0, -1), p.LRange(ctx, k.queue(), 0, -1), p.HGetAll(ctx, k.places())
		return nil
	})
	if err != nil {
		return nil, err
	}
	var all []place
	for _, z := range sorted.Val() {
		all = append(all, place{z.Member.(string), z.Score})
	}
	for _, u := range queued.Val() {
		seq, err := strconv.ParseFloat(seqs.Val()[u], 64)
		if err != nil {
			return nil, err
		}
		all = append(all, place{u, seq})
	}
	slices.SortStableFunc(all, func(a, b place) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	users := make([]string, len(all))
	for i, p := range all {
		users[i] = p.user
	}
	return users, nil
}

// Append puts users at the back of room's line as enter.lua does for
// accounts (the queue, their places, the counter and the front: line.lua),
// in pipelined slices, without the rest of an enter (no limiter, capacity,
// marks or instant admission): for tools and benchmarks that need a long
// line fast, with nobody else entering the room meanwhile.
func Append(ctx context.Context, rdb redis.Cmdable, room string, users []string) error {
	k := roomKeys(room)
	read, err := rdb.HMGet(ctx, k.settings(), "front", "next").Result()
	if err != nil {
		return err
	}
	stored := read[0]
	front, next := lineNumbers(read)
	if stored == nil {
		if err := rdb.HSet(ctx, k.settings(), "front", front, "born", 0).Err(); err != nil {
			return err
		}
	}
	for i := 0; i < len(users); i += 10_000 {
		part := users[i:min(len(users), i+10_000)]
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			places := make([]any, 0, 2*len(part))
			for j, u := range part {
				places = append(places, u, next+int64(j))
			}
			p.RPush(ctx, k.queue(), anys(part)...)
			p.HSet(ctx, k.places(), places...)
			p.HSet(ctx, k.settings(), "next", next+int64(len(part)))
			return nil
		})
		if err != nil {
			return err
		}
		next += int64(len(part))
	}
	return nil
}

func anys(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
