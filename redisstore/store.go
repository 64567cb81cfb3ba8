// Package redisstore keeps the waiting room in Redis (or Valkey): one Lua
// script per operation, all keys of a room under one {room} hash tag so that
// every script runs on a cluster.
package redisstore

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
)

var (
	//go:embed enter.lua
	enterLua string
	//go:embed position.lua
	positionLua string
	//go:embed admit.lua
	admitLua string
	//go:embed order_begin.lua
	orderBeginLua string
	//go:embed order_commit.lua
	orderCommitLua string
	//go:embed unlock.lua
	unlockLua string

	enterScript       = redis.NewScript(enterLua)
	positionScript    = redis.NewScript(positionLua)
	admitScript       = redis.NewScript(admitLua)
	orderBeginScript  = redis.NewScript(orderBeginLua)
	orderCommitScript = redis.NewScript(orderCommitLua)
	unlockScript      = redis.NewScript(unlockLua)
)

// Client is the part of go-redis the store uses; *redis.Client and
// *redis.ClusterClient both satisfy it.
type Client interface {
	redis.Scripter
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
	SMembers(ctx context.Context, key string) *redis.StringSliceCmd
	SRem(ctx context.Context, key string, members ...any) *redis.IntCmd
	SAdd(ctx context.Context, key string, members ...any) *redis.IntCmd
	Exists(ctx context.Context, keys ...string) *redis.IntCmd
	Get(ctx context.Context, key string) *redis.StringCmd
}

// roomsKey lists the rooms that may have people waiting. It is the one key
// outside any room's hash slot; admission reads it once per batch.
const roomsKey = "wr:rooms"

// IdempotencyTTL is how long a successful order's answer is kept for replays.
const IdempotencyTTL = 24 * time.Hour

// lockMargin keeps an order lock alive a little past the downstream timeout,
// so that it outlives the request it guards but not a crashed gate for long.
const lockMargin = 5 * time.Second

// Store implements waitroom.Queue.
type Store struct {
	rdb           Client
	capacity      int64
	rate          float64
	batch         float64
	tokenTTL      time.Duration
	lockTTL       time.Duration
	random        io.Reader
	tokensPerRoom int
}

var _ waitroom.Queue = (*Store)(nil)

// New returns a store for the rules in cfg.
func New(rdb Client, cfg waitroom.Config) *Store {
	batch := cfg.BatchSize()
	return &Store{
		rdb:           rdb,
		capacity:      cfg.QueueCapacity,
		rate:          cfg.AdmitRatePerSec,
		batch:         batch,
		tokenTTL:      cfg.EntryTokenTTL,
		lockTTL:       cfg.OrderTimeout + lockMargin,
		random:        rand.Reader,
		tokensPerRoom: int(math.Ceil(batch)), // 2.5 users a batch must be able to admit 3 now and then
	}
}

// roomKeys names the keys of one room; the {room} hash tag keeps them in one slot.
type roomKeys string

func (r roomKeys) key(name string) string { return "wr:{" + string(r) + "}:" + name }
func (r roomKeys) line() string           { return r.key("line") }
func (r roomKeys) seq() string            { return r.key("seq") }
func (r roomKeys) marks() string          { return r.key("marks") }
func (r roomKeys) lastMark() string       { return r.key("lastmark") }
func (r roomKeys) budget() string         { return r.key("budget") }
func (r roomKeys) tokens() string         { return r.key("tokens") }
func (r roomKeys) tokenPrefix() string    { return r.key("u:") }
func (r roomKeys) token(user string) string {
	return r.tokenPrefix() + user
}
func (r roomKeys) lock(user string) string { return r.key("lock:" + user) }

// idempotency names the answer of user's key; the user's length comes first
// because both parts may contain any printable character, ':' included.
func (r roomKeys) idempotency(user, key string) string {
	return r.key("idem:" + strconv.Itoa(len(user)) + ":" + user + ":" + key)
}

// Enter joins the line in one round trip: the script and the room's
// registration for admission travel in one pipeline (re-registering on every
// enter heals a registration lost to an error). The first user of an empty
// line registers the room once more after the script has answered: on a
// cluster the pipeline's two commands go to two nodes in no set order, and
// forgetRoom, which re-checks the line after unregistering a room, must never
// miss a user this enter put in line.
func (s *Store) Enter(ctx context.Context, room, user string) (waitroom.Standing, error) {
	k := roomKeys(room)
	keys := []string{k.line(), k.seq(), k.token(user), k.marks(), k.lastMark()}
	args := []any{user, s.capacity}
	var res *redis.Cmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		res = enterScript.EvalSha(ctx, p, keys, args...)
		p.SAdd(ctx, roomsKey, room)
		return nil
	})
	if isNoScript(err) { // the node lost its script cache
		res = enterScript.Run(ctx, s.rdb, keys, args...)
		err = res.Err()
	}
	if err != nil {
		return waitroom.Standing{}, waitroom.Unavailable(err)
	}
	reply, err := res.Slice()
	if err != nil {
		return waitroom.Standing{}, waitroom.Unavailable(err)
	}
	if reply[0] == "FULL" {
		return waitroom.Standing{}, queueFull(room)
	}
	st, err := standing(reply)
	if len(reply) == 3 {
		st.Joined = reply[2] == int64(1)
	}
	if err == nil && st.Joined && st.Position == 1 {
		if err := s.rdb.SAdd(ctx, roomsKey, room).Err(); err != nil {
			return waitroom.Standing{}, waitroom.Unavailable(err)
		}
	}
	return st, err
}

func queueFull(room string) error {
	return &waitroom.Error{Code: waitroom.EQueueFull,
		Message: fmt.Sprintf("the line of room %q is full, please retry later", room), RetryAfter: 10 * time.Second}
}

// Position reads where the user stands: one script, one round trip.
func (s *Store) Position(ctx context.Context, room, user string) (waitroom.Standing, error) {
	k := roomKeys(room)
	reply, err := positionScript.Run(ctx, s.rdb, []string{k.line(), k.token(user)}, user).Slice()
	if err != nil {
		return waitroom.Standing{}, waitroom.Unavailable(err)
	}
	return standing(reply)
}

// standing decodes the replies of enter.lua and position.lua.
func standing(reply []any) (waitroom.Standing, error) {
	switch reply[0] {
	case "READY":
		rec, _ := reply[1].(string)
		token, expiresAt, err := parseRecord(rec)
		if err != nil {
			return waitroom.Standing{}, waitroom.Unavailable(err)
		}
		return waitroom.Standing{Status: waitroom.Ready, Token: token, ExpiresAt: expiresAt}, nil
	case "WAITING":
		pos, _ := reply[1].(int64)
		return waitroom.Standing{Status: waitroom.Waiting, Position: pos}, nil
	case "NOT_IN_QUEUE":
		return waitroom.Standing{Status: waitroom.NotInQueue}, nil
	}
	return waitroom.Standing{}, waitroom.Unavailable(fmt.Errorf("unexpected script reply %v", reply))
}

// A token record is "<expiresAtUnixMs>:<token>".
func parseRecord(rec string) (token string, expiresAt time.Time, err error) {
	ms, token, ok := strings.Cut(rec, ":")
	n, perr := strconv.ParseInt(ms, 10, 64)
	if !ok || perr != nil || token == "" {
		return "", time.Time{}, fmt.Errorf("malformed token record %q", rec)
	}
	return token, time.UnixMilli(n).UTC(), nil
}

// AdmitBatch runs one batch: every registered room's script in one pipeline.
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
		if err := admitScript.Load(ctx, s.rdb).Err(); err != nil {
			return waitroom.Batch{}, waitroom.Unavailable(err)
		}
		s.runAdmitCalls(ctx, calls)
	}
	var batch waitroom.Batch
	var failed error
	for _, c := range calls {
		rb, err := decodeAdmit(c)
		if err != nil {
			failed = err
			continue
		}
		if rb.Waiting == 0 && len(rb.Admitted) == 0 && rb.ActiveTokens == 0 {
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
	args := make([]any, 0, 5+s.tokensPerRoom)
	args = append(args, s.rate, s.batch, s.tokenTTL.Milliseconds(), k.tokenPrefix(), room)
	for i := 0; i < s.tokensPerRoom; i++ {
		t, err := s.randomToken()
		if err != nil {
			return admitCall{}, waitroom.Unavailable(err)
		}
		args = append(args, t)
	}
	return admitCall{room: room, keys: []string{k.line(), k.budget(), k.marks(), k.tokens()}, args: args}, nil
}

func (s *Store) runAdmitCalls(ctx context.Context, calls []admitCall) {
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range calls {
			calls[i].cmd = admitScript.EvalSha(ctx, p, calls[i].keys, calls[i].args...)
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

func decodeAdmit(c admitCall) (waitroom.RoomBatch, error) {
	reply, err := c.cmd.Slice()
	if err != nil {
		return waitroom.RoomBatch{}, err
	}
	if len(reply) < 4 || (len(reply)-4)%3 != 0 {
		return waitroom.RoomBatch{}, fmt.Errorf("unexpected admit reply %v", reply)
	}
	rb := waitroom.RoomBatch{Room: c.room}
	rb.Waiting, _ = reply[0].(int64)
	rb.ActiveTokens, _ = reply[1].(int64)
	rb.TokensExpired, _ = reply[2].(int64)
	expMs, _ := strconv.ParseInt(fmt.Sprint(reply[3]), 10, 64)
	expiresAt := time.UnixMilli(expMs).UTC()
	for i := 4; i+2 < len(reply); i += 3 {
		user, _ := reply[i].(string)
		token, _ := reply[i+1].(string)
		waited, _ := reply[i+2].(int64)
		rb.Admitted = append(rb.Admitted, waitroom.Admission{User: user, Token: token, ExpiresAt: expiresAt, Waited: time.Duration(waited) * time.Second})
	}
	return rb, nil
}

// forgetRoom stops visiting a room nobody waits in. An enter racing with
// this re-registers the room itself, and the re-check below catches an
// enter that landed between the script and the SREM.
func (s *Store) forgetRoom(ctx context.Context, room string) {
	if s.rdb.SRem(ctx, roomsKey, room).Err() != nil {
		return
	}
	k := roomKeys(room)
	if n, err := s.rdb.Exists(ctx, k.line(), k.tokens()).Result(); err != nil || n > 0 {
		s.rdb.SAdd(ctx, roomsKey, room)
	}
}

// randomToken returns 128 random bits, URL-safe.
func (s *Store) randomToken() (string, error) {
	var b [16]byte
	if _, err := io.ReadFull(s.random, b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// BeginOrder checks the token and takes the user's lock in one script.
func (s *Store) BeginOrder(ctx context.Context, o waitroom.OrderAttempt) (waitroom.Lease, error) {
	lockValue, err := s.randomToken()
	if err != nil {
		return waitroom.Lease{}, waitroom.Unavailable(err)
	}
	k := roomKeys(o.Room)
	keys := []string{k.token(o.User), k.lock(o.User), k.idempotency(o.User, o.IdempotencyKey)}
	reply, err := orderBeginScript.Run(ctx, s.rdb, keys, o.Token, lockValue, s.lockTTL.Milliseconds(), flag(o.IdempotencyKey != "")).Slice()
	if err != nil {
		return waitroom.Lease{}, waitroom.Unavailable(err)
	}
	lease := waitroom.Lease{OrderAttempt: o}
	switch reply[0] {
	case "OK":
		lease.LockValue = lockValue
		return lease, nil
	case "REPLAY":
		var answer waitroom.StoredAnswer
		raw, _ := reply[1].(string)
		if err := json.Unmarshal([]byte(raw), &answer); err != nil {
			return waitroom.Lease{}, waitroom.Unavailable(fmt.Errorf("stored answer: %w", err))
		}
		lease.Replay = &answer
		return lease, nil
	case "BUSY":
		return waitroom.Lease{}, waitroom.Errorf(waitroom.EOrderInProgress, "another order of yours is in progress; wait for it to finish")
	default:
		return waitroom.Lease{}, waitroom.Errorf(waitroom.ETokenInvalid, "the entry token is not valid for you: it may have expired or been used; join the line again")
	}
}

// CommitOrder consumes the token, keeps the answer and releases the lock.
func (s *Store) CommitOrder(ctx context.Context, l waitroom.Lease, answer waitroom.StoredAnswer) error {
	raw, err := json.Marshal(answer)
	if err != nil {
		return err
	}
	k := roomKeys(l.Room)
	keys := []string{k.token(l.User), k.lock(l.User), k.idempotency(l.User, l.IdempotencyKey), k.tokens()}
	err = orderCommitScript.Run(ctx, s.rdb, keys, l.Token, l.LockValue, l.User, flag(l.IdempotencyKey != ""), raw, int64(IdempotencyTTL.Seconds())).Err()
	if err != nil {
		return waitroom.Unavailable(err)
	}
	return nil
}

// ReleaseOrder releases the user's lock if this lease still owns it.
func (s *Store) ReleaseOrder(ctx context.Context, l waitroom.Lease) error {
	if l.LockValue == "" {
		return nil
	}
	if err := unlockScript.Run(ctx, s.rdb, []string{roomKeys(l.Room).lock(l.User)}, l.LockValue).Err(); err != nil {
		return waitroom.Unavailable(err)
	}
	return nil
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func isNoScript(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT")
}
