package sim

import (
	"context"
	"testing"
	"time"
)

// A short attack through the real handlers and a real redis-server (issue
// 32): 21 token holders, a third failing their orders (500), a third
// hanging up on them, a third sending orders the API refuses (400), four
// a second each from 3 s of a 9 s run. What the law is handed is checked,
// not the admissions' timing (a loaded machine would make that flaky): the
// failing holders count once each, and the aborting and refused orders in
// no measure, however many they send. The admissions and the rate under
// attack are `make bench-attack`'s.
func TestAdaptiveAttackShort(t *testing.T) {
	if testing.Short() {
		t.Skip("real time: 9 s")
	}
	env, err := NewEnv("")
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	const failing = 7
	as := AttackScenarios(9 * time.Second)[0]
	as.Key, as.Attack = "mixed", &Attack{Holders: 3 * failing, Every: 250 * time.Millisecond, From: 3 * time.Second,
		Modes: []string{AttackFail, AttackAbort, AttackRefuse}}
	run, err := RunAdaptive(context.Background(), env, as, AdaptiveOn)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("attack orders %d (%d answered 2xx); counted %d calls, %d failed; legitimate orders %d", run.AttackOrders, run.AttackOK, run.CountedCalls, run.CountedFailed, run.Ordered)
	if run.AttackOrders < 3*failing*8 {
		t.Fatalf("the attackers sent %d orders: the attack did not run", run.AttackOrders)
	}
	if run.CountedFailed > failing {
		t.Errorf("%d failed calls counted: %d failing holders count once each", run.CountedFailed, failing)
	}
	if limit := int64(run.Ordered + run.AttackOK + failing); run.CountedCalls > limit {
		t.Errorf("%d calls counted, beyond the %d orders that succeeded and the %d failing holders: aborted or refused orders counted", run.CountedCalls, run.Ordered+run.AttackOK, failing)
	}
}
