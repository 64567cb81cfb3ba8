package httpapi

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/metrics"
)

// limiterLogEvery bounds the fail-open warning: a broken limiter would
// otherwise log once per request; the metric counts each one.
const limiterLogEvery = time.Minute

// lastLimiterLog is when the fail-open warning was last written (Unix ns),
// shared by every API of the process.
var lastLimiterLog atomic.Int64

// AsCaller is who as the store's calls take it: the store's user, and for
// the abuse limiter its address (Identify's: the source IP, or the
// viewer's behind CloudFront), whether this call makes a visitor (the
// bucket of new visitors per address pays for it) and with which solved
// challenge. Every request's caller is limited.
func AsCaller(who Identity) waitroom.Caller {
	return waitroom.Caller{User: who.User, IP: who.Address, NewVisitor: who.Source == NewVisitor, Challenge: who.Challenge,
		Anonymous: who.Ticketed()}
}

// limiterFailedOpen reports a call the limiter let through unchecked:
// counted each time, logged at most once a minute.
func (a *API) limiterFailedOpen(ctx context.Context, room string) outcome {
	now := time.Now().UnixNano()
	last := lastLimiterLog.Load()
	if now-last >= int64(limiterLogEvery) && lastLimiterLog.CompareAndSwap(last, now) && a.Log != nil {
		a.Log.WarnContext(ctx, "abuse limiter could not run: requests pass unlimited (fail open; metric LimiterFailOpen counts them)", "room", room)
	}
	return outcome{counts: []counted{{room, ones(metrics.LimiterFailOpen)}}}
}

// rateLimited answers err, a refusal of the limiter, and counts it.
func rateLimited(room string, err error) outcome {
	return outcome{resp: ErrorResponse(err), counts: []counted{{room, ones(metrics.RateLimited)}}}
}
