package waitroom

import (
	"time"
)

// DurableWrites is DURABLE_WRITES: whether the order gate's writes wait
// for a replica before the gate goes on (docs/API.md, "Configuration";
// docs/design.md, "Failover").
type DurableWrites string

const (
	// DurableOff (the default): the gate's lock and commit are acknowledged
	// by the primary alone, as every other write; a failover may lose them.
	DurableOff DurableWrites = "off"
	// DurableWait: the gate's check and commit scripts are each followed,
	// in the same pipeline on the same connection, by WAIT 1: no order goes
	// downstream before its lock has reached a replica, and the gate answers
	// 503 when none acknowledged it within DurableWaitTimeout.
	DurableWait DurableWrites = "wait"
)

// DefaultDurableWrites is DURABLE_WRITES' default.
const DefaultDurableWrites = DurableOff

// DurableWaitTimeout is WAIT's timeout with DURABLE_WRITES=wait: well
// under the store client's 1 s read timeout, so that a missing replica
// is a clear refusal, not a timed-out connection.
const DurableWaitTimeout = 250 * time.Millisecond
