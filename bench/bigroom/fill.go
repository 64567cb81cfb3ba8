package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/bench/internal/fnstore"
	"github.com/waitroom/waitroom/bench/spike/sim"
	"github.com/waitroom/waitroom/redisstore"
)

// room is the one room of a run.
const room = "big"

// slice is how many visitors one Append call puts in line.
const slice = 100_000

// checkUsers are the users of Append's check (see checkAppend).
const checkUsers = 1_000

// visitor is the i-th visitor of the line: an account for even i ("a:"
// and a UUID-like subject, as a JWT's sub: httpapi's namespace of the
// authorizer's users), an anonymous visitor for odd i (NewVisitorID: "v-"
// and 22 characters, random).
func visitor(i int) (string, error) {
	if i%2 == 0 {
		return fmt.Sprintf("a:%08x-%04x-4%03x-8%03x-%012x", i, i>>16&0xffff, i&0xfff, (i>>12)&0xfff, i*2654435761&0xffffffffffff), nil
	}
	return waitroom.NewVisitorID()
}

func visitors(from, to int) ([]string, error) {
	out := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		v, err := visitor(i)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// fillAndMeasure checks Append's claim on a server of its own, fills the
// room on a plain redis-server, measures its memory, saves its snapshot
// into a directory of its own (returned: the server under callgrind loads
// it) and runs admission at p.rate for p.rateWindow.
func fillAndMeasure(ctx context.Context, p params, cfg waitroom.Config, res *sim.BigRoomResults) (string, error) {
	fmt.Fprintf(os.Stderr, "checking redisstore.Append against Store.Enter (%d users) ...\n", checkUsers)
	if err := checkAppend(ctx, cfg, &res.Fill); err != nil {
		return "", fmt.Errorf("append's check: %w", err)
	}
	srv, err := sim.StartRedisWrapped(nil, 10*time.Second, "--enable-debug-command", "local")
	if err != nil {
		return "", err
	}
	defer srv.Stop()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 4, ReadTimeout: 5 * time.Minute, WriteTimeout: time.Minute, MaxRetries: -1})
	defer rdb.Close()
	if err := fill(ctx, p, cfg, rdb, res); err != nil {
		return "", fmt.Errorf("fill: %w", err)
	}
	dir, err := snapshot(ctx, rdb, srv)
	if err != nil {
		return "", err
	}
	if p.rateWindow > 0 {
		fmt.Fprintf(os.Stderr, "admission at %g/s for %s on the plain server ...\n", p.rate, p.rateWindow)
		if err := measureRate(ctx, p, cfg, rdb, &res.Wait); err != nil {
			_ = os.RemoveAll(dir)
			return "", fmt.Errorf("admission at %g/s: %w", p.rate, err)
		}
	}
	return dir, nil
}

// fill puts p.visitors in the room's line: the first through Store.Enter,
// the others by Append; used_memory before and after, and after DEBUG RELOAD.
func fill(ctx context.Context, p params, cfg waitroom.Config, rdb *redis.Client, res *sim.BigRoomResults) error {
	st := redisstore.New(rdb, cfg)
	if err := fnstore.SetRoom(ctx, st, room, fnstore.RoomSettings(cfg, cfg.AdmitRatePerSec)); err != nil {
		return err
	}
	first, err := visitor(0)
	if err != nil {
		return err
	}
	if s, err := st.Enter(ctx, room, waitroom.Unlimited(first)); err != nil || !s.Joined || s.Status != waitroom.Waiting {
		return fmt.Errorf("the first visitor's enter: %+v, %v", s, err)
	}
	m := &res.Memory
	m.Visitors = p.visitors - 1
	if m.Before, err = sim.InfoField(ctx, rdb, "memory", "used_memory"); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "filling: %d visitors by redisstore.Append, %d a call ...\n", p.visitors-1, slice)
	t0 := time.Now()
	for from := 1; from < p.visitors; from += slice {
		users, err := visitors(from, min(from+slice, p.visitors))
		if err != nil {
			return err
		}
		if err := redisstore.Append(ctx, rdb, room, users); err != nil {
			return err
		}
		if from/slice%10 == 0 {
			fmt.Fprintf(os.Stderr, "  %d in line (%.0f s)\n", from+len(users), time.Since(t0).Seconds())
		}
	}
	f := &res.Fill
	f.Seconds = time.Since(t0).Seconds()
	f.Accounts, f.Anonymous = (p.visitors+1)/2, p.visitors/2
	f.AccountExample, _ = visitor(0)
	f.AnonymousExample, _ = visitor(1)
	f.Method = fmt.Sprintf("the first visitor through Store.Enter, then %d by redisstore.Append, %d a call (pipelines of 10,000)", p.visitors-1, slice)
	if n, err := redisstore.LineLength(ctx, rdb, room); err != nil || n != int64(p.visitors) {
		return fmt.Errorf("the line holds %d, want %d (%v)", n, p.visitors, err)
	}
	return memory(ctx, rdb, m)
}

// memory reads used_memory after the fill, whether the places hash is
// being rehashed, and used_memory and MEMORY USAGE after DEBUG RELOAD.
func memory(ctx context.Context, rdb *redis.Client, m *sim.BigRoomMemory) error {
	var err error
	if m.AfterFill, err = sim.InfoField(ctx, rdb, "memory", "used_memory"); err != nil {
		return err
	}
	places := redisstore.LineKeys(room)[1]
	stats, err := rdb.Do(ctx, "DEBUG", "HTSTATS-KEY", places).Text()
	if err != nil {
		return fmt.Errorf("DEBUG HTSTATS-KEY: %w", err)
	}
	m.Rehashing = strings.Contains(stats, "rehashing target")
	fmt.Fprintln(os.Stderr, "DEBUG RELOAD ...")
	if err := rdb.Do(ctx, "DEBUG", "RELOAD").Err(); err != nil {
		return fmt.Errorf("DEBUG RELOAD: %w", err)
	}
	if m.AfterReload, err = sim.InfoField(ctx, rdb, "memory", "used_memory"); err != nil {
		return err
	}
	for _, key := range redisstore.LineKeys(room) {
		n, err := rdb.MemoryUsage(ctx, key, 0).Result()
		if err != nil && err != redis.Nil {
			return fmt.Errorf("MEMORY USAGE %s: %w", key, err)
		}
		m.LineBytes += n
	}
	m.SameLayout = true
	m.Layout = "accounts and anonymous visitors are stored alike (line.lua): the id once in the queue (a list) and once as a field of places (a hash, its number the value); they differ only in the id's length"
	return nil
}

// snapshot saves the server's data (SAVE) and moves it into a directory
// of its own, which a redis-server started there (--dir) loads.
func snapshot(ctx context.Context, rdb *redis.Client, srv *sim.Redis) (string, error) {
	fmt.Fprintln(os.Stderr, "SAVE ...")
	if err := rdb.Save(ctx).Err(); err != nil {
		return "", fmt.Errorf("SAVE: %w", err)
	}
	dir, err := os.MkdirTemp("", "waitroom-bigroom-")
	if err != nil {
		return "", err
	}
	if err := os.Rename(filepath.Join(srv.Dir(), "dump.rdb"), filepath.Join(dir, "dump.rdb")); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// checkAppend checks Append's claim on a server of its own: the same
// users enter one room through Store.Enter and are appended to another,
// and every key and hash field of the two rooms is compared.
func checkAppend(ctx context.Context, cfg waitroom.Config, f *sim.BigRoomFill) error {
	srv, err := sim.StartRedisWrapped(nil, 10*time.Second)
	if err != nil {
		return err
	}
	defer srv.Stop()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	defer rdb.Close()
	st := redisstore.New(rdb, cfg)
	users, err := visitors(0, checkUsers)
	if err != nil {
		return err
	}
	for _, name := range []string{"entered", "appended"} {
		if err := fnstore.SetRoom(ctx, st, name, fnstore.RoomSettings(cfg, cfg.AdmitRatePerSec)); err != nil {
			return err
		}
	}
	for _, u := range users {
		if s, err := st.Enter(ctx, "entered", waitroom.Unlimited(u)); err != nil || !s.Joined {
			return fmt.Errorf("enter %s: %+v %v", u, s, err)
		}
	}
	if err := redisstore.Append(ctx, rdb, "appended", users); err != nil {
		return err
	}
	entered, err := roomState(ctx, rdb, "entered")
	if err != nil {
		return err
	}
	appended, err := roomState(ctx, rdb, "appended")
	if err != nil {
		return err
	}
	f.CheckUsers = checkUsers
	f.Same, f.EnterOnly, f.AppendOnly, f.Differ = compare(entered, appended)
	return nil
}

// roomState is every key of room (by its name after the room's tag) and
// every field of its hashes ("key field"), each with its value as text;
// a list's and a sorted set's value is its elements, a set's sorted.
func roomState(ctx context.Context, rdb *redis.Client, name string) (map[string]string, error) {
	prefix := "wr:{" + name + "}:"
	keys, err := rdb.Keys(ctx, prefix+"*").Result()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, key := range keys {
		short := strings.TrimPrefix(key, prefix)
		typ, err := rdb.Type(ctx, key).Result()
		if err != nil {
			return nil, err
		}
		switch typ {
		case "hash":
			h, err := rdb.HGetAll(ctx, key).Result()
			if err != nil {
				return nil, err
			}
			var users []string // places' users, compared as one
			for field, v := range h {
				if short == "places" && field != "" {
					users = append(users, field+"="+v)
					continue
				}
				out[short+" "+fieldName(field)] = v
			}
			if users != nil {
				sort.Strings(users)
				out[short+" <user> (all of them)"] = strings.Join(users, ",")
			}
		case "list":
			l, err := rdb.LRange(ctx, key, 0, -1).Result()
			out[short] = strings.Join(l, ",")
			if err != nil {
				return nil, err
			}
		case "zset":
			z, err := rdb.ZRangeWithScores(ctx, key, 0, -1).Result()
			if err != nil {
				return nil, err
			}
			out[short] = fmt.Sprint(z)
		case "set":
			s, err := rdb.SMembers(ctx, key).Result()
			if err != nil {
				return nil, err
			}
			sort.Strings(s)
			out[short] = strings.Join(s, ",")
		default:
			v, err := rdb.Get(ctx, key).Result()
			if err != nil {
				return nil, err
			}
			out[short] = v
		}
	}
	return out, nil
}

// fieldName names a hash field in the comparison (” is places' front).
func fieldName(field string) string {
	if field == "" {
		return "'' (the front)"
	}
	return field
}

// compare sorts the names of a and b into those both hold alike, those
// only a holds, only b, and those both hold differently.
func compare(a, b map[string]string) (same, onlyA, onlyB, differ []string) {
	names := map[string]bool{}
	for k := range a {
		names[k] = true
	}
	for k := range b {
		names[k] = true
	}
	for k := range names {
		va, inA := a[k]
		vb, inB := b[k]
		switch {
		case inA && !inB:
			onlyA = append(onlyA, k)
		case inB && !inA:
			onlyB = append(onlyB, k)
		case va == vb:
			same = append(same, k)
		default:
			differ = append(differ, k)
		}
	}
	for _, s := range [][]string{same, onlyA, onlyB, differ} {
		slices.Sort(s)
	}
	return same, onlyA, onlyB, differ
}
