package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
)

// AdmitBatch runs one batch: every registered room's script in one pipeline.
// The windows it hands over are decided on by waitroom.RunBatch, which
// stores the decisions (StoreDecisions).
func (s *Store) AdmitBatch(ctx context.Context) (waitroom.Batch, error) {
	rooms, err := s.rdb.SMembers(ctx, roomsKey).Result()
	if err != nil {
		return waitroom.Batch{}, waitroom.Unavailable(err)
	}
	if len(rooms) == 0 {
		return waitroom.Batch{}, nil
	}
	calls := make([]admitCall, len(rooms))
	for i, room := range rooms {
		calls[i], err = s.admitCall(room)
		if err != nil {
			return waitroom.Batch{}, err
		}
	}
	s.runAdmitCalls(ctx, calls)
	if isNoScript(firstErr(calls)) {
		// A restarted or new node has no scripts cached: load once, run again.
		// A NOSCRIPT reply ran nothing, so running again is safe.
		if err := admitScript.load(ctx, s.rdb); err != nil {
			return waitroom.Batch{}, waitroom.Unavailable(err)
		}
		s.runAdmitCalls(ctx, calls)
	}
	var batch waitroom.Batch
	var failed error
	for i := range calls {
		c := &calls[i]
		rb, stored, err := s.decodeAdmit(c)
		if err != nil {
			failed = err
			continue
		}
		// Operator-created rooms stay registered: enter does not register
		// them when rooms are closed, so that unknown rooms write nothing.
		if !stored && rb.Waiting == 0 && len(rb.Admitted) == 0 && rb.ActiveTokens == 0 {
			s.forgetRoom(ctx, rb.Room)
		}
		batch.Rooms = append(batch.Rooms, rb)
	}
	if failed != nil && len(batch.Rooms) == 0 {
		return batch, waitroom.Unavailable(failed)
	}
	return batch, nil
}

type admitCall struct {
	room string
	keys []string
	args []any
	cmd  *redis.Cmd
}

func (s *Store) admitCall(room string) (admitCall, error) {
	k := roomKeys(room)
	n := s.tokensPerRoom
	if w, ok := s.wanted.Load(room); ok {
		n = w.(int)
	}
	args := s.roomArgs(strconv.FormatFloat(s.interval.Seconds(), 'f', -1, 64), k.recordPrefix(), room, s.idle.Milliseconds(),
		waitroom.AdaptWindow.Milliseconds(), downstreamExpiry.Milliseconds())
	for i := 0; i < n; i++ {
		t, err := s.randomToken()
		if err != nil {
			return admitCall{}, waitroom.Unavailable(err)
		}
		args = append(args, t)
	}
	return admitCall{room: room, keys: k.admitKeys(), args: args}, nil
}

func (s *Store) runAdmitCalls(ctx context.Context, calls []admitCall) {
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range calls {
			calls[i].cmd = admitScript.evalSha(ctx, p, calls[i].keys, calls[i].args...)
		}
		return nil
	})
}

func firstErr(calls []admitCall) error {
	for _, c := range calls {
		if err := c.cmd.Err(); err != nil {
			return err
		}
	}
	return nil
}

// admitHead is the length of admit.lua's reply before the admitted users.
const admitHead = 12

// decodeAdmit reads a room's batch, whether the room has stored settings,
// and remembers how many token parts its rate wants next time (a raised
// rate is short of parts for one batch; the budget keeps what it saved).
func (s *Store) decodeAdmit(c *admitCall) (rb waitroom.RoomBatch, stored bool, err error) {
	reply, err := c.cmd.Slice()
	if err != nil {
		return rb, false, err
	}
	if len(reply) < admitHead || (len(reply)-admitHead)%3 != 0 {
		return rb, false, malformed("admit", reply)
	}
	if want, _ := reply[4].(int64); want > 0 {
		s.wanted.Store(c.room, int(want))
	}
	stored = reply[5] == int64(1)
	rb = waitroom.RoomBatch{Room: c.room}
	rb.Waiting, _ = reply[0].(int64)
	rb.ActiveTokens, _ = reply[1].(int64)
	rb.TokensExpired, _ = reply[2].(int64)
	expMs, _ := strconv.ParseInt(fmt.Sprint(reply[3]), 10, 64)
	expiresAt := time.UnixMilli(expMs).UTC()
	rb.EffectiveRatePerSec, _ = strconv.ParseFloat(fmt.Sprint(reply[6]), 64)
	rb.Waiting, _ = reply[0].(int64)
	if err = decodeWindow(&rb, reply[7:12]); err != nil {
		return rb, false, err
	}
	for i := admitHead; i+2 < len(reply); i += 3 {
		// A draw: user, token, waited; a number: number, '', waited.
		a := waitroom.Admission{ExpiresAt: expiresAt}
		a.User, _ = reply[i].(string)
		a.Number, _ = reply[i].(int64)
		a.Token, _ = reply[i+1].(string)
		waited, _ := reply[i+2].(int64)
		a.Waited = time.Duration(waited) * time.Second
		rb.Admitted = append(rb.Admitted, a)
	}
	return rb, stored, nil
}

// forgetRoom stops visiting a room nobody waits in. An enter racing with
// this re-registers the room itself, and the re-check below catches an
// enter that landed between the script and the SREM.
func (s *Store) forgetRoom(ctx context.Context, room string) {
	s.wanted.Delete(room)
	if s.rdb.SRem(ctx, roomsKey, room).Err() != nil {
		return
	}
	if waiting, err := s.anyoneIn(ctx, room); err != nil || waiting {
		s.rdb.SAdd(ctx, roomsKey, room)
	}
}

// anyoneIn reads whether anyone waits in room or holds a live token: the
// pre-queue's draws and tokens, and the numbers the front has not passed
// (line.lua), read in one round trip.
func (s *Store) anyoneIn(ctx context.Context, room string) (bool, error) {
	k := roomKeys(room)
	var kept *redis.IntCmd
	var line *redis.SliceCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		kept = p.Exists(ctx, k.line(), k.live())
		line = p.HMGet(ctx, k.settings(), "front", "next")
		return nil
	})
	if err != nil {
		return false, err
	}
	front, _ := strconv.ParseInt(fmt.Sprint(line.Val()[0]), 10, 64)
	next, _ := strconv.ParseInt(fmt.Sprint(line.Val()[1]), 10, 64)
	return kept.Val() > 0 || (front != 0 && max(front, -front) < next), nil
}

// admitKeys are admit.lua's keys, in the order its top names them.
func (r roomKeys) admitKeys() []string {
	return []string{r.settings(), r.line(), r.budget(), r.marks(), r.live(), r.admits(), r.downstream(), r.control(),
		r.batches(), r.unclaimed()}
}
