package main

import (
	"fmt"
	"strings"
)

// A case is one script body called by EVALSHA with its keys and
// arguments: what a store script's construct costs is its figure less its
// baseline's (the same call doing nothing but `return 1`), over units.
type fcase struct {
	Key      string `json:"key"`
	What     string `json:"what"`
	Body     string `json:"body"`
	Keys     int    `json:"keys"`
	Args     int    `json:"args"`
	Baseline string `json:"baseline,omitempty"` // the case it is compared with ("": none, it is a floor)
	Units    int    `json:"units,omitempty"`    // how many of the construct it runs (0: its difference is not divided)
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
	}
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
