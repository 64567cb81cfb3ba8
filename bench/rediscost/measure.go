package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/bench/internal/callgrind"
	"github.com/waitroom/waitroom/bench/internal/fnstore"
	"github.com/waitroom/waitroom/bench/spike/sim"
)

// params are the sizes of a run (flags).
type params struct {
	waiting, calls, warmup, chunk int
	admitCalls                    int
	memoryUsers, memoryCallers    int
	fillClients                   int
	pollVisitors, pollRounds      int            // the poll through HTTP (httppoll.go)
	pollAhead                     int            // users in line ahead of its pollers
	pollRound                     time.Duration  // each round of the paced polls spread over this (0: none)
	profiles                      string         // directory for each operation's per-function costs ("": none)
	only                          *regexp.Regexp // measure only the operations whose "key/limiter" it matches (nil: all, and memory)
}

// wants reports whether the run measures the operation key with limiter.
func (p params) wants(key, limiter string) bool {
	return p.only == nil || p.only.MatchString(key+"/"+or(limiter, "none"))
}

// bench is a run against the server under callgrind: every measured call
// goes through one, a client of exactly one connection.
type bench struct {
	p           params
	cg          *callgrind.Server
	one         *redis.Client
	cfg         waitroom.Config
	st          fnstore.Stores
	fillSeconds int // the seconds of the clock the fill entered users in
}

// op is one measured operation: item i < warmup is a warm-up item, the
// others are measured. prep (optional) runs unmeasured before each item's
// call, in the same window as the call, by an unlimited caller (it checks the
// state the call will meet: in line, READY); check (optional) runs after
// each window's dump.
type op struct {
	key, name, limiter string
	noLimiter          bool // the call takes no caller: limiter is the store's alone
	items              int
	prep               func(ctx context.Context, i int) error
	call               func(ctx context.Context, i int) error
	check              func(ctx context.Context, from, to int) error
}

// measure runs o's warm-up, then its measured items in windows of
// p.chunk: the window's preps, zero, the calls, dump. Active expiry is off
// (setup) and every measured caller is new, so no call meets a key that
// expires under it: the counts repeat.
func (b *bench) measure(ctx context.Context, o op) (sim.RedisCostOp, *callgrind.Profile, error) {
	res := sim.RedisCostOp{Key: o.key, Name: o.name, Limiter: o.limiter, NoLimiter: o.noLimiter}
	for i := 0; i < b.p.warmup; i++ {
		if err := warm(ctx, o, i); err != nil {
			return res, nil, err
		}
	}
	// Calls without preps need no windows: one, fewer zero/dump interruptions.
	chunk := b.p.chunk
	if o.prep == nil {
		chunk = o.items
	}
	total := &callgrind.Profile{}
	for from := b.p.warmup; from < o.items; from += chunk {
		to := min(from+chunk, o.items)
		for i := from; i < to && o.prep != nil; i++ {
			if err := o.prep(unlimited(ctx), i); err != nil {
				return res, nil, fmt.Errorf("%s: prep of item %d: %w", o.name, i, err)
			}
		}
		prof, err := b.cg.Count(ctx, to-from, func(i int) error {
			if err := o.call(ctx, from+i); err != nil {
				return fmt.Errorf("%s: call %d: %w", o.name, from+i, err)
			}
			return nil
		})
		if err != nil {
			return res, nil, err
		}
		total.Add(prof)
		res.Calls += to - from
		if o.check != nil {
			if err := o.check(ctx, from, to); err != nil {
				return res, nil, fmt.Errorf("%s: %w", o.name, err)
			}
		}
	}
	res.Instructions, res.Timer = total.Counted(), total.Timer()
	return res, total, nil
}

// warm runs one warm-up item: its prep and its call.
func warm(ctx context.Context, o op, i int) error {
	if o.prep != nil {
		if err := o.prep(ctx, i); err != nil {
			return fmt.Errorf("%s: prep of warm-up item %d: %w", o.name, i, err)
		}
	}
	if err := o.call(ctx, i); err != nil {
		return fmt.Errorf("%s: warm-up call %d: %w", o.name, i, err)
	}
	return nil
}

// uid is the i-th user of a group, 13 bytes (as the micro-benchmarks'
// ids: bench/scale_test.go).
func uid(group byte, i int) string { return fmt.Sprintf("%c%012d", group, i) }

// as is the i-th user of group as the caller of a call in ctx: its own id,
// and an IP of its own, 10.<group>.<i>, so that every caller has its
// buckets to itself (i < 65,536). In a prep's ctx (unlimited) the user is
// not limited.
func as(ctx context.Context, group byte, i int) waitroom.Caller {
	if ctx.Value(unlimitedKey{}) != nil {
		return waitroom.Unlimited(uid(group, i))
	}
	return waitroom.Caller{User: uid(group, i), IP: ipOf(group, i)}
}

type unlimitedKey struct{}

// unlimited marks ctx for a prep: its callers are not limited, so that they
// leave no bucket for the measured call to find. The limiter's buckets are
// GCRAs that live one interval past a call (200 ms for a caller at the
// defaults, 2 ms for an address), so a poller that comes back after its
// pollAfterMs finds none: the measured call takes its buckets afresh, an
// MGET that finds nothing and a SET each, every time alike.
func unlimited(ctx context.Context) context.Context {
	return context.WithValue(ctx, unlimitedKey{}, true)
}

// ipOf is the i-th IP of group: 10.<group>.<i / 256>.<i % 256>, i < 65,536.
func ipOf(group byte, i int) string {
	return "10." + strconv.Itoa(int(group)) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255)
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
