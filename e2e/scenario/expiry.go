package scenario

import (
	"net/http"
	"testing"
	"time"
)

// RunTokenExpiry checks that an entry token dies with its TTL: the user is
// NOT_IN_QUEUE again, the gate refuses the token without calling the order
// API, and the user may queue again. env.Config.TokenTTLSeconds should be
// short (1 or 2): the test waits it out.
func RunTokenExpiry(t *testing.T, env Env) {
	s := newRun(t, env)
	defer s.close()
	const user = "slowpoke"
	if err := s.checkWaiting(s.enter(t, user), 1); err != nil {
		t.Fatal(err)
	}
	s.admit(t)
	a := s.position(t, user)
	if err := s.checkReady(a, user); err != nil {
		t.Fatal(err)
	}
	st, _ := decodeStanding(a)
	exp, _ := time.Parse(time.RFC3339, st.ExpiresAt)
	// expiresAt has whole seconds; the store expires the token to the millisecond.
	time.Sleep(time.Until(exp) + 1100*time.Millisecond)
	if err := checkNotInQueue(s.position(t, user)); err != nil {
		t.Errorf("after expiresAt %s: %v", st.ExpiresAt, err)
	}
	calls := s.env.Downstream.Calls()
	if err := checkError(s.order(t, user, s.token(user), "late-order", `{"sku":"tee","qty":1}`), http.StatusForbidden, "entry_token_invalid"); err != nil {
		t.Errorf("expired token: %v", err)
	}
	if got := s.env.Downstream.Calls(); got != calls {
		t.Errorf("an expired token reached the order API (%d calls)", got-calls)
	}
	if err := s.checkWaiting(s.enter(t, user), 1); err != nil {
		t.Errorf("queueing again after expiry: %v", err)
	}
}
