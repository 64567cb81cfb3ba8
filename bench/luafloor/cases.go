package main

import (
	"fmt"
	"strings"
)

// A case is one script body called by EVALSHA with its keys and
// arguments (or, Plain, one command): what a store script's construct costs is its figure less its
// baseline's (the same call doing nothing but `return 1`), over units.
type fcase struct {
	Key      string `json:"key"`
	What     string `json:"what"`
	Body     string `json:"body"`
	Keys     int    `json:"keys"`
	Args     int    `json:"args"`
	Baseline string `json:"baseline,omitempty"` // the case it is compared with ("": none, it is a floor)
	Units    int    `json:"units,omitempty"`    // how many of the construct it runs (0: its difference is not divided)
	Visitor  string `json:"visitor,omitempty"`  // the call's arguments are a new visitor's (visitorArgs): "limited" or "unlimited" ("": Args of "argN")
	Plain    bool   `json:"plain,omitempty"`    // Body is one command sent as it is, not a script
}

// The hash the commands' cases read and write: a hash table (one value
// longer than hash-max-listpack-value, as the room's hash is: settings.lua's
// 'layout'), its fields the room's sizes.
const hashFields = 9

// cases are the measured bodies, in the table's order.
func cases() []fcase {
	return []fcase{
		{Key: "return", What: "`return 1`, no key, no argument", Body: "return 1"},
		{Key: "key1", What: "`return 1`, 1 key", Body: "return 1", Keys: 1, Baseline: "return", Units: 1},
		{Key: "keysArgs", What: "`return 1`, 13 keys and 11 arguments (enter's)", Body: "return 1", Keys: 13, Args: 11, Baseline: "return", Units: 24},
		{Key: "closures", What: "30 `local function`s never called", Body: closures(30, false) + "return 1", Baseline: "return", Units: 30},
		{Key: "closuresUp", What: "30 `local function`s never called, all reading one local of the script", Body: closures(30, true) + "return 1", Baseline: "return", Units: 30},
		{Key: "upvalues", What: "30 `local function`s never called, each reading a local of its own (30 upvalues)", Body: ownUpvalues(30) + "return 1", Baseline: "closures", Units: 30},
		{Key: "format", What: "10 `string.format('%d', x)` (16 digits)", Body: "local x = 1733400000000000\n" + lines(10, "local s%[1]d = string.format('%%d', x + %[1]d)\n") + "return 1", Baseline: "return", Units: 10},
		{Key: "tonumber", What: "10 `tonumber` of a 16-digit text", Body: lines(10, "local t%[1]d = '17334000000000%02[1]d'\n") + lines(10, "local n%[1]d = tonumber(t%[1]d)\n") + "return 1", Baseline: "return", Units: 10},
		{Key: "tonumberShort", What: "10 `tonumber` of a 3-digit text", Body: lines(10, "local t%[1]d = '1%02[1]d'\n") + lines(10, "local n%[1]d = tonumber(t%[1]d)\n") + "return 1", Baseline: "return", Units: 10},
		{Key: "calls", What: "10 calls of a local function of one line", Body: "local function f(a, b) return a + b end\n" + lines(10, "local n%[1]d = f(%[1]d, 1)\n") + "return 1", Baseline: "return", Units: 10},
		{Key: "concat", What: "10 `a .. ':' .. b` (numbers' texts)", Body: "local a, b = '1733400000000', 1733400000000\n" + lines(10, "local s%[1]d = a .. ':' .. (b + %[1]d)\n") + "return 1", Baseline: "return", Units: 10},
		{Key: "match", What: "`string.match` of 'hot' with 5 captures", Body: "local a, b, c, d, e = string.match('@100:0:0:1000000:600000:', '^.([^:]*):(%d+):(%d+):(%d+):(%d+):')\nreturn 1", Baseline: "return", Units: 1},
		{Key: "table10", What: "a table constructor of 10 named fields", Body: "local t = {a = 1, b = 2, c = 3, d = 4, e = 5, f = 6, g = 7, h = 8, i = 9, j = 10}\nreturn 1", Baseline: "return", Units: 1},
		{Key: "grown10", What: "an empty table given 10 named fields one by one", Body: "local t = {}\n" + lines(10, "t.f%[1]d = %[1]d\n") + "return 1", Baseline: "return", Units: 1},
		{Key: "array7", What: "a reply of 7 values (enter's answer)", Body: "return {'WAITING', 200001, 1, '@100:0:0:1000000:600000:', 0, '', 200001}", Baseline: "return", Units: 1},
		{Key: "hget", What: "one `redis.call('HGET')`", Body: "redis.call('HGET', KEYS[1], 'f1')\nreturn 1", Keys: 1, Baseline: "key1", Units: 1},
		{Key: "hmget", What: "one `HMGET` of 9 fields", Body: "redis.call('HMGET', KEYS[1]" + fieldList(hashFields, false) + ")\nreturn 1", Keys: 1, Baseline: "key1", Units: 1},
		{Key: "hset", What: "one `HSET` of 4 fields (16-digit values)", Body: "redis.call('HSET', KEYS[1]" + fieldList(4, true) + ")\nreturn 1", Keys: 1, Baseline: "key1", Units: 1},
		{Key: "hsetNumbers", What: "one `HSET` of 4 fields, the values 16-digit numbers (Redis prints them)", Body: "local x = 1733400000000000\nredis.call('HSET', KEYS[1], 'f1', x + 1, 'f2', x + 2, 'f3', x + 3, 'f4', x + 4)\nreturn 1", Keys: 1, Baseline: "key1", Units: 1},
		{Key: "leastEnter", What: "the least enter: a new visitor's number and its two limiter buckets (2 keys, 5 arguments)", Body: leastEnter, Keys: 2, Args: 5, Visitor: "limited"},
		{Key: "leastEnterUnlimited", What: "the least enter without the limiter (2 keys, 3 arguments)", Body: leastEnterUnlimited, Keys: 2, Args: 3, Visitor: "unlimited"},
		{Key: "incrScript", What: "a script of one `HINCRBY` (1 key)", Body: "return redis.call('HINCRBY', KEYS[1], 'next', 1)", Keys: 1, Baseline: "key1", Units: 1},
		{Key: "incrPlain", What: "`HINCRBY` alone, no script", Body: "HINCRBY " + hashKey + " next 1", Plain: true},
	}
}

// leastEnter is the least script that can be a new visitor's enter with
// the abuse limiter on (issue 36: "enter ≤ 50k instructions"): one HMGET
// of the room's packed settings, its front, counter and second's mark and
// the caller's two buckets (its address's and its new visitors'); the
// settings compared with the ones the caller's view read (any change, a
// full line, a front a pre-queue holds, an empty line's instant admission
// or a refusal: the whole enter, not measured here); the two GCRA steps at
// the default limits; one HSET of the counter and the buckets (and the
// mark, the first enter of a second); the number and the front. It leaves
// out what enter.lua does besides (a returning caller, claims, the stall
// check, the pre-queue, the room's page): a floor, not a design.
const leastEnter = `local roomKey, marksKey = KEYS[1], KEYS[2]
local now = tonumber(ARGV[1])
local s = redis.call('HMGET', roomKey, 'hot', 'front', 'next', 'mark', ARGV[2], ARGV[3])
if s[1] ~= ARGV[4] then return 0 end
local front, n = tonumber(s[2]), tonumber(s[3])
if not front or front <= 0 or n <= front or n >= tonumber(ARGV[5]) then return 0 end
local t1 = tonumber(s[5]) or 0
if t1 < now then t1 = now end
t1 = t1 + 2000
if t1 - now > 4000000 then return 0 end
local t2 = tonumber(s[6]) or 0
if t2 < now then t2 = now end
t2 = t2 + 1000000
if t2 - now > 10000000 then return 0 end
local second = string.format('%d', math.floor(now / 1000000))
if s[4] ~= second then
  redis.call('ZADD', marksKey, 'NX', string.format('%d', n), second)
  redis.call('HSET', roomKey, 'next', string.format('%d', n + 1), ARGV[2], string.format('%d', t1), ARGV[3], string.format('%d', t2), 'mark', second)
else
  redis.call('HSET', roomKey, 'next', string.format('%d', n + 1), ARGV[2], string.format('%d', t1), ARGV[3], string.format('%d', t2))
end
return {n, front}`

// leastEnterUnlimited is leastEnter with the limiter off: no bucket read,
// stepped or written.
const leastEnterUnlimited = `local roomKey, marksKey = KEYS[1], KEYS[2]
local now = tonumber(ARGV[1])
local s = redis.call('HMGET', roomKey, 'hot', 'front', 'next', 'mark')
if s[1] ~= ARGV[2] then return 0 end
local front, n = tonumber(s[2]), tonumber(s[3])
if not front or front <= 0 or n <= front or n >= tonumber(ARGV[3]) then return 0 end
local second = string.format('%d', math.floor(now / 1000000))
if s[4] ~= second then
  redis.call('ZADD', marksKey, 'NX', string.format('%d', n), second)
  redis.call('HSET', roomKey, 'next', string.format('%d', n + 1), 'mark', second)
else
  redis.call('HSET', roomKey, 'next', string.format('%d', n + 1))
end
return {n, front}`

// The room the least enters find: its packed settings (an open room at
// 100 a second), a line of four million, the mark of a second long past.
const (
	roomHot   = "@100:0:0:10000000:600000:"
	roomFront = "1000000"
	roomNext  = "5000000"
)

// visitorArgs are the i-th call's arguments of a Visitor case: the time
// (µs; a microsecond a call, so that a second's mark is written once, as
// in a room's line), for "limited" a new address's bucket and its /64's,
// the settings the caller read, and the ceiling its view allows the
// counter (never reached here).
func visitorArgs(kind string, start int64, i int) []any {
	now := start + int64(i)
	if kind == "unlimited" {
		return []any{now, roomHot, 9_000_000_000}
	}
	return []any{now, fmt.Sprintf("i:10.%d.%d.%d", i>>16&255, i>>8&255, i&255), fmt.Sprintf("v:2001:db8:%x::/64", i), roomHot, 9_000_000_000}
}

// closures defines n local functions of one line each, closing over a
// local when up.
func closures(n int, up bool) string {
	var b strings.Builder
	if up {
		b.WriteString("local u = 1\n")
	}
	for i := range n {
		if up {
			fmt.Fprintf(&b, "local function f%d(a) return a + u end\n", i)
		} else {
			fmt.Fprintf(&b, "local function f%d(a) return a + 1 end\n", i)
		}
	}
	return b.String()
}

// ownUpvalues defines n locals and n local functions of one line, the
// i-th reading the i-th local: n upvalues made (and closed) at every call.
func ownUpvalues(n int) string {
	return lines(n, "local u%[1]d = %[1]d\n") + lines(n, "local function f%[1]d(a) return a + u%[1]d end\n")
}

// lines is line formatted with i (its verbs all %[1]d) for i in [0, n).
func lines(n int, line string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, line, i)
	}
	return b.String()
}

// fieldList is ", 'f1', 'v…', …" for n fields (with values when values).
func fieldList(n int, values bool) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, ", 'f%d'", i)
		if values {
			fmt.Fprintf(&b, ", '17334000000000%02d'", i)
		}
	}
	return b.String()
}
