package waitroom

import "time"

// StoreCallTimeout bounds one store call, so that a dead store is answered
// with 503 within a few seconds rather than at the Lambda timeout.
const StoreCallTimeout = 3 * time.Second

// CommitRetryWindow is how long the order gate keeps trying to record an
// order the downstream accepted (or to release a refused one's lock) while
// the store fails: a store that is back within it loses nothing (issue 12).
const CommitRetryWindow = 5 * time.Second

// OrderGateBudget is the worst path of one order: the token check, the
// downstream call, then the commit's retries, plus a second to answer. The
// order gate's Lambda timeout is at least this (infra).
func OrderGateBudget(orderTimeout time.Duration) time.Duration {
	return StoreCallTimeout + orderTimeout + CommitRetryWindow + time.Second
}
