package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
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
	fmt.Fprintf(os.Stderr, "checking the fill against Store.Enter (%d users, accounts and anonymous visitors) ...\n", checkUsers)
	if err := checkAppend(ctx, cfg, &res.Fill); err != nil {
		return "", fmt.Errorf("the fill's check: %w", err)
	}
	srv, err := sim.StartRedisWrapped(nil, 10*time.Second, "--enable-debug-command", "local")
	if err != nil {
		return "", err
	}
	defer srv.Stop()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 4, ReadTimeout: 5 * time.Minute, WriteTimeout: time.Minute, MaxRetries: -1})
	defer rdb.Close()
	if err := fill(ctx, p, cfg, srv.Addr, res); err != nil {
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

// fill puts p.visitors in the room's line: the first (an account)
// through Store.Enter, the others as enter.lua would, in two measured
// phases (used_memory after each): the accounts' records, then the
// anonymous visitors' numbers; used_memory and MEMORY USAGE after DEBUG
// RELOAD.
func fill(ctx context.Context, p params, cfg waitroom.Config, addr string, res *sim.BigRoomResults) error {
	// One connection for every call, opened before the first reading: a
	// connection opened between two readings would be counted in the line.
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1, MaxActiveConns: 1, ConnMaxIdleTime: -1, MaxRetries: -1,
		ReadTimeout: 5 * time.Minute, WriteTimeout: time.Minute, PoolTimeout: 5 * time.Minute})
	defer rdb.Close()
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
	m.Visitors, m.Accounts, m.Anonymous = p.visitors-1, (p.visitors-1)/2, p.visitors/2
	if m.Before, err = sim.InfoField(ctx, rdb, "memory", "used_memory"); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "filling: %d accounts' records, then %d anonymous visitors' numbers ...\n", m.Accounts, m.Anonymous)
	t0 := time.Now()
	if err := appendLine(ctx, rdb, room, 1, p.visitors, accountLife(cfg), func(done int) {
		fmt.Fprintf(os.Stderr, "  %d accounts (%.0f s)\n", done, time.Since(t0).Seconds())
	}, func(ctx context.Context) (err error) {
		m.AfterAccounts, err = sim.InfoField(ctx, rdb, "memory", "used_memory")
		return err
	}); err != nil {
		return err
	}
	// Right after: the line's length read next takes a transaction, whose
	// state the connection keeps.
	if m.AfterFill, err = sim.InfoField(ctx, rdb, "memory", "used_memory"); err != nil {
		return err
	}
	f := &res.Fill
	f.Seconds = time.Since(t0).Seconds()
	f.Accounts, f.Anonymous = (p.visitors+1)/2, p.visitors/2
	f.AccountExample, _ = visitor(0)
	f.AnonymousExample, _ = visitor(1)
	f.Method = fmt.Sprintf("the first visitor (an account) through Store.Enter; then, numbered alternately behind it, %d accounts' records as enter.lua writes them "+
		"(each account's number under its field of its bucket, the bucket's b the counter's birth: HSET of a bucket's records, %d accounts at a time, "+
		"pipelines of %d; then PEXPIRE of each bucket at its latest record's life) and the %d anonymous visitors' numbers "+
		"(enter.lua keeps nothing of them: the room's counter, HSET of next, moves past them)",
		m.Accounts, part, pipe, m.Anonymous)
	if n, err := redisstore.LineLength(ctx, rdb, room); err != nil || n != int64(p.visitors) {
		return fmt.Errorf("the line holds %d, want %d (%v)", n, p.visitors, err)
	}
	return memory(ctx, rdb, m)
}

// part is how many accounts appendLine writes at a time, grouped by
// bucket: a bucket's records of one part go in one HSET.
const part = 250_000

// pipe is how many commands one pipeline of appendLine sends.
const pipe = 2_000

// appendLine puts visitors from..to-1 (visitor(i): an account for even i)
// at the back of room's line, numbered alternately from the counter's next
// number as their enters would have numbered them, and writes what
// enter.lua writes for each (line.lua, place.lua's keepAccount): an
// account's number in its bucket (redisstore.AccountKey: the bucket and
// field), the bucket's 'b' the counter's birth, and a TTL on every bucket
// of its latest record's life (life, of the record's position; keepAccount's
// PEXPIRE GT); an anonymous visitor, nothing but the counter moving past
// its number. The accounts are written first, then the counter moves,
// once: between the two, used_memory tells each kind's cost apart
// (afterAccounts is called then). The room's counter must be born (its
// first visitor entered); nobody else enters meanwhile.
func appendLine(ctx context.Context, rdb redis.Cmdable, room string, from, to int, life func(position int64) time.Duration,
	progress func(accounts int), afterAccounts func(context.Context) error) error {
	settings := "wr:{" + room + "}:settings"
	read, err := rdb.HMGet(ctx, settings, "next", "born").Result()
	if err != nil {
		return fmt.Errorf("the room's counter: %w", err)
	}
	next, err := strconv.ParseInt(fmt.Sprint(read[0]), 10, 64)
	born, _ := read[1].(string)
	if err != nil || born == "" {
		return fmt.Errorf("the room's counter is not born: next %v, born %v", read[0], read[1])
	}
	base := next - int64(from) // visitor i's number; the first visitor's (i 0) is the front
	last := map[string]int64{} // each bucket's latest number
	done := 0
	for i := from; i < to; {
		buckets, n := map[string][]any{}, 0
		for ; i < to && n < part; i++ {
			if i%2 == 1 {
				continue // an anonymous visitor: nothing kept
			}
			v, err := visitor(i)
			if err != nil {
				return err
			}
			key, field := redisstore.AccountKey(room, v)
			buckets[key] = append(buckets[key], field, base+int64(i))
			last[key], n = base+int64(i), n+1
		}
		if err := inPipelines(ctx, rdb, slices.Sorted(maps.Keys(buckets)), func(p redis.Pipeliner, key string) {
			p.HSet(ctx, key, append(buckets[key], "b", born)...)
		}); err != nil {
			return err
		}
		if done += n; progress != nil && done/1_000_000 != (done-n)/1_000_000 {
			progress(done)
		}
	}
	if err := inPipelines(ctx, rdb, slices.Sorted(maps.Keys(last)), func(p redis.Pipeliner, key string) {
		p.PExpire(ctx, key, life(last[key]-base+1))
	}); err != nil {
		return err
	}
	if afterAccounts != nil {
		if err := afterAccounts(ctx); err != nil {
			return err
		}
	}
	return rdb.HSet(ctx, settings, "next", base+int64(to)).Err()
}

// inPipelines sends do's command for each key, pipe keys a pipeline.
func inPipelines(ctx context.Context, rdb redis.Cmdable, keys []string, do func(redis.Pipeliner, string)) error {
	for i := 0; i < len(keys); i += pipe {
		if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, key := range keys[i:min(len(keys), i+pipe)] {
				do(p, key)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// accountLife is how long enter.lua keeps an account's record at a
// position in a room of cfg's defaults (place.lua's accountMs): twice its
// wait at the room's rate, the token's life, and an hour.
func accountLife(cfg waitroom.Config) func(position int64) time.Duration {
	return func(position int64) time.Duration {
		wait := time.Duration(float64(2*position) / max(cfg.AdmitRatePerSec, 0.001) * float64(time.Second))
		return wait + cfg.EntryTokenTTL + time.Hour
	}
}

// memory reads used_memory after DEBUG RELOAD (the snapshot saved and
// loaded back: every bucket's listpack at the size a steady line has),
// then MEMORY USAGE (every sample) and the encoding of every account
// bucket (SCAN MATCH redisstore.AccountPattern).
func memory(ctx context.Context, rdb *redis.Client, m *sim.BigRoomMemory) error {
	fmt.Fprintln(os.Stderr, "DEBUG RELOAD ...")
	if err := rdb.Do(ctx, "DEBUG", "RELOAD").Err(); err != nil {
		return fmt.Errorf("DEBUG RELOAD: %w", err)
	}
	var err error
	if m.AfterReload, err = sim.InfoField(ctx, rdb, "memory", "used_memory"); err != nil {
		return err
	}
	iter := rdb.Scan(ctx, 0, redisstore.AccountPattern(room), 10_000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("SCAN %s: %w", redisstore.AccountPattern(room), err)
	}
	usage, encoding := make([]*redis.IntCmd, len(keys)), make([]*redis.StringCmd, len(keys))
	at := map[string]int{}
	for i, k := range keys {
		at[k] = i
	}
	if err := inPipelines(ctx, rdb, keys, func(p redis.Pipeliner, key string) {
		usage[at[key]], encoding[at[key]] = p.MemoryUsage(ctx, key, 0), p.ObjectEncoding(ctx, key)
	}); err != nil {
		return fmt.Errorf("MEMORY USAGE and OBJECT ENCODING of the buckets: %w", err)
	}
	m.Buckets = len(keys)
	for i := range keys {
		m.BucketBytes += usage[i].Val()
		if encoding[i].Val() == "listpack" {
			m.Listpacks++
		}
	}
	m.Layout = "an account keeps one record: its number, a field of 11 characters (a digest of its id) in one of 262,144 bucket hashes " +
		"(listpacks, each with its line's birth and a TTL), picked by another part of that digest; " +
		"an anonymous visitor keeps nothing: its number is in its ticket, and the room's counter has moved past it"
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

// checkAppend checks the fill's claim (appendLine writes what enter.lua
// writes) on a server of its own: the same users, accounts and anonymous
// visitors alternately, enter one room through Store.Enter (an anonymous
// visitor as the API makes a new one: Anonymous and NewVisitor, Place 0) and
// are put in another as the fill puts them (the first through Store.Enter,
// the others by appendLine), and every key and hash field of the two rooms
// is compared, times by presence (clockFields).
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
	for i, u := range users {
		c := waitroom.Unlimited(u)
		c.Anonymous = i%2 == 1
		c.NewVisitor = c.Anonymous
		if s, err := st.Enter(ctx, "entered", c); err != nil || !s.Joined || s.Number != int64(i+1) {
			return fmt.Errorf("enter %s: %+v %v", u, s, err)
		}
	}
	if s, err := st.Enter(ctx, "appended", waitroom.Unlimited(users[0])); err != nil || !s.Joined {
		return fmt.Errorf("enter %s: %+v %v", users[0], s, err)
	}
	if err := appendLine(ctx, rdb, "appended", 1, checkUsers, accountLife(cfg), nil, nil); err != nil {
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
	f.ByPresence = slices.Sorted(maps.Keys(clockFields))
	return nil
}

// clockFields are the keys and fields that hold times (the counter's
// birth, the line's start, the per-second marks of the wait metric): two
// rooms filled at different instants hold them alike only by presence.
// A bucket's 'b' is the counter's birth too: it is compared as the same
// as the room's or not (bucketState).
var clockFields = map[string]bool{"settings born": true, "settings since": true, "settings mark": true, "budget since": true, "marks": true}

// bucketPrefix starts the short name of an account's bucket (line.lua).
const bucketPrefix = "a:"

// roomState is every key of room (by its name after the room's tag) and
// every field of its hashes ("key field"), each with its value as text,
// and whether the key has a TTL ("key (TTL)"); a list's and a sorted set's
// value is its elements, a set's sorted. The accounts' buckets are
// compared as one (bucketState).
func roomState(ctx context.Context, rdb *redis.Client, name string) (map[string]string, error) {
	prefix := "wr:{" + name + "}:"
	keys, err := rdb.Keys(ctx, prefix+"*").Result()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	defer func() {
		for k := range out {
			if clockFields[k] {
				out[k] = "(a time)"
			}
		}
	}()
	var buckets []string
	for _, key := range keys {
		short := strings.TrimPrefix(key, prefix)
		if strings.HasPrefix(short, bucketPrefix) {
			buckets = append(buckets, key)
			continue
		}
		if err := keyState(ctx, rdb, key, short, out); err != nil {
			return nil, err
		}
	}
	return out, bucketState(ctx, rdb, prefix, buckets, out)
}

// keyState writes key's value (a hash's fields one by one) and whether it
// has a TTL into out, under its short name.
func keyState(ctx context.Context, rdb *redis.Client, key, short string, out map[string]string) error {
	typ, err := rdb.Type(ctx, key).Result()
	if err != nil {
		return err
	}
	out[short+" (TTL)"] = ttlState(ctx, rdb, key)
	switch typ {
	case "hash":
		h, err := rdb.HGetAll(ctx, key).Result()
		for field, v := range h {
			out[short+" "+field] = v
		}
		return err
	case "list":
		l, err := rdb.LRange(ctx, key, 0, -1).Result()
		out[short] = strings.Join(l, ",")
		return err
	case "zset":
		z, err := rdb.ZRangeWithScores(ctx, key, 0, -1).Result()
		out[short] = fmt.Sprint(z)
		return err
	case "set":
		s, err := rdb.SMembers(ctx, key).Result()
		sort.Strings(s)
		out[short] = strings.Join(s, ",")
		return err
	default:
		v, err := rdb.Get(ctx, key).Result()
		out[short] = v
		return err
	}
}

// ttlState says whether key has a TTL (its length depends on when it was
// set: compared by presence).
func ttlState(ctx context.Context, rdb *redis.Client, key string) string {
	if ms, err := rdb.PTTL(ctx, key).Result(); err == nil && ms > 0 {
		return "a TTL"
	}
	return "none"
}

// The names the accounts' buckets are compared under, each over every
// bucket of the room.
const (
	bucketRecords = bucketPrefix + "<5 hex> <account> (every record: bucket, field, number)"
	bucketLine    = bucketPrefix + "<5 hex> b (every bucket: its line)"
	bucketTTL     = bucketPrefix + "<5 hex> (TTL) (every bucket)"
)

// bucketState writes the accounts' buckets into out as three names: every
// record (bucket, field and number), every bucket's 'b' (the counter's
// birth it was written in, as the room's own or not: the two rooms' were
// born at different instants) and whether each has a TTL, each as counts.
func bucketState(ctx context.Context, rdb *redis.Client, prefix string, buckets []string, out map[string]string) error {
	if len(buckets) == 0 {
		return nil
	}
	born, err := rdb.HGet(ctx, prefix+"settings", "born").Result()
	if err != nil {
		return fmt.Errorf("the room's birth: %w", err)
	}
	var records []string
	lines, ttls := map[string]int{}, map[string]int{}
	for _, key := range buckets {
		h, err := rdb.HGetAll(ctx, key).Result()
		if err != nil {
			return err
		}
		short := strings.TrimPrefix(key, prefix)
		for field, v := range h {
			if field != "b" {
				records = append(records, short+" "+field+"="+v)
			}
		}
		switch b, ok := h["b"]; {
		case !ok:
			lines["no b"]++
		case b == born:
			lines["the room's counter's birth"]++
		default:
			lines["another birth ("+b+")"]++
		}
		ttls[ttlState(ctx, rdb, key)]++
	}
	sort.Strings(records)
	out[bucketRecords] = strings.Join(records, ",")
	out[bucketLine], out[bucketTTL] = counts(lines), counts(ttls)
	return nil
}

// counts is a tally as text, its values sorted.
func counts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d: %s", m[k], k))
	}
	return strings.Join(parts, "; ")
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
