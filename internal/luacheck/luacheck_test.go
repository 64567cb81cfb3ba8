package luacheck

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/redistest"
)

// cases: for each rule, scripts the engines answer differently (each must
// be flagged with the rule) and a portable way to say the same (never
// flagged, answered alike).
var cases = []struct {
	rule     string
	differ   []string
	portable string
}{
	{"multiple-assignment", []string{
		`local a, b = 0, 0; a, b = a + 1, a + b; return {a, b}`,
		`local a, b = 1, 2; a, b = b, a; return {a, b}`,
	}, `local a, b = 1, 2; local old = a; a = b; b = old; return {a, b}`},
	{"number-to-string", []string{
		`return tostring(1 / 3)`,
		`return 'at ' .. 1700000000 * 1000000`,
		`return table.concat({1 / 3}, ',')`,
		`return string.format('%s', 1e15)`,
	}, `return string.format('%.6f %d', 1 / 3, 1700000000 * 1000000)`},
	{"fractional-argument", []string{
		`redis.call('SET', KEYS[1], 1 / 3); return redis.call('GET', KEYS[1])`,
		`redis.call('ZADD', KEYS[1], 0.1, 'm'); return redis.call('ZSCORE', KEYS[1], 'm')`,
	}, `redis.call('SET', KEYS[1], string.format('%.9f', 1 / 3)); redis.call('PEXPIRE', KEYS[1], math.ceil(10 / 3) + 1000); return redis.call('GET', KEYS[1])`},
	{"format", []string{
		`return string.format('%q', 'a\n')`,
		`return string.format('%s and %s', 'one')`,
	}, `return string.format('%s and %s', 'one', 'two')`},
	{"library", []string{
		`return type(bit)`,
		`return cjson.encode({})`,
	}, `return type(redis.sha1hex)`},
}

func TestRulesFlagTheirCases(t *testing.T) {
	for _, c := range cases {
		for _, src := range c.differ {
			found, err := Check(src)
			if err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			if !hasRule(found, c.rule) {
				t.Errorf("%s: not flagged as %s (found %v)", src, c.rule, found)
			}
		}
		if found, err := Check(c.portable); err != nil || len(found) > 0 {
			t.Errorf("%s: the portable form is flagged: %v %v", c.portable, found, err)
		}
	}
}

// The rules' premise, on the engines themselves: every flagged case is
// answered differently by redis-server and the embedded store, and every
// portable form alike. When an upgrade makes the engines agree on a case,
// this fails so that the rule's reason is revisited.
func TestEnginesDifferWhereTheRulesSay(t *testing.T) {
	real := redistest.RedisServer.Start(t).Client()
	embedded := redistest.EmbeddedEngine.Start(t).Client()
	for _, c := range cases {
		for _, src := range c.differ {
			if a, b := eval(real, src), eval(embedded, src); reflect.DeepEqual(a, b) {
				t.Errorf("%s (%s): both engines answer %s", src, c.rule, a)
			}
		}
		if a, b := eval(real, c.portable), eval(embedded, c.portable); !reflect.DeepEqual(a, b) {
			t.Errorf("%s: redis-server %s, embedded %s", c.portable, a, b)
		}
	}
}

func eval(c *redis.Client, src string) string {
	ctx := context.Background()
	defer c.Del(ctx, "{k}x")
	v, err := c.Eval(ctx, src, []string{"{k}x"}).Result()
	if err != nil {
		return "error"
	}
	return fmt.Sprintf("%#v", v)
}

func hasRule(found []Finding, rule string) bool {
	for _, f := range found {
		if f.Rule == rule {
			return true
		}
	}
	return false
}

func TestFindingsNameTheLine(t *testing.T) {
	found, err := Check("local a = 1\nlocal b = 2\na, b = b, a\n")
	if err != nil || len(found) != 1 || found[0].Line != 3 {
		t.Fatalf("%v %v", found, err)
	}
}
