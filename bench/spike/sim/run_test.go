package sim

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A simulated user sends back the place its answers give (X-Queue-Place),
// as a client does (docs/API.md, "An account's place"): its polls far from
// its turn are answered from the process's view of the room, with no script
// run in the store, so that the run's store figures are a real client's.
func TestUsersSendBackTheirPlace(t *testing.T) {
	env, err := NewEnv("")
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	ctx := context.Background()
	if err := env.fresh(ctx); err != nil {
		t.Fatal(err)
	}
	sc := DefaultScenario() // 70 admissions a second: 7 a batch
	const users = 20
	r, store, err := newRunner(env, sc, Batched, "http://127.0.0.1:1", make([]time.Duration, users))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	r.epoch = time.Now()
	for _, u := range r.users {
		var st standing
		if !r.enter(ctx, u, &st) || st.Status != "WAITING" {
			t.Fatalf("%s entered %+v, want WAITING", u.id, st)
		}
	}
	last := r.users[users-1]
	if last.spot == "" {
		t.Fatal("the enter's answer gave no place: the handlers sign none")
	}
	if err := env.Admin.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	const polls = 5
	for range polls {
		if st := r.position(ctx, last); st.Status != "WAITING" || st.Position != users {
			t.Fatalf("poll answered %+v, want WAITING at %d", st, users)
		}
	}
	cmds, err := CommandStats(ctx, env.Admin)
	if err != nil {
		t.Fatal(err)
	}
	for name, n := range cmds {
		if strings.HasPrefix(name, "eval") {
			t.Errorf("%d polls far from their turn ran %s %d times: the place was not sent back (%v)", polls, name, n, cmds)
		}
	}
}

// A short spike through the room: every user who does not abandon orders.
// The run's room is no operator's, so the gate must be told it sells
// (ORDER_ROOMS): without, every order was refused 403 wrong_room and the
// pool served none.
func TestShortSpikeOrders(t *testing.T) {
	env, err := NewEnv("")
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	sc := DefaultScenario()
	sc.Users, sc.Spike = 100, time.Second
	res, err := Run(context.Background(), env, sc, Batched)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status["POST /orders 201"] == 0 || res.Status["POST /orders 403"] > 0 {
		t.Fatalf("orders answered %v", res.Status)
	}
}
