package waitroom

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"time"
)

// Caller is who sends a request, for the abuse limiter: the identity the
// request proved (user or visitor id) and the source IP the edge saw.
type Caller struct {
	ID string
	IP string
	// NewVisitor: this call makes a visitor (an enter without identity),
	// which the bucket of new visitors per source address pays for.
	NewVisitor bool
	// Challenge: the solved challenge (CHALLENGE=pow) the new visitor came
	// with, which the enter's script records as spent before it makes one.
	Challenge ChallengeSpend
}

type callerKey struct{}

// WithCaller returns ctx carrying c. The Queue's methods take it from the
// context rather than a parameter: the limiter is a property of the
// request, not of the operation, and store calls without it (admission,
// benchmarks, tools) are simply not limited.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerOf returns the caller in ctx; ok is false when there is none.
func CallerOf(ctx context.Context) (c Caller, ok bool) {
	c, ok = ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// SourceAddress is the address the limiter counts a caller by: an IPv4
// address as it is, an IPv6 address by its /64 (one host's, usually: a
// client owns all of it), "" for none or anything unparsable.
func SourceAddress(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ""
	}
	if a = a.Unmap().WithZone(""); a.Is4() {
		return a.String()
	}
	return netip.PrefixFrom(a, 64).Masked().String()
}

// RateLimited is the answer to a caller over its limit, to retry after wait.
func RateLimited(wait time.Duration) *Error {
	wait = time.Duration(math.Max(float64(wait), float64(time.Second)))
	return &Error{Code: ERateLimited, Message: fmt.Sprintf("too many requests from you; retry in %d s", int(math.Ceil(wait.Seconds()))), RetryAfter: wait}
}
