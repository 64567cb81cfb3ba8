package failover

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/bench/spike/sim"
	"github.com/waitroom/waitroom/internal/redistest"
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
// its token again. Each guarantee holds it on its own, with an order API
// that orders whatever reaches it but for dedup: the gate's order record
// on a real DynamoDB-compatible server (issue 33, the stack's default),
// the gate's writes waiting for a replica (DURABLE_WRITES=wait), or the
// order API deduplicating by X-Waitroom-Token-Id (docs/API.md).
func TestFailoverOrdersEachTokenAtMostOnceRedisServer(t *testing.T) {
	record := short("short-record", waitroom.DurableOff, false)
	record.Record = true
	for _, sc := range []scenario{record, short("short-wait", waitroom.DurableWait, false), short("short-dedup", waitroom.DurableOff, true)} {
		t.Run(sc.Key, func(t *testing.T) {
			res := sc.run(t)
			t.Logf("orders %d, tokens %d, at most %d per token, replays %d; enters acked %d, lost %d (accounts %d/%d, anonymous %d/%d); wrong answers %d",
				res.Orders, res.TokensOrdered, res.MaxOrdersPerToken, res.Replays, res.EntersAcked, res.EntersLost,
				res.AccountsAcked, res.AccountsLost, res.AnonymousAcked, res.AnonymousLost, res.WrongAnswers)
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

// TestFailoverScenarios runs every scenario of `make bench-failover`, and
// only there (FAILOVER_OUT names the results file; ~4 min): each topology
// failing over in sync and after a lag, DURABLE_WRITES off and wait, the
// order API deduplicating or not, and what wait costs the gate.
func TestFailoverScenarios(t *testing.T) {
	out := os.Getenv("FAILOVER_OUT")
	if out == "" {
		t.Skip("make bench-failover runs it (FAILOVER_OUT unset)")
	}
	started := time.Now()
	res := sim.FailoverResults{Machine: sim.DescribeHost(), Started: started.UTC().Format(time.RFC3339)}
	res.Machine.Redis = redistest.Version() // "Redis server v=7.0.15 sha=…": the version alone
	if _, v, ok := strings.Cut(res.Machine.Redis, "v="); ok {
		res.Machine.Redis = "redis-server " + strings.Fields(v)[0]
	}
	only := os.Getenv("FAILOVER_ONLY") // comma-separated keys, to rerun some (the file then holds those alone)
	for _, sc := range fullScenarios() {
		if only != "" && !slices.Contains(strings.Split(only, ","), sc.Key) {
			continue
		}
		r := sc.run(t)
		t.Logf("%s: enters acked %d lost %d (accounts %d/%d, anonymous %d/%d), places restored %d, dup seqs %d, inversions %d/%d, double admissions %d, orders %d for %d tokens (at most %d), shown a token and never ordered %d, recovery %.2f s, wrong %d",
			sc.Key, r.EntersAcked, r.EntersLost, r.AccountsAcked, r.AccountsLost, r.AnonymousAcked, r.AnonymousLost, r.PlacesRestored, r.DuplicateSeqs, r.FIFOInversions, r.FIFOPairs, r.DoubleAdmissions, r.Orders, r.TokensOrdered,
			r.MaxOrdersPerToken, r.Unordered, r.RecoverySeconds, r.WrongAnswers)
		res.Scenarios = append(res.Scenarios, r)
	}
	res.WaitCost = measureWaitCost(t, 2000)
	t.Logf("wait cost: %+v", res.WaitCost)
	res.RecordCost = measureRecordCost(t, 2000)
	t.Logf("record cost: %+v", res.RecordCost)
	res.Seconds = time.Since(started).Seconds()
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fullScenarios: 300 visitors arriving over 4 s at 50 admissions a second,
// 20 buyers ordering while the replica lags for a second. The defaults
// (the order record on, DURABLE_WRITES off, an order API that does not
// deduplicate) in every topology and lag; then, the record off, what the
// store alone loses, and the two other guarantees.
func fullScenarios() []scenario {
	base := scenario{Freeze: true, Durable: waitroom.DurableOff, Record: true, Visitors: 300, Buyers: 20, Rate: 50, Arrive: 4 * time.Second,
		Total: 20 * time.Second, Rejoin: time.Second}
	with := func(key, name string, change func(*scenario)) scenario {
		sc := base
		sc.Key, sc.Name = key, name
		change(&sc)
		return sc
	}
	lag := func(sc *scenario) { sc.Lag = time.Second }
	bare := func(sc *scenario) { sc.Record = false }
	// The cluster's old master stays frozen for 12 s: long enough to see
	// when the clients find the new one by themselves.
	cluster := func(sc *scenario) { sc.Cluster, sc.Rejoin, sc.Total = true, 12*time.Second, 30*time.Second }
	return []scenario{
		with("single-sync", "in sync, primary frozen", func(sc *scenario) {}),
		with("single-lag", "1 s of lag, primary frozen", lag),
		with("single-lag-bare", "1 s of lag, no order record", func(sc *scenario) { lag(sc); bare(sc) }),
		with("single-lag-dedup", "1 s of lag, order API deduplicating", func(sc *scenario) { lag(sc); bare(sc); sc.Dedup = true }),
		with("single-lag-wait", "1 s of lag, DURABLE_WRITES=wait", func(sc *scenario) { lag(sc); bare(sc); sc.Durable = waitroom.DurableWait }),
		with("cluster-sync", "in sync, master frozen", cluster),
		with("cluster-lag", "1 s of lag, master frozen", func(sc *scenario) { cluster(sc); lag(sc) }),
		with("cluster-lag-bare", "1 s of lag, no order record", func(sc *scenario) { cluster(sc); lag(sc); bare(sc) }),
		with("cluster-lag-dedup", "1 s of lag, order API deduplicating", func(sc *scenario) { cluster(sc); lag(sc); bare(sc); sc.Dedup = true }),
		with("cluster-lag-wait", "1 s of lag, DURABLE_WRITES=wait", func(sc *scenario) { cluster(sc); lag(sc); bare(sc); sc.Durable = waitroom.DurableWait }),
	}
}
