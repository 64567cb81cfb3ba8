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

// LineLength is how many users wait in room's line (line.lua: the queue
// and the sorted set), read at one instant.
func LineLength(ctx context.Context, rdb redis.Cmdable, room string) (int64, error) {
	k := roomKeys(room)
	var sorted, queued *redis.IntCmd
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		sorted, queued = p.ZCard(ctx, k.line()), p.LLen(ctx, k.queue())
		return nil
	})
	if err != nil {
		return 0, err
	}
	return sorted.Val() + queued.Val(), nil
}

// Line is room's line in the order admission serves it, first first: the
// sorted set's members and the queue's merged by number (line.lua), read
// at one instant. For tools and tests; the scripts never read it whole.
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

// Append puts users at the back of room's line as enter.lua does (the
// queue, their places and the front's two copies: line.lua), in pipelined slices,
// without the rest of an enter (no limiter, capacity, marks or instant
// admission): for tools and benchmarks that need a long line fast, with
// nobody else entering the room meanwhile. As enter, it numbers them after
// the queue's last, else after the counter's, and leaves the counter alone.
func Append(ctx context.Context, rdb redis.Cmdable, room string, users []string) error {
	k := roomKeys(room)
	var counter, front *redis.StringCmd
	var queued, sorted *redis.IntCmd
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		counter, front = p.Get(ctx, k.seq()), p.HGet(ctx, k.places(), "")
		queued, sorted = p.LLen(ctx, k.queue()), p.ZCard(ctx, k.line())
		return nil
	}); err != nil && err != redis.Nil {
		return err
	}
	seq, _ := strconv.ParseInt(counter.Val(), 10, 64) // none: 0
	if queued.Val() > 0 {
		head, err := strconv.ParseInt(front.Val(), 10, 64)
		if err != nil {
			return fmt.Errorf("the queue of %q has no front: %w", room, err)
		}
		seq = max(head, -head) + queued.Val() - 1
	}
	for i := 0; i < len(users); i += 10_000 {
		part := users[i:min(len(users), i+10_000)]
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			places := make([]any, 0, 2*len(part)+2)
			if i == 0 && queued.Val() == 0 { // the front (line.lua), negated while the sorted set holds anyone
				front := seq + 1
				if sorted.Val() > 0 {
					front = -front
				}
				places = append(places, "", front)
				p.HSet(ctx, k.settings(), "front", front)
			}
			for j, u := range part {
				places = append(places, u, seq+int64(j)+1)
			}
			p.RPush(ctx, k.queue(), anys(part)...)
			p.HSet(ctx, k.places(), places...)
			return nil
		})
		if err != nil {
			return err
		}
		seq += int64(len(part))
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
