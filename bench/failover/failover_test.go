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
// its token again. Either guarantee holds it on its own: the gate's writes
// waiting for a replica (DURABLE_WRITES=wait) with an order API that
// orders whatever reaches it, or the order API deduplicating by
// X-Waitroom-Token-Id (docs/API.md) with DURABLE_WRITES=off.
func TestFailoverOrdersEachTokenAtMostOnceRedisServer(t *testing.T) {
	for _, sc := range []scenario{short("short-wait", waitroom.DurableWait, false), short("short-dedup", waitroom.DurableOff, true)} {
		t.Run(sc.Key, func(t *testing.T) {
			res := sc.run(t)
			t.Logf("orders %d, tokens %d, at most %d per token, replays %d; enters acked %d, lost %d; wrong answers %d",
				res.Orders, res.TokensOrdered, res.MaxOrdersPerToken, res.Replays, res.EntersAcked, res.EntersLost, res.WrongAnswers)
			if res.Orders == 0 {
				t.Fatal("no order went through: the scenario tested nothing")
			}
			if res.MaxOrdersPerToken > 1 {
				t.Errorf("%d tokens ordered twice (at most %d orders for one token)", res.TokensOrderedTwice, res.MaxOrdersPerToken)
			}
			if res.WrongAnswers > 0 {
				t.Errorf("%d answers neither normal nor 503 with Retry-After", res.WrongAnswers)
			}
		})
	}
}
