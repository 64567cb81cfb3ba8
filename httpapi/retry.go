package httpapi

import (
	"context"
	"time"

	"github.com/waitroom/waitroom"
)

// commitBudget bounds the retries of a commit or release when the request
// has no deadline of its own (the local runner), and those that give up the
// lock of a check that failed, from the check's start (attempt). In Lambda the function's
// deadline is the budget: its timeout covers begin + downstream + commit
// (waitroom.OrderGateBudget, infra OrderGateTimeoutSeconds).
const commitBudget = waitroom.CommitRetryWindow

// commitMargin is left of the Lambda deadline so that the answer still
// goes out after the last attempt.
const commitMargin = 300 * time.Millisecond

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
