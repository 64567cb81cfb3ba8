package cacheacl_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/cacheacl"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// functions are every function with a grant, in a fixed order.
var functions = []string{cacheacl.Enter, cacheacl.Position, cacheacl.Admit, cacheacl.OrderGate, cacheacl.Admin, cacheacl.IntakeConsumer}

// ownCommands are what each function sends outside its scripts: the
// scripts themselves (by hash, by text after NOSCRIPT, SCRIPT LOAD where
// a pipeline of them met a node without its scripts), the registries'
// set commands, WAIT (DURABLE_WRITES=wait), and the cluster client's slot
// map. A function's grant is exactly these and its scripts' commands.
var ownCommands = map[string][]string{
	cacheacl.Enter:          {"cluster|slots", "command", "eval", "evalsha", "sadd"},
	cacheacl.Position:       {"cluster|slots", "command", "eval", "evalsha", "sadd"},
	cacheacl.Admit:          {"cluster|slots", "command", "eval", "evalsha", "sadd", "script|load", "smembers", "srem"},
	cacheacl.OrderGate:      {"cluster|slots", "command", "eval", "evalsha", "wait"},
	cacheacl.Admin:          {"cluster|slots", "command", "eval", "evalsha", "sadd", "script|load", "smembers"},
	cacheacl.IntakeConsumer: {"cluster|slots", "command", "eval", "evalsha", "sadd"},
}

var callRE = regexp.MustCompile(`redis\.p?call\(\s*['"]([A-Za-z_]+)['"]`)

// scriptCommands are the commands a script's text calls. Every call names
// its command as a literal (checked here), so the list is complete.
func scriptCommands(t *testing.T, name string) []string {
	t.Helper()
	src, ok := redisstore.Source(name)
	if !ok {
		t.Fatalf("no script %s", name)
	}
	calls := strings.Count(src, "redis.call(") + strings.Count(src, "redis.pcall(")
	found := callRE.FindAllStringSubmatch(src, -1)
	if len(found) != calls {
		t.Fatalf("%s: %d calls, %d with a literal command: a command chosen at run time cannot be granted exactly", name, calls, len(found))
	}
	var out []string
	for _, m := range found {
		out = append(out, strings.ToLower(m[1]))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Each function's commands are exactly its scripts' and its own: none
// missing (a script would fail with NOPERM in the middle of a sale), none
// more (least privilege).
func TestGrantsAreTheScriptsCommandsAndNoMore(t *testing.T) {
	if got := slices.Sorted(maps.Keys(cacheacl.Grants)); !slices.Equal(got, slices.Sorted(slices.Values(functions))) {
		t.Fatalf("grants for %v, want %v", got, functions)
	}
	covered := map[string]bool{}
	for _, fn := range functions {
		g := cacheacl.Grants[fn]
		want := slices.Clone(ownCommands[fn])
		for _, s := range g.Scripts {
			covered[s] = true
			want = append(want, scriptCommands(t, s)...)
		}
		slices.Sort(want)
		want = slices.Compact(want)
		got := slices.Sorted(slices.Values(g.Commands))
		if !slices.Equal(got, want) {
			t.Errorf("%s may run %v,\nits scripts and own commands are %v", fn, got, want)
		}
	}
	// front.lua is the local runner's live stream: no function runs it.
	for _, s := range redisstore.Scripts() {
		if !covered[s] && s != "front.lua" {
			t.Errorf("no function's grant covers %s", s)
		}
	}
}

// Every user id fits ElastiCache's pattern after the longest prefix the
// stack makes (28 characters), and no two functions share one.
func TestUserSuffixes(t *testing.T) {
	seen := map[string]string{}
	re := regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)
	for _, fn := range functions {
		s := cacheacl.Grants[fn].UserSuffix
		if id := strings.Repeat("w", 28) + "-" + s; !re.MatchString(id) || len(id) > 40 {
			t.Errorf("%s: user id %q", fn, id)
		}
		if other, dup := seen[s]; dup {
			t.Errorf("%s and %s share the user %q", fn, other, s)
		}
		seen[s] = fn
	}
}

func TestAccessStringUnknownFunction(t *testing.T) {
	if acl, ok := cacheacl.AccessString("nobody"); ok || acl != "" {
		t.Errorf("AccessString(nobody) = %q, %v", acl, ok)
	}
}

// setUsers creates every function's user on each node exactly as the
// stack writes it (AccessString), with a password standing for the IAM
// token, and switches the default user off as the stack does.
func setUsers(t *testing.T, addrs []string) {
	t.Helper()
	ctx := context.Background()
	for _, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		for _, fn := range functions {
			acl, _ := cacheacl.AccessString(fn)
			args := []any{"acl", "setuser", user(fn), "reset", ">" + password}
			for _, rule := range strings.Fields(acl) {
				args = append(args, rule)
			}
			if err := c.Do(ctx, args...).Err(); err != nil {
				t.Fatalf("ACL SETUSER %s %s: %v", user(fn), acl, err)
			}
		}
		c.Close()
	}
}

const password = "a-password-standing-for-the-iam-token"

func user(fn string) string { return "waitroom-" + cacheacl.Grants[fn].UserSuffix }

// keyKinds are one key of every kind the store names, and keys of no
// kind, with the functions that may touch each: the table the grants are
// checked against, written out once more on purpose.
var keyKinds = map[string][]string{
	"wr:rooms":                      {"enter", "position", "admit", "admin", "intake-consumer"},
	"wr:created":                    {"admin"},
	"wr:{sale}:settings":            functions,
	"wr:{sale}:tokens":              functions,
	"wr:{sale}:line":                {"enter", "position", "admit", "admin", "intake-consumer"},
	"wr:{sale}:a:1f2e3":             {"enter", "position", "intake-consumer"},
	"wr:{sale}:budget":              {"enter", "position", "admit", "admin", "intake-consumer"},
	"wr:{sale}:batches":             {"enter", "position", "admit", "intake-consumer"},
	"wr:{sale}:unclaimed":           {"enter", "position", "admit", "intake-consumer"},
	"wr:{sale}:c:alice":             {"enter", "position", "intake-consumer"},
	"wr:{sale}:marks":               {"enter", "admit", "admin", "intake-consumer"},
	"wr:{sale}:admits":              {"enter", "admit", "admin", "intake-consumer"},
	"wr:{sale}:u:alice":             {"enter", "position", "admit", "order-gate", "intake-consumer"},
	"wr:{sale}:control":             {"admit", "admin"},
	"wr:{sale}:downstream":          {"admit", "order-gate"},
	"wr:{sale}:lock:alice":          {"order-gate"},
	"wr:{sale}:failed:alice":        {"order-gate"},
	"wr:{sale}:idem:5:alice:k1":     {"order-gate"},
	"wr:{sale}:pow:bm9uY2U":         {"enter"},
	"wr:{sale}:applied:5:alice":     {"position", "intake-consumer"},
	"wr:{sale}:something-else":      nil,
	"wr:{sale}":                     nil,
	"wr:other":                      nil,
	"session:42":                    nil,
	"{sale}:settings":               nil,
	"wr:{sale}:settings:additional": nil,
}

// Every kind of key the store names (redisstore: roomKeys' r.key("…")
// and the registries) is a row of keyKinds, so a new kind cannot ship
// without someone deciding which functions may touch it: its function
// would otherwise meet NOPERM in AWS alone, where a test's sale may not
// reach. (Scripts build keys only from KEYS and the token prefix, ARGV.)
func TestEveryKeyKindIsInTheTable(t *testing.T) {
	files, err := filepath.Glob("../../redisstore/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("redisstore sources: %v", err)
	}
	kindRE := regexp.MustCompile(`\.key\("([a-z_]+)(:?)"`)
	globalRE := regexp.MustCompile(`= "(wr:[a-z]+)"`)
	found := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range kindRE.FindAllStringSubmatch(string(src), -1) {
			found++
			key := "wr:{sale}:" + m[1]
			if m[2] == ":" { // a prefix: the table's row has something after it
				key += ":"
			}
			if !slices.ContainsFunc(slices.Collect(maps.Keys(keyKinds)), func(k string) bool {
				return k == key || m[2] == ":" && strings.HasPrefix(k, key) && keyKinds[k] != nil
			}) {
				t.Errorf("%s names the key kind %q, which keyKinds (and so no grant) knows", f, key)
			}
		}
		for _, m := range globalRE.FindAllStringSubmatch(string(src), -1) {
			found++
			if _, ok := keyKinds[m[1]]; !ok {
				t.Errorf("%s names the key %q, which keyKinds (and so no grant) knows", f, m[1])
			}
		}
	}
	if found < 18 {
		t.Errorf("found %d key kinds in redisstore, fewer than the table's", found)
	}
}

// probes are a command of every kind the grants name, and commands no
// function needs, each with arguments (K: a key the function may touch).
var probes = map[string][]string{
	"get": {"get", "K"}, "set": {"set", "K", "v"}, "del": {"del", "K"}, "exists": {"exists", "K"},
	"hget": {"hget", "K", "f"}, "hset": {"hset", "K", "f", "v"}, "hdel": {"hdel", "K", "f"}, "hexists": {"hexists", "K", "f"},
	"hgetall": {"hgetall", "K"}, "hincrby": {"hincrby", "K", "f", "1"}, "hlen": {"hlen", "K"}, "hmget": {"hmget", "K", "f"},
	"hscan": {"hscan", "K", "0"}, "llen": {"llen", "K"}, "lrange": {"lrange", "K", "0", "1"}, "ltrim": {"ltrim", "K", "0", "1"},
	"rpush": {"rpush", "K", "v"}, "persist": {"persist", "K"}, "pexpire": {"pexpire", "K", "1"}, "pttl": {"pttl", "K"},
	"time": {"time"}, "unlink": {"unlink", "K"}, "zadd": {"zadd", "K", "1", "m"}, "zcard": {"zcard", "K"},
	"zcount": {"zcount", "K", "0", "1"}, "zrange": {"zrange", "K", "0", "1"}, "zrangebyscore": {"zrangebyscore", "K", "0", "1"},
	"zrank": {"zrank", "K", "m"}, "zrem": {"zrem", "K", "m"}, "zremrangebyrank": {"zremrangebyrank", "K", "0", "1"},
	"zremrangebyscore": {"zremrangebyscore", "K", "0", "1"}, "zrevrangebyscore": {"zrevrangebyscore", "K", "1", "0"},
	"zscore": {"zscore", "K", "m"}, "sadd": {"sadd", "K", "m"}, "srem": {"srem", "K", "m"}, "smembers": {"smembers", "K"},
	"evalsha": {"evalsha", strings.Repeat("0", 40), "1", "K"}, "eval": {"eval", "return 1", "1", "K"},
	"script|load": {"script", "load", "return 1"}, "cluster|slots": {"cluster", "slots"}, "wait": {"wait", "1", "0"},
	"command": {"command", "info", "get"},
	// Never granted.
	"flushall": {"flushall"}, "flushdb": {"flushdb"}, "keys": {"keys", "*"}, "scan": {"scan", "0"},
	"config|get": {"config", "get", "*"}, "config|set": {"config", "set", "maxmemory", "1"}, "debug": {"debug", "sleep", "0"},
	"script|flush": {"script", "flush"}, "script|kill": {"script", "kill"}, "function|load": {"function", "load", "x"},
	"fcall": {"fcall", "f", "1", "K"}, "eval_ro": {"eval_ro", "return 1", "1", "K"}, "acl|setuser": {"acl", "setuser", "x"},
	"acl|list": {"acl", "list"}, "shutdown": {"shutdown"}, "monitor": {"monitor"}, "client|list": {"client", "list"},
	"client|kill": {"client", "kill", "id", "1"}, "info": {"info"}, "publish": {"publish", "c", "m"},
	"subscribe": {"subscribe", "c"}, "save": {"save"}, "bgsave": {"bgsave"}, "replicaof": {"replicaof", "no", "one"},
	"dump": {"dump", "K"}, "restore": {"restore", "K", "0", "x"}, "rename": {"rename", "K", "K"}, "copy": {"copy", "K", "K"},
	"select": {"select", "1"}, "swapdb": {"swapdb", "0", "1"}, "cluster|nodes": {"cluster", "nodes"},
	"cluster|reset": {"cluster", "reset"}, "sort": {"sort", "K"}, "object|encoding": {"object", "encoding", "K"},
	"memory|usage": {"memory", "usage", "K"}, "move": {"move", "K", "1"}, "getdel": {"getdel", "K"}, "incr": {"incr", "K"},
	"lpush": {"lpush", "K", "v"}, "hkeys": {"hkeys", "K"}, "zunionstore": {"zunionstore", "K", "1", "K"}, "expire": {"expire", "K", "1"},
	"randomkey": {"randomkey"}, "dbsize": {"dbsize"}, "slowlog|get": {"slowlog", "get"}, "latency|latest": {"latency", "latest"},
}

// dryRun asks the server whether user may run args (ACL DRYRUN, Redis
// 7.0+ and Valkey): "" when it may, the refusal otherwise.
func dryRun(ctx context.Context, c *redis.Client, user string, args ...string) string {
	all := []any{"acl", "dryrun", user}
	for _, a := range args {
		all = append(all, a)
	}
	res, err := c.Do(ctx, all...).Text()
	if err != nil {
		return err.Error()
	}
	if res != "OK" {
		return res
	}
	return ""
}

// The users as the stack writes them, on a real server: each may touch the
// keys of the table above and no other, run its grant's commands and no
// other; nothing else in the key space, no administration, no
// FLUSHALL, no KEYS, no CONFIG, no pub/sub.
func TestUsersAreTightOnRedisServer(t *testing.T) {
	s := redistest.Start(t)
	setUsers(t, []string{s.Addr})
	c := s.Client()
	ctx := context.Background()
	for _, fn := range functions {
		u := user(fn)
		for key, may := range keyKinds {
			refusal := dryRun(ctx, c, u, "evalsha", strings.Repeat("0", 40), "1", key)
			if want := slices.Contains(may, fn); want != (refusal == "") {
				t.Errorf("%s may touch %s: %v (%s), want %v", fn, key, refusal == "", refusal, want)
			}
		}
		granted := cacheacl.Grants[fn].Commands
		for _, cmd := range granted {
			if _, ok := probes[cmd]; !ok {
				t.Errorf("no probe for %s's command %s", fn, cmd)
			}
		}
		for cmd, args := range probes {
			a := slices.Clone(args)
			for i := range a {
				if a[i] == "K" {
					a[i] = probeKey(cmd, fn)
				}
			}
			refusal := dryRun(ctx, c, u, a...)
			if strings.Contains(refusal, "wrong number") || strings.Contains(refusal, "nknown") || strings.Contains(refusal, "access the") {
				t.Fatalf("probe %v for %s is broken: %s", a, fn, refusal)
			}
			if want := slices.Contains(granted, cmd); want != (refusal == "") {
				t.Errorf("%s may run %s: %v (%s), want %v", fn, cmd, refusal == "", refusal, want)
			}
		}
	}
}

// probeKey is a key fn may touch, of the type cmd works on: the rooms'
// registry for the set commands, the room's settings otherwise.
func probeKey(cmd, fn string) string {
	if slices.Contains([]string{"sadd", "srem", "smembers"}, cmd) && slices.Contains(keyKinds["wr:rooms"], fn) {
		return "wr:rooms"
	}
	return "wr:{sale}:settings"
}

// asFunction is the store each function builds (redisstore.NewClient, as
// internal/lambdaenv does), logged in as the function's own user.
type asFunction func(fn string) *redisstore.Store

// journey runs every function's operations as that function's user, in
// the order a sale runs them: the admin creates an adaptive room, visitors
// enter (directly, through the broker's accept and the consumer), poll,
// are admitted, and order (committed, replayed and released); admission
// forgets an empty open room and hands the order API's window to the
// adaptive law; the admin reads and changes the room. Any NOPERM fails it.
func journey(t *testing.T, store asFunction) {
	t.Helper()
	ctx := context.Background()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	admin, enter, position, admit, gate, consumer := store(cacheacl.Admin), store(cacheacl.Enter), store(cacheacl.Position),
		store(cacheacl.Admit), store(cacheacl.OrderGate), store(cacheacl.IntakeConsumer)
	_, err := admin.Update(ctx, "sale", true, func(s waitroom.Settings) (waitroom.Settings, error) {
		s.RatePerSec, s.InstantAdmit = 50, false
		s.Adaptive = &waitroom.Adaptive{TargetP95Ms: 500, MinRatePerSec: 10, MaxRatePerSec: 100}
		return s, nil
	})
	must("admin creates the room", err)
	for _, u := range []string{"alice", "bob"} {
		_, err := enter.Enter(ctx, "sale", waitroom.Unlimited(u))
		must("enter "+u, err)
	}
	must("the broker's accept", enter.Admissible(ctx, "sale", waitroom.Unlimited("dave")))
	for range 2 { // the second delivery finds it applied
		_, _, err := consumer.Apply(ctx, waitroom.Entry{Room: "sale", User: "carol", AcceptedAt: time.Now()}, time.Hour)
		must("the consumer applies carol", err)
	}
	_, found, err := position.LastApplied(ctx, "sale", "carol")
	must("position reads carol's application", err)
	if !found {
		t.Fatal("carol's entry was not recorded as applied")
	}
	_, err = position.Position(ctx, "ghost-room", waitroom.Unlimited("nobody")) // registers an empty open room
	must("position in an empty open room", err)
	tokens := map[string]string{}
	for i := 0; len(tokens) < 3 && i < 100; i++ {
		_, err := waitroom.RunBatch(ctx, admit)
		must("admission", err)
		for _, u := range []string{"alice", "bob", "carol"} {
			st, err := position.Position(ctx, "sale", waitroom.Unlimited(u))
			must("position of "+u, err)
			if st.Status == waitroom.Ready {
				tokens[u] = st.Token
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	if len(tokens) < 3 {
		t.Fatalf("admitted %v only", slices.Sorted(maps.Keys(tokens)))
	}
	ok := waitroom.DownstreamCall{Latency: 40 * time.Millisecond, Outcome: waitroom.OutcomeOK}
	lease, err := gate.BeginOrder(ctx, waitroom.Unlimited("alice"), waitroom.OrderAttempt{Room: "sale", Token: tokens["alice"], IdempotencyKey: "k1"})
	must("alice's order begins", err)
	lease.Downstream = ok
	must("alice's order commits", gate.CommitOrder(ctx, lease, waitroom.StoredAnswer{Status: 201, Body: `{"id":1}`}))
	replay, err := gate.BeginOrder(ctx, waitroom.Unlimited(lease.User), lease.OrderAttempt)
	must("alice's order replays", err)
	if replay.Replay == nil {
		t.Fatal("alice's retry was not a replay")
	}
	lease, err = gate.BeginOrder(ctx, waitroom.Unlimited("bob"), waitroom.OrderAttempt{Room: "sale", Token: tokens["bob"]})
	must("bob's order begins", err)
	lease.Downstream = waitroom.DownstreamCall{Latency: time.Second, Outcome: waitroom.OutcomeTimeout}
	must("bob's order is released", gate.ReleaseOrder(ctx, lease))
	deadline := time.Now().Add(waitroom.AdaptWindow + 500*time.Millisecond)
	for time.Now().Before(deadline) { // the window ends: admission hands it to the law (adapt.lua)
		_, err := waitroom.RunBatch(ctx, admit)
		must("admission after the orders", err)
		time.Sleep(100 * time.Millisecond)
	}
	rooms, err := admin.List(ctx)
	must("admin lists the rooms", err)
	if len(rooms) != 1 || rooms[0].Room != "sale" {
		t.Errorf("rooms %+v, want the sale alone (the empty open room forgotten)", rooms)
	}
	_, err = admin.Update(ctx, "sale", false, func(s waitroom.Settings) (waitroom.Settings, error) { s.Paused = true; return s, nil })
	must("admin pauses the room", err)
	_, err = admin.Status(ctx, "sale")
	must("admin reads the room", err)
}

func storeConfig() waitroom.Config {
	return waitroom.Config{AdmitRatePerSec: 50, AdmitInterval: 100 * time.Millisecond, AdmitBatches: 10,
		EntryTokenTTL: 300 * time.Second, QueueCapacity: 1000, OrderTimeout: 2 * time.Second, OpenRooms: true}
}

func newStore(t *testing.T, cfg waitroom.Config, fn string) *redisstore.Store {
	t.Helper()
	rdb, err := redisstore.NewClient(cfg, redisstore.Credentials{Username: user(fn), Password: password})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	return redisstore.New(rdb, cfg)
}

// Each function's users suffice for everything it does, on one server
// (a replication group's primary: REDIS_CLUSTER=false)...
func TestEveryFunctionWorksAsItsUserOnRedisServer(t *testing.T) {
	s := redistest.Start(t)
	setUsers(t, []string{s.Addr})
	cfg := storeConfig()
	cfg.RedisURL = s.URL()
	journey(t, func(fn string) *redisstore.Store { return newStore(t, cfg, fn) })
	checkNothingRefused(t, s.Client())
}

// ...and on a cluster (ElastiCache Serverless: REDIS_CLUSTER=true), where
// the client first reads the slot map and a pipeline's scripts go to
// several nodes.
func TestEveryFunctionWorksAsItsUserOnACluster(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	setUsers(t, c.Addrs)
	cfg := storeConfig()
	cfg.RedisCluster = true
	cfg.RedisURL = "redis://" + c.Addrs[0] + "?addr=" + strings.Join(c.Addrs[1:], "&addr=")
	journey(t, func(fn string) *redisstore.Store { return newStore(t, cfg, fn) })
	for _, addr := range c.Addrs {
		checkNothingRefused(t, redis.NewClient(&redis.Options{Addr: addr}))
	}
}

// checkNothingRefused: the server's ACL log is empty but for the client's
// CLIENT SETINFO (its library name, which go-redis sends on every new
// connection and whose refusal it ignores): no command a function sent was
// refused, even one whose error the store swallowed.
func checkNothingRefused(t *testing.T, c *redis.Client) {
	t.Helper()
	defer c.Close()
	entries, err := c.Do(context.Background(), "acl", "log").Slice()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		s := fmt.Sprint(e)
		if !strings.Contains(s, "client|setinfo") {
			t.Errorf("refused: %s", s)
		}
	}
}
