// Package metrics names what Waitroom measures and emits it as CloudWatch
// Embedded Metric Format (EMF) JSON log lines. The infra stack's dashboard and
// alarms import these constants, so a metric has exactly one spelling.
package metrics

// Namespace is the CloudWatch namespace of every Waitroom metric.
const Namespace = "Waitroom"

// DimensionRoom is the per-room dimension. Every metric is also emitted with
// no dimension at all, the all-rooms aggregate that alarms read.
const DimensionRoom = "Room"

// Metric names. Units are given beside each.
const (
	Entered          = "Entered"          // Count: new places taken in a line (enter, or the intake consumer), instant admissions included
	Accepted         = "Accepted"         // Count: enters accepted into the broker (INTAKE broker or fallback, 202)
	QueueFull        = "QueueFull"        // Count: enters refused with queue_full
	Admitted         = "Admitted"         // Count: users moved to READY (admit, and enter's instant admissions)
	WaitSeconds      = "WaitSeconds"      // Seconds: enter → admitted, one value per admitted user
	QueueDepth       = "QueueDepth"       // Count (gauge): users waiting, after an admit batch
	ActiveTokens     = "ActiveTokens"     // Count (gauge): live entry tokens, after an admit batch
	EffectiveRate    = "EffectiveRate"    // Count/Second (gauge): the rate a room admits at (adaptive, or ratePerSec), after an admit batch
	TokensExpired    = "TokensExpired"    // Count: entry tokens that expired unused
	AdmitBatches     = "AdmitBatches"     // Count: admit batches run (scheduler heartbeat)
	OrdersPassed     = "OrdersPassed"     // Count: orders the downstream accepted (2xx)
	OrdersFailed     = "OrdersFailed"     // Count: orders the downstream refused or could not take
	TokensConsumed   = "TokensConsumed"   // Count: entry tokens consumed by a successful order
	TokensRejected   = "TokensRejected"   // Count: order attempts refused with entry_token_invalid
	StoreUnavailable = "StoreUnavailable" // Count: requests answered 503 because the store was unreachable
	OrdersFailOpen   = "OrdersFailOpen"   // Count: orders forwarded unguarded (ORDER_GATE_FAIL_OPEN) while the store was down
	RateLimited      = "RateLimited"      // Count: requests refused with rate_limited
	LimiterFailOpen  = "LimiterFailOpen"  // Count: requests let through because the abuse limiter could not run
)

// Names lists every metric above, once: the infra stack and its tests range
// over it (every metric on the dashboard) instead of reading this file.
var Names = []string{
	Entered, Accepted, QueueFull, Admitted, WaitSeconds, QueueDepth, ActiveTokens, EffectiveRate, TokensExpired,
	AdmitBatches, OrdersPassed, OrdersFailed, TokensConsumed, TokensRejected, StoreUnavailable,
	OrdersFailOpen, RateLimited, LimiterFailOpen,
}
