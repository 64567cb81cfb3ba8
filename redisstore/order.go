package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/waitroom/waitroom"
)

// BeginOrder checks c.User's token and takes its lock in one script.
func (s *Store) BeginOrder(ctx context.Context, c waitroom.Caller, o waitroom.OrderAttempt) (waitroom.Lease, error) {
	lockValue, err := s.randomToken()
	if err != nil {
		return waitroom.Lease{}, waitroom.Unavailable(err)
	}
	k := roomKeys(o.Room)
	// The limiter's buckets are fields of the room's hash (ratelimit.lua).
	keys := k.orderBeginKeys(c.User, o.IdempotencyKey)
	args := s.limited(c, []any{o.Token, lockValue, s.lockTTL.Milliseconds(), flag(o.IdempotencyKey != "")}, callerBuckets)
	args = append(args, flag(o.CreatedRoomsOnly))
	raw, replicated, err := s.runGateWrite(ctx, s.scripts.orderBegin, keys, args...)
	reply, _ := raw.([]any)
	lease := waitroom.Lease{OrderAttempt: o, User: c.User}
	if err != nil || len(reply) > 0 && reply[0] == "OK" && s.durable && !replicated {
		// The script may have taken the lock (its reply lost), or took one
		// a failover could take back: the lease carries the lock's value
		// for the caller to give it up (ReleaseOrder, which deletes only
		// a lock holding it). A call that never left took nothing.
		if !unsent(err) {
			lease.LockValue = lockValue
		}
		return lease, s.unavailableUnlessReplicated(replicated, err)
	}
	if len(reply) == 0 {
		return waitroom.Lease{}, waitroom.Unavailable(malformed("order_begin", reply))
	}
	if reply[0] == "LIMITED" {
		return waitroom.Lease{}, limitedError(reply)
	}
	switch reply[0] {
	case "OK":
		lease.LockValue = lockValue
		lease.TokenExpires = tokenExpiry(reply)
		return lease, nil
	case "REPLAY":
		answer, err := replayOf(reply, o)
		if err != nil {
			return waitroom.Lease{}, err
		}
		lease.Replay = &answer
		return lease, nil
	case "UNSOLD":
		return waitroom.Lease{}, unsoldRoom(o.Room)
	case "BUSY":
		return waitroom.Lease{}, waitroom.Errorf(waitroom.EOrderInProgress, "another order of yours is in progress; wait for it to finish")
	default:
		return waitroom.Lease{}, waitroom.TokenUsed()
	}
}

// replayOf is the stored answer order_begin.lua found for the attempt's
// key, refused when the key came with another body.
func replayOf(reply []any, o waitroom.OrderAttempt) (answer waitroom.StoredAnswer, err error) {
	raw, _ := reply[1].(string)
	if err := json.Unmarshal([]byte(raw), &answer); err != nil {
		return answer, waitroom.Unavailable(fmt.Errorf("stored answer: %w", err))
	}
	if answer.RequestHash != "" && answer.RequestHash != o.RequestHash {
		return answer, waitroom.Errorf(waitroom.EIdemKeyReused, "this Idempotency-Key was used with another request body; use a new key for a new order")
	}
	return answer, nil
}

// unsoldRoom refuses a token of a room no operator created when the gate
// sells only in those (ORDER_ROOMS unset): the same refusal as a room that
// ORDER_ROOMS does not name.
func unsoldRoom(room string) error {
	return waitroom.Errorf(waitroom.EWrongRoom, "this entry token is for room %q, which sells nothing here: no operator created it (PUT /admin/rooms/%s) and ORDER_ROOMS does not name it", room, room)
}

// CommitOrder consumes the token, keeps the answer and releases the lock;
// the lease's downstream call is counted with the release (downstream.lua).
func (s *Store) CommitOrder(ctx context.Context, l waitroom.Lease, answer waitroom.StoredAnswer) error {
	answer.RequestHash = l.RequestHash
	raw, err := json.Marshal(answer)
	if err != nil {
		return err
	}
	k := roomKeys(l.Room)
	keys := k.orderCommitKeys(l.User, l.IdempotencyKey)
	_, replicated, err := s.runGateWrite(ctx, orderCommitScript, keys, l.Token, l.LockValue, l.User, flag(l.IdempotencyKey != ""), raw, int64(IdempotencyTTL.Seconds()),
		l.Downstream.Field(), downstreamExpiry.Milliseconds())
	return s.unavailableUnlessReplicated(replicated, err)
}

// ReleaseOrder releases the user's lock if this lease still owns it, and
// counts the lease's downstream call with it: a failed one once per token
// holder (unlock.lua).
func (s *Store) ReleaseOrder(ctx context.Context, l waitroom.Lease) error {
	if l.LockValue == "" {
		return nil
	}
	k := roomKeys(l.Room)
	if err := unlockScript.run(ctx, s.rdb, k.unlockKeys(l.User), l.LockValue, l.Downstream.Field(), downstreamExpiry.Milliseconds()).Err(); err != nil {
		return waitroom.Unavailable(err)
	}
	return nil
}

// tokenExpiry is the expiry order_begin.lua returns with OK (zero for a
// malformed reply).
func tokenExpiry(reply []any) time.Time {
	if len(reply) < 2 {
		return time.Time{}
	}
	var ms int64
	switch v := reply[1].(type) {
	case string:
		ms, _ = strconv.ParseInt(v, 10, 64)
	case int64:
		ms = v
	}
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// orderBeginKeys are order_begin.lua's keys, in the order its top names them.
func (r roomKeys) orderBeginKeys(user, idempotencyKey string) []string {
	return []string{r.record(user), r.lock(user), r.answer(user, idempotencyKey), r.settings()}
}

// orderCommitKeys are order_commit.lua's keys, in the order its top names them.
func (r roomKeys) orderCommitKeys(user, idempotencyKey string) []string {
	return []string{r.record(user), r.lock(user), r.answer(user, idempotencyKey), r.live(), r.downstream()}
}

// unlockKeys are unlock.lua's keys, in the order its top names them.
func (r roomKeys) unlockKeys(user string) []string {
	return []string{r.lock(user), r.downstream(), r.failed(user)}
}
