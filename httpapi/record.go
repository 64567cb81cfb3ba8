package httpapi

import (
	"context"
	"crypto/subtle"
	"errors"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/metrics"
)

// OrderRecord is the durable record of consumed entry tokens
// (package orderrecord, a DynamoDB table): what a failover of the store
// cannot lose. Nil keeps none (ORDER_RECORD_TABLE unset).
type OrderRecord interface {
	Claim(ctx context.Context, c waitroom.OrderClaim) (*waitroom.PriorOrder, error)
	Keep(ctx context.Context, c waitroom.OrderClaim, answer waitroom.StoredAnswer) error
	Release(ctx context.Context, c waitroom.OrderClaim) error
}

// claimOf is the lease's use of its token in the record: the lock's
// random value names the attempt.
func (a *API) claimOf(l waitroom.Lease) waitroom.OrderClaim {
	expires := l.TokenExpires
	if expires.IsZero() {
		expires = a.now().Add(a.Config.EntryTokenTTL) // never later than the token's own
	}
	return waitroom.OrderClaim{Room: l.Room, Token: l.Token, Attempt: l.LockValue, Expires: expires,
		IdempotencyKey: l.IdempotencyKey, RequestHash: l.RequestHash}
}

// record claims the lease's token in the durable record, after the
// store's lock and before the order goes downstream (issue 33). It
// answers, with stop, when the order must not go on: the token was used
// before (a failover lost the store's record of it), or the record cannot
// be reached and ORDER_GATE_FAIL_OPEN is not set. Going on, what it
// counted comes first in the order's outcome.
func (a *API) record(ctx context.Context, lease waitroom.Lease) (o outcome, stop bool) {
	if a.Record == nil {
		return o, false
	}
	prior, err := withTimeout(ctx, a.storeTimeout(), func(ctx context.Context) (*waitroom.PriorOrder, error) {
		return a.Record.Claim(ctx, a.claimOf(lease))
	})
	switch {
	case err != nil && a.Config.FailOpenOrders:
		// The operator chose orders over "once": the store's lock alone guards this one.
		a.logWarn(ctx, "order record unavailable: going on with the store's lock alone (ORDER_GATE_FAIL_OPEN)", err)
		return outcome{counts: []counted{{lease.Room, ones(metrics.OrdersFailOpen)}}}, false
	case err != nil:
		a.unlock(ctx, lease)
		return a.storeError(ctx, lease.Room, waitroom.Unavailable(err)), true
	case prior != nil:
		return a.used(ctx, lease, prior), true
	}
	return o, false
}

// used answers an order whose token the record says was used already:
// the first order's answer again for the same Idempotency-Key and body
// (and the store learns it back), else what the gate answers for a used
// token.
func (a *API) used(ctx context.Context, lease waitroom.Lease, prior *waitroom.PriorOrder) outcome {
	switch {
	case prior.SameKey && prior.RequestHash != "" && subtle.ConstantTimeCompare([]byte(prior.RequestHash), []byte(lease.RequestHash)) != 1:
		a.unlock(ctx, lease)
		return refused(waitroom.Errorf(waitroom.EIdemKeyReused, "this Idempotency-Key was used with another request body; use a new key for a new order"))
	case prior.SameKey && prior.Answer != nil:
		cctx, cancel := context.WithTimeout(ctx, a.storeTimeout())
		defer cancel()
		if err := a.Queue.CommitOrder(cctx, lease, *prior.Answer); err != nil {
			a.unlock(ctx, lease)
		}
		return outcome{resp: answerResponse(*prior.Answer)}
	case prior.SameKey:
		// The first attempt has no answer yet: it is under way, or ended
		// where nothing could record how.
		a.unlock(ctx, lease)
		return refused(waitroom.Errorf(waitroom.EOrderInProgress, "another order of yours is in progress; wait for it to finish"))
	}
	a.unlock(ctx, lease)
	return outcome{resp: ErrorResponse(waitroom.TokenUsed()), counts: []counted{{lease.Room, ones(metrics.TokensRejected)}}}
}

// keep stores a keyed order's answer in the record, for a replay after a
// failover lost the store's copy. The order has happened: a failure is
// logged, never the buyer's.
func (a *API) keep(ctx context.Context, lease waitroom.Lease, answer waitroom.StoredAnswer) {
	if a.Record == nil || lease.IdempotencyKey == "" {
		return
	}
	answer.RequestHash = lease.RequestHash
	var tooLarge error
	err := a.retryStore(ctx, func(ctx context.Context) error {
		if err := a.Record.Keep(ctx, a.claimOf(lease), answer); errors.Is(err, waitroom.ErrAnswerTooLarge) {
			tooLarge = err // no retry makes it smaller
		} else if err != nil {
			return err
		}
		return nil
	})
	if err = errors.Join(err, tooLarge); err != nil {
		a.logWarn(ctx, "order answer not kept in the order record: a replay after a failover answers order_in_progress", err)
	}
}

// forget gives the token back in the record after a failed order, so
// that it may order again; if the record cannot be reached for the
// request's whole budget, the token stays used.
func (a *API) forget(ctx context.Context, lease waitroom.Lease) {
	if a.Record == nil {
		return
	}
	if err := a.retryStore(ctx, func(ctx context.Context) error { return a.Record.Release(ctx, a.claimOf(lease)) }); err != nil {
		a.logWarn(ctx, "order failed but its token stays used in the order record", err)
	}
}
