// Package cacheacl is what each function may do on the cache: the key
// patterns and commands of its own ElastiCache user (issue 32, "least
// privilege to the last key"). It is the one table the stack reads (infra
// writes each function's user with AccessString) and the tests of this
// package prove on a real server: every operation of a function runs as its
// user, and everything else is refused. It imports nothing, so the infra
// module reads it without the store's dependencies.
//
// A script runs with its caller's permissions: every command it calls, and
// every key that command touches, must be granted too. So a function's
// commands are those its scripts call (Grant.Scripts) and those it sends
// itself; its keys are those of its scripts and its own commands.
package cacheacl

import (
	"slices"
	"strings"
)

// The functions, as infra and build/ name them.
const (
	Enter          = "enter"
	Position       = "position"
	Admit          = "admit"
	OrderGate      = "order-gate"
	Admin          = "admin"
	IntakeConsumer = "intake-consumer"
)

// Grant is one function's share of the cache.
type Grant struct {
	// UserSuffix names its user: <namePrefix>-<UserSuffix> (short, so that
	// the longest prefix the stack makes, 28 characters, leaves room).
	UserSuffix string
	// Keys are key patterns (Redis glob): the two registries outside any
	// room, and a room's keys by their name after its hash tag (Room).
	Keys []string
	// Scripts are the store's scripts it runs (redisstore.Source names).
	Scripts []string
	// Commands are every command it may send: its scripts' (checked
	// against their text by the tests) and its own.
	Commands []string
}

// The registries outside any room's slot (redisstore's roomsKey, createdKey).
const (
	roomsKey   = "wr:rooms"
	createdKey = "wr:created"
)

// Room is the pattern of one kind of room key, wr:{<room>}:<name>.
func Room(name string) string { return "wr:{*}:" + name }

// connection is what the cluster client (REDIS_CLUSTER=true) itself sends:
// the slot map, and COMMAND, the commands' key positions it routes by
// (refused, it asks again before every call: a round trip each). AUTH and
// HELLO need no grant; CLIENT SETINFO (the library's name) is refused and
// go-redis goes on without it.
var connection = []string{"cluster|slots", "command"}

// scripts run by hash, by text when the node lost it (NOSCRIPT).
var scripts = []string{"evalsha", "eval"}

// The commands the line's scripts call (enter.lua, apply.lua wrapping it).
var lineCommands = []string{"del", "get", "hdel", "hget", "hincrby", "hlen", "hmget", "hset", "persist",
	"pexpire", "set", "time", "zadd", "zcard", "zcount", "zrangebyscore", "zrank", "zscore"}

// lineKeys are the keys enter.lua reads and writes (and apply.lua).
var lineKeys = []string{Room("settings"), Room("line"), Room("u:*"), Room("marks"), Room("budget"),
	Room("tokens"), Room("admits"), Room("a:*"), Room("batches"), Room("unclaimed"), Room("c:*")}

// Grants are the functions' shares, by function.
var Grants = map[string]Grant{
	// enter: the line's script, the broker's accept (the room, the
	// limiter, a challenge's single use), and the room's registration for
	// admission.
	Enter: {
		UserSuffix: "enter",
		Keys:       append([]string{roomsKey, Room("pow:*")}, lineKeys...),
		Scripts:    []string{"enter.lua", "accept.lua"},
		Commands:   join(connection, scripts, []string{"sadd"}, lineCommands),
	},
	// position: reads where its caller stands (and takes its limiter
	// token), claims a turn the front passed (the token's record and live
	// token, the claim's mark, the batch's count: claim.lua), puts back an
	// account's record a failover lost (place.lua), reads the room's view
	// (HMGET), re-registers an open room, reads a receipt's application.
	Position: {
		UserSuffix: "position",
		Keys: []string{roomsKey, Room("settings"), Room("line"), Room("u:*"), Room("budget"), Room("tokens"),
			Room("a:*"), Room("batches"), Room("unclaimed"), Room("c:*"), Room("applied:*")},
		Scripts: []string{"position.lua"},
		Commands: join(connection, scripts, []string{"sadd", "del", "get", "hdel", "hget", "hincrby", "hlen", "hmget", "hset",
			"pexpire", "set", "time", "zadd", "zcard", "zcount", "zrangebyscore", "zrank", "zscore"}),
	},
	// admit: the batches of every registered room, the adaptive rate's
	// decision, and forgetting a room nobody waits in.
	Admit: {
		UserSuffix: "admit",
		Keys: []string{roomsKey, Room("settings"), Room("line"), Room("budget"), Room("marks"), Room("tokens"),
			Room("admits"), Room("downstream"), Room("control"), Room("batches"),
			Room("unclaimed"), Room("u:*")},
		Scripts: []string{"admit.lua", "adapt.lua"},
		Commands: join(connection, scripts, []string{"script|load", "smembers", "srem", "exists", "sadd",
			"del", "hdel", "hget", "hgetall", "hincrby", "hlen", "hmget", "hscan", "hset", "pexpire", "pttl", "set", "time", "unlink", "zadd", "zcard", "zrange", "zrangebyscore",
			"zrem", "zremrangebyrank", "zremrangebyscore", "zrevrangebyscore"}),
	},
	// order-gate: a token's check (with ORDER_ROOMS unset, whether an
	// operator created its room: HEXISTS of the settings' rate) and the
	// caller's lock (with its limiter token in the room's hash), the
	// commit, the release (which marks a holder whose failure it counted:
	// failed:*, for the lock's PTTL); WAIT for a replica with
	// DURABLE_WRITES=wait.
	OrderGate: {
		UserSuffix: "gate",
		Keys:       []string{Room("u:*"), Room("lock:*"), Room("idem:*"), Room("failed:*"), Room("settings"), Room("tokens"), Room("downstream")},
		Scripts:    []string{"order_begin.lua", "order_commit.lua", "unlock.lua"},
		Commands:   join(connection, scripts, []string{"wait", "del", "get", "hexists", "hincrby", "hmget", "hset", "pexpire", "pttl", "set", "time", "zrem"}),
	},
	// admin: lists, reads and changes rooms, and registers those it makes.
	Admin: {
		UserSuffix: "admin",
		Keys: []string{roomsKey, createdKey, Room("settings"), Room("line"), Room("tokens"), Room("marks"),
			Room("admits"), Room("control"), Room("budget")},
		Scripts: []string{"status.lua", "settings_set.lua"},
		Commands: join(connection, scripts, []string{"script|load", "smembers", "sadd", "exists", "hdel",
			"hgetall", "hincrby", "hmget", "hset", "persist", "pexpire", "time", "unlink", "zcard",
			"zcount", "zrange", "zrevrangebyscore"}),
	},
	// intake-consumer: applies an accepted entry as enter would, once
	// (applied:*), and registers the room.
	IntakeConsumer: {
		UserSuffix: "intake",
		Keys:       append([]string{roomsKey, Room("applied:*")}, lineKeys...),
		Scripts:    []string{"apply.lua"},
		Commands:   join(connection, scripts, []string{"sadd"}, lineCommands),
	},
}

// AccessString is fn's ACL in the syntax ElastiCache takes (and
// redis-server's ACL SETUSER): on, its key patterns, no command but its
// own. No pub/sub channel is granted (Redis 7's default for a new user;
// no function publishes or subscribes). ok is false for an unknown function.
func AccessString(fn string) (acl string, ok bool) {
	g, ok := Grants[fn]
	if !ok {
		return "", false
	}
	parts := []string{"on"}
	for _, k := range g.Keys {
		parts = append(parts, "~"+k)
	}
	parts = append(parts, "-@all")
	for _, c := range g.Commands {
		parts = append(parts, "+"+c)
	}
	return strings.Join(parts, " "), true
}

// join is the sorted union of lists.
func join(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
