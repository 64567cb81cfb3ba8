package httpapi

import (
	"context"
	"time"

	"github.com/waitroom/waitroom"
)

// commitBudget bounds the retries of a commit or release when the request
// has no deadline of its own (the local runner). In Lambda the function's
// deadline is the budget: its timeout covers begin + downstream + commit
// (waitroom.OrderGateBudget, infra OrderGateTimeoutSeconds).
const commitBudget = waitroom.CommitRetryWindow

// commitMargin is left of the Lambda deadline so that the answer still
// goes out after the last attempt.
const commitMargin = 300 * time.Millisecond

// checkUnlockBudget bounds the retries that give up the lock of an order
// check that failed (attempt): the user's 503 waits for them, and a store
// down for longer would refuse them anyway.
const checkUnlockBudget = time.Second

// retryStore runs call with one store timeout per attempt until it
// succeeds or the request's budget is spent, backing off from 50 ms to 1 s.
// It outlives a cancelled request: the order it records has happened.
func (a *API) retryStore(ctx context.Context, call func(context.Context) error) error {
	deadline := time.Now().Add(commitBudget)
	if d, ok := ctx.Deadline(); ok {
		deadline = d.Add(-commitMargin)
	}
	base := context.WithoutCancel(ctx)
	backoff := 50 * time.Millisecond
	for {
		attempt := min(a.storeTimeout(), time.Until(deadline))
		if attempt <= 0 {
			attempt = a.storeTimeout() // always one attempt
		}
		actx, cancel := context.WithTimeout(base, attempt)
		err := call(actx)
		cancel()
		if err == nil || time.Until(deadline) < backoff {
			return err
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, time.Second)
	}
}
