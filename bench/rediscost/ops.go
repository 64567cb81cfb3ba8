package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/bench/internal/callgrind"
	"github.com/waitroom/waitroom/bench/internal/fnstore"
	"github.com/waitroom/waitroom/bench/spike/sim"
	"github.com/waitroom/waitroom/redisstore"
)

// room is the one room of a run. Operator-created, as every room in AWS
// (OPEN_ROOMS=false): the room's defaults, with a capacity that holds the line.
const room = "cost"

// User groups (the first letter of their ids).
const (
	gateGroup    = 'g' // admitted, holding entry tokens: the gate's check and commit
	admitGroup   = 'a' // the head of the line when the admission batches run
	waitGroup    = 'u' // the line: position, enter of a user already in line
	newOnGroup   = 'n' // new users entering, limiter on
	newOffGroup  = 'm' // the same, limiter off
	rankedMember = 'z' // members of the plain sorted set of ZRANK
)

// The plain keys of the scale rows, named by this tool: none of the
// store's (and getKey).
const zrankKey = "rediscost:zset"

// parallel runs fn(i) for i in [0, n) on clients goroutines.
func parallel(n, clients int, fn func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				if err := fn(i); err != nil {
					errs <- fmt.Errorf("item %d: %w", i, err)
					next.Store(int64(n))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// enterAll puts users from..to-1 of group in the line of room name
// (unlimited callers).
func enterAll(ctx context.Context, s *redisstore.Store, name string, group byte, from, to, clients int) error {
	return parallel(to-from, clients, func(i int) error {
		user := uid(group, from+i)
		st, err := s.Enter(ctx, name, waitroom.Unlimited(user))
		if err == nil && !st.Joined {
			err = fmt.Errorf("%s did not join (%s)", user, st.Status)
		}
		return fnstore.Expect(st, err, waitroom.Waiting)
	})
}

// fill builds the run's data on a plain redis-server (fast, so that the
// line's per-second marks are few and the same from run to run) through a
// pooled client, and saves it for the server under callgrind to load: the
// room; at the head of its line the gate's users, admitted in one batch at
// a raised rate (set back to the default after); then the admission's
// users; then p.waiting users; the plain keys of ZRANK and GET; and the
// keyspace grown (padKeyspace). It returns the snapshot's directory and
// the gate users' entry tokens.
func (b *bench) fill(ctx context.Context) (dir string, tokens map[string]string, err error) {
	srv, err := sim.StartRedisWrapped(nil, 10*time.Second, "--enable-debug-command", "local") // DEBUG HTSTATS
	if err != nil {
		return "", nil, err
	}
	defer srv.Stop()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: b.p.fillClients, ReadTimeout: time.Minute, MaxRetries: -1})
	defer rdb.Close()
	fill := fnstore.NewStores(rdb, b.cfg).Off
	if err := fnstore.SetRoom(ctx, fill, room, fnstore.RoomSettings(b.cfg, b.cfg.AdmitRatePerSec)); err != nil {
		return "", nil, err
	}
	gate := 2 * (b.p.warmup + b.p.calls) // limiter on, then off
	for _, g := range []struct {
		group byte
		n     int
	}{{gateGroup, gate}, {admitGroup, b.admitUsers()}, {waitGroup, b.p.waiting}} { // in this order in line
		if err := b.enterPaced(ctx, fill, g.group, g.n); err != nil {
			return "", nil, err
		}
	}
	if tokens, err = admitGate(ctx, rdb, b.cfg, gate); err != nil {
		return "", nil, err
	}
	if err := fnstore.SetRoom(ctx, fill, room, fnstore.RoomSettings(b.cfg, b.cfg.AdmitRatePerSec)); err != nil {
		return "", nil, err
	}
	if err := plainKeys(ctx, rdb, b.p.waiting, b.p.warmup+b.p.calls); err != nil {
		return "", nil, err
	}
	// Keys the calls add, at most: per call of each kind, two buckets
	// (gate check, position, new users' enter; limiter on), a lock (the two
	// gate checks) and a stored answer (the two commits); and an entry
	// token per user admitted.
	if err := padKeyspace(ctx, rdb, 10*(b.p.warmup+b.p.calls)+b.admitUsers()); err != nil {
		return "", nil, err
	}
	dir, err = snapshot(ctx, rdb, srv)
	return dir, tokens, err
}

// paceChunk is how many users the fill enters in each second of its own.
const paceChunk = 2000

// enterPaced puts users 0..n-1 of group in the room's line paceChunk at a
// time, each chunk starting on a second of the clock and done within it:
// the line keeps one mark per second in which users entered, and what
// admission scans of them (the marks after its head) is then the same
// count in every run, not the seconds a fill happened to take. A chunk
// that overruns its second stops the run.
func (b *bench) enterPaced(ctx context.Context, s *redisstore.Store, group byte, n int) error {
	for from := 0; from < n; from += paceChunk {
		start := time.Now().Truncate(time.Second).Add(time.Second)
		time.Sleep(time.Until(start))
		to := min(from+paceChunk, n)
		if err := enterAll(ctx, s, room, group, from, to, b.p.fillClients); err != nil {
			return err
		}
		if end := time.Now(); end.Truncate(time.Second) != start {
			return fmt.Errorf("the fill's %d users took %s, past their second: the line would have more marks than other runs (a slower machine: lower paceChunk)", to-from, end.Sub(start))
		}
		b.fillSeconds++
	}
	return nil
}

// plainKeys are the keys of the scale rows: a sorted set of members
// members, and strings strings, one per GET: a key's place in the
// keyspace's hash table (how many keys share its slot) is drawn anew at
// each server start (its hash seed), so one key's GET would be one draw.
func plainKeys(ctx context.Context, rdb *redis.Client, members, strings int) error {
	for i := 0; i < members; i += 10_000 {
		zs := make([]redis.Z, 0, 10_000)
		for j := i; j < min(i+10_000, members); j++ {
			zs = append(zs, redis.Z{Score: float64(j + 1), Member: uid(rankedMember, j)})
		}
		if err := rdb.ZAdd(ctx, zrankKey, zs...).Err(); err != nil {
			return err
		}
	}
	p := rdb.Pipeline()
	for i := range strings {
		p.Set(ctx, getKey(i), "1780000000000:"+uid(rankedMember, i), 0)
	}
	_, err := p.Exec(ctx)
	return err
}

// getKey is the i-th string of the GET row.
func getKey(i int) string { return "rediscost:string:" + strconv.Itoa(i) }

// snapshot saves srv's data (SAVE) and copies it into a directory of its
// own, which a redis-server started there (--dir) loads.
func snapshot(ctx context.Context, rdb *redis.Client, srv *sim.Redis) (string, error) {
	if err := rdb.Save(ctx).Err(); err != nil {
		return "", fmt.Errorf("SAVE: %w", err)
	}
	b, err := os.ReadFile(filepath.Join(srv.Dir(), "dump.rdb"))
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "waitroom-rediscost-")
	if err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, "dump.rdb"), b, 0o600)
}

// padKeyspace grows the keyspace's two hash tables (all keys, and keys
// with a TTL) before the measured calls, so that the measured calls, which add up to growth keys
// with a TTL, never make them double: a table that doubles is moved bucket
// by bucket, partly by the calls and partly by the timer (databasesCron),
// in shares that depend on the run's timing. It adds keys with a TTL of a
// day until both tables are over half full at a size that holds all the
// keys and the growth (a table doubles when full, halves under a tenth
// full), then waits until they are moved (DEBUG HTSTATS: no rehashing target).
func padKeyspace(ctx context.Context, rdb *redis.Client, growth int) error {
	keys, expires, err := keyspace(ctx, rdb)
	if err != nil {
		return err
	}
	size := int64(1)
	for size < 2*(keys+int64(growth)) {
		size *= 2
	}
	p := rdb.Pipeline()
	for i := range size/2 + 1 - expires {
		p.Set(ctx, fmt.Sprintf("rediscost:pad:%d", i), "1", 24*time.Hour)
	}
	if _, err := p.Exec(ctx); err != nil {
		return err
	}
	return waitRehashed(ctx, rdb)
}

// waitRehashed waits until the keyspace's tables are not being moved to a
// new size (DEBUG HTSTATS shows no rehashing target).
func waitRehashed(ctx context.Context, rdb *redis.Client) error {
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		stats, err := rdb.Do(ctx, "DEBUG", "HTSTATS", "0").Text()
		if err != nil {
			return fmt.Errorf("DEBUG HTSTATS 0: %w", err)
		}
		if !strings.Contains(stats, "rehashing target") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the keyspace still rehashes after a minute")
		}
	}
}

// admitGate admits the n users at the head of the line in one batch (the
// room's rate raised to n per admission interval for that batch alone),
// then each claims its entry token at its poll, as every number's holder
// does (claim.lua: admission hands out numbers, never a user's token).
func admitGate(ctx context.Context, rdb *redis.Client, cfg waitroom.Config, n int) (map[string]string, error) {
	fast := cfg
	fast.AdmitRatePerSec = float64(n) / cfg.AdmitInterval.Seconds()
	s := redisstore.New(rdb, fast)
	if err := fnstore.SetRoom(ctx, s, room, fnstore.RoomSettings(cfg, fast.AdmitRatePerSec)); err != nil {
		return nil, err
	}
	batch, err := waitroom.RunBatch(ctx, s)
	if err != nil {
		return nil, err
	}
	admitted := 0
	for _, rb := range batch.Rooms {
		admitted += len(rb.Admitted)
	}
	if admitted != n {
		return nil, fmt.Errorf("the gate's batch admitted %d numbers, want the %d at the head of the line", admitted, n)
	}
	tokens := map[string]string{}
	for i := range n {
		st, err := s.Position(ctx, room, waitroom.Unlimited(uid(gateGroup, i)))
		if err = fnstore.Expect(st, err, waitroom.Ready); err == nil && st.Token == "" {
			err = fmt.Errorf("READY without a token")
		}
		if err != nil {
			return nil, fmt.Errorf("the gate's %s claiming its token: %w", uid(gateGroup, i), err)
		}
		tokens[uid(gateGroup, i)] = st.Token
	}
	return tokens, nil
}

// spread is the i-th of n users spread evenly over the line of waiting.
func spread(i, n, waiting int) int {
	stride := waiting / n
	return i*stride + stride/2
}

// lineOps are position and enter of a user in line, and enter of a new
// user, with the limiter on and off. Each caller's prep is a position
// call of its own, as a visitor's poll before the measured call.
func (b *bench) lineOps(limiter string) []op {
	s, n := b.st.Of(limiter), b.p.warmup+b.p.calls
	waiting := func(i int) int { return spread(i, n, b.p.waiting) }
	poll := func(group byte, idx func(int) int, want waitroom.Status) func(ctx context.Context, i int) error {
		return func(ctx context.Context, i int) error {
			st, err := s.Position(ctx, room, as(ctx, group, idx(i)))
			return fnstore.Expect(st, err, want)
		}
	}
	newGroup := byte(newOnGroup)
	if limiter == "off" {
		newGroup = newOffGroup
	}
	same := func(i int) int { return i }
	return []op{
		{key: "position", name: "position", limiter: limiter, items: n,
			prep: poll(waitGroup, waiting, waitroom.Waiting), call: poll(waitGroup, waiting, waitroom.Waiting)},
		{key: "enterInLine", name: "enter (already in line)", limiter: limiter, items: n,
			prep: poll(waitGroup, waiting, waitroom.Waiting), call: func(ctx context.Context, i int) error {
				st, err := s.Enter(ctx, room, as(ctx, waitGroup, waiting(i)))
				if err == nil && st.Joined {
					return fmt.Errorf("joined again")
				}
				return fnstore.Expect(st, err, waitroom.Waiting)
			}},
		{key: "enterNew", name: "enter (new user)", limiter: limiter, items: n,
			prep: poll(newGroup, same, waitroom.NotInQueue), call: func(ctx context.Context, i int) error {
				st, err := s.Enter(ctx, room, as(ctx, newGroup, i))
				if err == nil && !st.Joined {
					return fmt.Errorf("did not join")
				}
				return fnstore.Expect(st, err, waitroom.Waiting)
			}},
	}
}

// gateOps are the order gate's check (BeginOrder) and commit
// (CommitOrder) of admitted users, each user once, half of them with the
// limiter on and half off. A check's prep is the user's poll that found
// it READY; the commit follows its own check, as after an order.
func (b *bench) gateOps(limiter string, tokens map[string]string) []op {
	s, n := b.st.Of(limiter), b.p.warmup+b.p.calls
	base := 0
	if limiter == "off" {
		base = n
	}
	leases := make([]waitroom.Lease, n)
	user := func(i int) string { return uid(gateGroup, base+i) }
	answer := waitroom.StoredAnswer{Status: 201, Body: `{"orderId":"ord-1"}`, ContentType: "application/json"}
	return []op{
		{key: "gateCheck", name: "gate check (BeginOrder)", limiter: limiter, items: n,
			prep: func(ctx context.Context, i int) error {
				st, err := s.Position(ctx, room, as(ctx, gateGroup, base+i))
				return fnstore.Expect(st, err, waitroom.Ready)
			},
			call: func(ctx context.Context, i int) error {
				l, err := s.BeginOrder(ctx, as(ctx, gateGroup, base+i), waitroom.OrderAttempt{Room: room, Token: tokens[user(i)],
					IdempotencyKey: "order-" + user(i), RequestHash: "a1b2c3d4e5f60718", CreatedRoomsOnly: true}) // ORDER_ROOMS unset: the default
				switch {
				case err != nil:
					return err
				case l.LockValue == "" || l.Replay != nil:
					return fmt.Errorf("no fresh lock: %+v", l)
				}
				leases[i] = l
				return nil
			}},
		{key: "gateCommit", name: "gate commit (CommitOrder)", limiter: limiter, items: n, noLimiter: true,
			call: func(ctx context.Context, i int) error {
				return s.CommitOrder(ctx, leases[i], answer)
			},
			check: func(ctx context.Context, from, to int) error {
				for i := from; i < to; i++ { // the token is consumed: the user is out of line
					st, err := b.st.Off.Position(ctx, room, waitroom.Unlimited(user(i)))
					if err := fnstore.Expect(st, err, waitroom.NotInQueue); err != nil {
						return fmt.Errorf("after commit, %s: %w", user(i), err)
					}
				}
				return nil
			}},
	}
}

// scaleOps are a plain ZRANK on a sorted set as large as the line, and a
// plain GET of a short string: one command's cost, for scale.
func (b *bench) scaleOps() []op {
	n := b.p.warmup + b.p.calls
	return []op{
		{key: "zrank", name: "plain ZRANK (" + fmt.Sprint(b.p.waiting) + " members)", items: n, call: func(ctx context.Context, i int) error {
			j := spread(i, n, b.p.waiting)
			r, err := b.one.ZRank(ctx, zrankKey, uid(rankedMember, j)).Result()
			if err == nil && r != int64(j) {
				err = fmt.Errorf("rank %d, want %d", r, j)
			}
			return err
		}},
		{key: "get", name: "plain GET (a string of its own each call)", items: n, call: func(ctx context.Context, i int) error {
			v, err := b.one.Get(ctx, getKey(i)).Result()
			if err == nil && v != "1780000000000:"+uid(rankedMember, i) {
				err = fmt.Errorf("GET %s: %q", getKey(i), v)
			}
			return err
		}},
	}
}

// admitBatch measures p.admitCalls admission batches of the room at the
// configuration's rate and interval, after admitWarmup of them: each after
// a pause of more than an interval, so that each finds a full budget and
// admits one batch's worth (BatchSize users), whatever the machine's speed.
func (b *bench) admitBatch(ctx context.Context) (sim.RedisCostOp, *callgrind.Profile, error) {
	res := sim.RedisCostOp{Key: "admitBatch", Name: "admit batch (AdmitBatch, one room)"}
	paced := fnstore.NewPaced(b.cfg, b.st.Off)
	want := paced.Want
	batch := func() error {
		admitted, err := paced.Next(ctx)
		if err != nil {
			return err
		}
		gate := int64(2 * (b.p.warmup + b.p.calls)) // the gate's numbers, admitted by the fill
		for _, a := range admitted {
			if a.User != "" || a.Number <= gate || a.Number > gate+int64(b.admitUsers()) {
				return fmt.Errorf("admit batch admitted %+v: the admission's users' numbers (after the gate's %d) should be at the head of the line", a, gate)
			}
		}
		return nil
	}
	for range b.admitWarmups() {
		if err := batch(); err != nil {
			return res, nil, err
		}
	}
	prof, err := b.cg.Count(ctx, b.p.admitCalls, func(int) error { return batch() })
	if err != nil {
		return res, nil, err
	}
	res.Calls, res.Instructions, res.Timer, res.Admitted = b.p.admitCalls, prof.Counted(), prof.Timer(), want
	return res, prof, nil
}

// admitWarmup is how long admission runs at least before its batches are
// counted: over a minute, the history a room keeps of its admissions
// (RoomStatus.AdmittedLastMinute), so that whatever the batch keeps per
// second is at its steady size.
const admitWarmup = 65 * time.Second

// admitWarmups is that many batches, each after admitPause: a count, not a
// time, so that every run makes the same calls whatever the machine's speed.
func (b *bench) admitWarmups() int {
	return int((admitWarmup + fnstore.AdmitPause(b.cfg) - 1) / fnstore.AdmitPause(b.cfg))
}

// admitUsers are the users the admission batches admit, warm-up included.
func (b *bench) admitUsers() int {
	return (b.admitWarmups() + b.p.admitCalls) * int(b.cfg.BatchSize())
}
