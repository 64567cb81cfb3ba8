package waitroom

import (
	"fmt"
	"strings"
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

func (r *envReader) durableWrites() DurableWrites {
	switch m := DurableWrites(strings.ToLower(r.str("DURABLE_WRITES", string(DefaultDurableWrites)))); m {
	case DurableOff, DurableWait:
		return m
	default:
		r.fail("DURABLE_WRITES", fmt.Sprintf("must be off or wait, got %q", m))
		return DefaultDurableWrites
	}
}

// durableNeeds refuses DURABLE_WRITES=wait where WAIT cannot mean what it
// says: the embedded store has no replica, and ElastiCache Serverless
// shows its clients one virtual node whose replication they cannot wait
// for (docs/design.md, "Failover").
func (r *envReader) durableNeeds(c Config) {
	if c.DurableWrites != DurableWait {
		return
	}
	if c.RedisURL == "" {
		r.fail("DURABLE_WRITES", "is wait but REDIS_URL is unset: the embedded store has no replica to wait for")
	}
	if c.FailOpenOrders {
		r.fail("DURABLE_WRITES", "is wait with ORDER_GATE_FAIL_OPEN=true: an order whose lock reached no replica would be forwarded unguarded; choose one")
	}
	if c.RedisIAM.Enabled() && c.RedisIAM.Serverless {
		r.fail("DURABLE_WRITES", "is wait but the store is ElastiCache Serverless (REDIS_IAM_SERVERLESS): it offers no replica a client can WAIT for; use off and an order API that deduplicates by X-Waitroom-Token-Id")
	}
}
