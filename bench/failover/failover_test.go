package failover

import (
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

// short is the scenario `make test` runs: a primary and its replica, the
// replica receiving nothing for half a second while buyers order, then
// the primary frozen and the replica promoted, traffic throughout. Its
// assertions are the invariants alone, never timings.
func short(key string, durable waitroom.DurableWrites, dedup bool) scenario {
	return scenario{Key: key, Lag: 500 * time.Millisecond, Freeze: true, Durable: durable, Dedup: dedup,
		Visitors: 40, Buyers: 6, Rate: 20, Arrive: 1500 * time.Millisecond, Total: 8 * time.Second, Rejoin: 300 * time.Millisecond}
}

// A failover mid-sale sells no token twice (issue 24), and clients meet
// normal answers or 503 with Retry-After, never another. The buyers' lock
// and commit reach only the old primary; once it is gone each buyer sends
// its token again.
func TestFailoverOrdersEachTokenAtMostOnceRedisServer(t *testing.T) {
	res := short("short-off", waitroom.DurableOff, false).run(t)
	t.Logf("%+v", res)
	if res.Orders == 0 {
		t.Fatal("no order went through: the scenario tested nothing")
	}
	if res.MaxOrdersPerToken > 1 {
		t.Errorf("%d tokens ordered twice (at most %d orders for one token)", res.TokensOrderedTwice, res.MaxOrdersPerToken)
	}
	if res.WrongAnswers > 0 {
		t.Errorf("%d answers neither normal nor 503 with Retry-After", res.WrongAnswers)
	}
}
