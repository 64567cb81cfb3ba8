package redisstore

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom"
)

// The buckets a script takes: position and the gate the caller's and its
// address's (callerBuckets), enter and the broker's accept those and the
// new visitors' of the address (visitorBuckets).
const (
	callerBuckets  = 2
	visitorBuckets = 3
)

// unparsableAddress is the address bucket of every caller whose address
// does not parse (no address does: the handlers refuse such requests, and
// this keeps a slip there from turning the buckets off).
const unparsableAddress = "?"

// limited appends the abuse limiter's time and n buckets' fields to a
// script call's arguments (ratelimit.lua; their steps and limits are in the
// script's text: limitsLine): the caller's identity, its source address
// (an IPv6 address by its /64: waitroom.SourceAddress), and the new
// visitors of that address, charged only by an enter that makes one. The
// buckets are fields of the room's hash, in the room's hash slot, as every
// key of a script must be on a cluster: a caller's budget is per room
// (docs/security.md, "Floods across rooms"). A bucket whose rate is 0, or
// that the caller lacks, travels as "", which the script skips; for an
// unlimited caller (waitroom.Unlimited: admission's consumer, tools,
// benchmarks) every bucket does.
func (s *Store) limited(c waitroom.Caller, args []any, n int) []any {
	l := s.limits
	if !c.Limited() {
		l = waitroom.Limits{}
	}
	clientRate, ipRate, visitorRate := l.ClientRatePerSec, l.IPRatePerSec, l.VisitorRatePerSec
	if c.User == "" {
		clientRate = 0
	}
	addr := waitroom.SourceAddress(c.IP)
	switch {
	case addr == "" && c.IP != "": // not an address: one strict bucket for all such, never none
		addr = unparsableAddress
	case addr == "":
		ipRate, visitorRate = 0, 0
	}
	if !c.NewVisitor {
		visitorRate = 0
	}
	// The id's length first: an id may contain ':'. Every field has ':' for
	// its second character, and no settings field has (admit.lua's sweep).
	args = append(args, s.now().UnixMicro())
	field := func(rate float64, name string) string {
		if rate <= 0 {
			return ""
		}
		return name
	}
	return append(args, []any{
		field(clientRate, "c:"+strconv.Itoa(len(c.User))+":"+c.User),
		field(ipRate, "a:"+addr),
		field(visitorRate, "v:"+addr),
	}[:n]...)
}

// configHead is the first line of every script that takes the limiter
// (newLimitedScripts): the stall check's horizon and time (room.lua,
// stalled; position.lua) and the batch interval in seconds that bounds the
// rate budget (enter.lua's instant admission; admit.lua gets it as an
// argument), as Lua constants. They are the same for every call of a
// store, so they are compiled into the text (a store's scripts are loaded
// by their SHA like any other) rather than sent, and parsed, with every
// call; the scripts' main bodies read them, not their functions.
func configHead(horizon, stall, batch time.Duration) string {
	return fmt.Sprintf("local stallHorizonMs, stallAfterUs, batchSeconds = %d, %d, %s\n", horizon.Milliseconds(), stall.Microseconds(),
		strconv.FormatFloat(batch.Seconds(), 'f', -1, 64))
}

// limitsLine is the first line of ratelimit.lua's rateLimit: the buckets'
// steps and limits in the order of limited's fields, as its own locals
// (written at its marker: withConsts). As locals of the script they would
// be upvalues of rateLimit, made at every call (about 470 instructions
// each: docs/design.md, "What a poll costs Redis"); as a table, a table
// built at every call.
func limitsLine(l waitroom.Limits) string {
	var steps, spans [3]string
	for i, b := range []struct {
		rate  float64
		burst int64
	}{{l.ClientRatePerSec, l.ClientBurst}, {l.IPRatePerSec, l.IPBurst}, {l.VisitorRatePerSec, l.VisitorBurst}} {
		steps[i], spans[i] = gcra(b.rate, float64(b.burst))
	}
	return fmt.Sprintf("local limitStep1, limitStep2, limitStep3, limitSpan1, limitSpan2, limitSpan3 = %s, %s",
		strings.Join(steps[:], ", "), strings.Join(spans[:], ", "))
}

// gcra is a bucket's step (1 s / rate) and limit (burst steps) in whole
// microseconds; "0" when the rate is 0 (limited sends no field then).
func gcra(rate, burst float64) (step, limit string) {
	if rate <= 0 {
		return "0", "0"
	}
	us := max(1, math.Round(1e6/rate))
	return strconv.FormatFloat(us, 'f', 0, 64), strconv.FormatFloat(us*burst, 'f', 0, 64)
}

// limitedError reads {'LIMITED', ms} into a rate_limited error.
func limitedError(reply []any) error {
	ms, _ := reply[1].(int64)
	if len(reply) != 2 {
		return waitroom.Unavailable(malformed("limiter", reply))
	}
	return waitroom.RateLimited(time.Duration(ms) * time.Millisecond)
}

// Admissible makes the checks an enter makes before it touches the line,
// for an entry about to go to the broker: the room exists, and c is within
// the limiter (new visitors' bucket included), its challenge unspent.
func (s *Store) Admissible(ctx context.Context, room string, c waitroom.Caller) error {
	k := roomKeys(room)
	ms, challenge := challengeOf(c, k)
	keys, args := k.acceptKeys(challenge), append(s.limited(c, nil, visitorBuckets), ms)
	reply, err := s.scripts.accept.run(ctx, s.rdb, keys, args...).Slice()
	switch {
	case err != nil:
		return waitroom.Unavailable(err)
	case reply[0] == "NOROOM":
		return waitroom.Errorf(waitroom.ERoomNotFound, "there is no room %q", room)
	case reply[0] == "LIMITED":
		return limitedError(reply)
	case reply[0] == "SPENT":
		return spentError()
	case reply[0] == "CLOSED":
		hot, _ := reply[1].(string)
		r, err := decodeHot(hot)
		if err != nil {
			return waitroom.Unavailable(err)
		}
		msg := r.message
		if msg == "" {
			msg = fmt.Sprintf("room %q is closed: nobody can join its line any more", room)
		}
		return &waitroom.Error{Code: waitroom.ERoomClosed, Message: msg}
	case reply[0] != "OK":
		return waitroom.Unavailable(malformed("accept", reply))
	}
	return nil
}

// acceptKeys are accept.lua's keys, in the order its top names them: the
// room's hash, and a solved challenge's record when the caller has one.
func (r roomKeys) acceptKeys(challenge []string) []string {
	return append([]string{r.settings()}, challenge...)
}
