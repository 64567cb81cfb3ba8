// Package redisstore keeps the waiting room in Redis (or Valkey): one Lua
// script per operation, all keys of a room under one {room} hash tag so that
// every script runs on a cluster.
package redisstore

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	//go:embed room.lua
	roomLua string
	//go:embed line.lua
	lineLua string
	//go:embed restore.lua
	restoreLua string
	//go:embed status.lua
	statusLua string
	//go:embed settings_set.lua
	settingsSetLua string
	//go:embed ratelimit.lua
	rateLimitLua string
	//go:embed visit.lua
	visitLua string
	//go:embed accept.lua
	acceptLua string
	//go:embed downstream.lua
	downstreamLua string
	//go:embed settings.lua
	settingsLua string
	//go:embed pack.lua
	packLua string
	//go:embed adaptive.lua
	adaptiveLua string
	//go:embed admission.lua
	admissionLua string
	//go:embed adapt.lua
	adaptLua string

	// sources are the scripts as the store loads them, by file name: the
	// room scripts begin with settings.lua and room.lua, the settings every
	// one of them reads. Those that take the limiter are a store's own
	// (limitedSources); here they have the head of a store without limits
	// or stall horizon, whose rooms are OPEN_ROOMS's at the rate 1/s.
	sources = withLimited(map[string]string{
		"admit.lua":        roomsArgHead + settingsLua + "\n" + roomLua + "\n" + admissionLua + "\n" + lineLua + "\n" + admitLua,
		"status.lua":       roomsArgHead + settingsLua + "\n" + roomLua + "\n" + admissionLua + "\n" + lineLua + "\n" + statusLua,
		"front.lua":        lineLua + "\n" + frontLua,
		"settings_set.lua": settingsLua + "\n" + packLua + "\n" + adaptiveLua + "\n" + settingsSetLua,
		"order_commit.lua": downstreamLua + "\n" + orderCommitLua,
		"unlock.lua":       downstreamLua + "\n" + unlockLua,
		"adapt.lua":        adaptiveLua + "\n" + adaptLua,
	}, limitedSources(configHead(waitroom.Limits{}, 0, 0, 0)+roomsHead(waitroom.Config{AdmitRatePerSec: 1, OpenRooms: true})))

	admitScript       = newScript(sources["admit.lua"])
	statusScript      = newScript(sources["status.lua"])
	settingsSetScript = newScript(sources["settings_set.lua"])
	orderCommitScript = newScript(sources["order_commit.lua"])
	unlockScript      = newScript(sources["unlock.lua"])
	adaptScript       = newScript(sources["adapt.lua"])
)

// limitedSources are the scripts that take the abuse limiter, each
// beginning with head (configHead and roomsHead: the store's limits, stall
// horizon and rooms without stored settings).
func limitedSources(head string) map[string]string {
	// Each script carries only the functions it calls: every function
	// defined is a closure made at every call.
	rooms := head + settingsLua + "\n" + roomLua + "\n" + rateLimitLua + "\n" + visitLua + "\n"
	enter := rooms + admissionLua + "\n" + challengeLua + "\n" + lineLua + "\n" + restoreLua + "\n" + enterLua
	return map[string]string{
		"enter.lua":       enter,
		"position.lua":    rooms + lineLua + "\n" + restoreLua + "\n" + positionLua,
		"accept.lua":      rooms + challengeLua + "\n" + acceptLua,
		"order_begin.lua": head + rateLimitLua + "\n" + orderBeginLua,
		"apply.lua":       head + applyHead + strings.TrimPrefix(enter, head) + "\n" + applyTail,
	}
}

func withLimited(m, limited map[string]string) map[string]string {
	maps.Copy(m, limited)
	return m
}

// limitedScripts are a store's scripts that take the limiter, compiled
// with its configuration (configHead).
// (apply wraps enter.lua itself, so that an applied entry joins the line
// exactly as a direct enter does.)
type limitedScripts struct{ enter, position, accept, orderBegin, apply *luaScript }

func newLimitedScripts(cfg waitroom.Config) limitedScripts {
	src := limitedSources(configHead(cfg.Trust.Limits, cfg.FarHorizon(), waitroom.StallIntervals*cfg.AdmitInterval, cfg.AdmitInterval) + roomsHead(cfg))
	return limitedScripts{enter: newScript(src["enter.lua"]), position: newScript(src["position.lua"]),
		accept: newScript(src["accept.lua"]), orderBegin: newScript(src["order_begin.lua"]), apply: newScript(src["apply.lua"])}
}

// Scripts names every script the store loads, for the checks that read
// them all (luacheck); Source gives each one's text.
func Scripts() []string {
	return slices.Sorted(maps.Keys(sources))
}

// Source is the text of one of the store's scripts, by file name
// ("enter.lua"), exactly as the store loads it: for benchmarks that call
// the scripts directly (EVALSHA). ok is false for an unknown name.
func Source(name string) (text string, ok bool) {
	text, ok = sources[name]
	return text, ok
}

// Client is the part of go-redis the store uses; *redis.Client and
// *redis.ClusterClient both satisfy it.
type Client interface {
	redis.Scripter
	Process(ctx context.Context, cmd redis.Cmder) error
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
	SMembers(ctx context.Context, key string) *redis.StringSliceCmd
	SRem(ctx context.Context, key string, members ...any) *redis.IntCmd
	SAdd(ctx context.Context, key string, members ...any) *redis.IntCmd
	Exists(ctx context.Context, keys ...string) *redis.IntCmd
	Get(ctx context.Context, key string) *redis.StringCmd
	HMGet(ctx context.Context, key string, fields ...string) *redis.SliceCmd
}

// roomsKey lists the rooms that may have people waiting. It is the one key
// outside any room's hash slot; admission reads it once per batch.
const roomsKey = "wr:rooms"

// createdKey lists the rooms operators created (admin API); like roomsKey
// it is outside any room's slot.
const createdKey = "wr:created"

// IdempotencyTTL is how long a successful order's answer is kept for replays.
const IdempotencyTTL = 24 * time.Hour

// lockMargin keeps an order lock alive a little past the downstream timeout,
// so that it outlives the request it guards but not a crashed gate for long.
const lockMargin = 5 * time.Second

// idleExpiry is how long an idle room's keys outlive its last waiter or
// token (at least; admit.lua lengthens it for slow rates).
const idleExpiry = time.Minute

// downstreamExpiry is how long a room's downstream counters and its
// controller's state outlive the room's last order: an API unheard of for
// two minutes is learnt afresh.
const downstreamExpiry = 2 * time.Minute

// Store implements waitroom.Store and waitroom.Rooms.
type Store struct {
	rdb       Client
	rooms     string // ARGV[1] of admit.lua and status.lua (roomsArg)
	openRooms bool
	interval  time.Duration
	idle      time.Duration
	lockTTL   time.Duration
	random    io.Reader
	now       func() time.Time // the limiter's clock (ratelimit.lua)
	// tokensPerRoom is the default batch rounded up (2.5 users a batch must
	// be able to admit 3 now and then): the token parts a room's admit call
	// gets until its script has said how many its own rate needs (wanted).
	tokensPerRoom int
	wanted        sync.Map // room -> int
	limits        waitroom.Limits
	scripts       limitedScripts
	durable       bool // DURABLE_WRITES=wait: the gate's writes wait for a replica (durable.go)
}

var (
	_ waitroom.Store = (*Store)(nil)
	_ waitroom.Rooms = (*Store)(nil)
)

// New returns a store for the rules in cfg.
func New(rdb Client, cfg waitroom.Config) *Store {
	return &Store{
		rdb:           rdb,
		rooms:         roomsArg(cfg),
		openRooms:     cfg.OpenRooms,
		interval:      cfg.AdmitInterval,
		idle:          idleExpiry,
		lockTTL:       cfg.OrderTimeout + lockMargin,
		random:        rand.Reader,
		now:           time.Now,
		tokensPerRoom: int(math.Ceil(cfg.BatchSize())),
		limits:        cfg.Trust.Limits,
		scripts:       newLimitedScripts(cfg),
		durable:       cfg.DurableWrites == waitroom.DurableWait,
	}
}

// roomArgs are the store's rooms (roomsArg) followed by admit.lua's or
// status.lua's own arguments.
func (s *Store) roomArgs(own ...any) []any {
	return append(append(make([]any, 0, 1+len(own)), s.rooms), own...)
}

// roomKeys names the keys of one room; the {room} hash tag keeps them in one slot.
type roomKeys string

func (r roomKeys) key(name string) string { return "wr:{" + string(r) + "}:" + name }
func (r roomKeys) settings() string       { return r.key("settings") }
func (r roomKeys) admits() string         { return r.key("admits") }
func (r roomKeys) line() string           { return r.key("line") }   // the sorted part (line.lua)
func (r roomKeys) queue() string          { return r.key("queue") }  // the queue (line.lua)
func (r roomKeys) places() string         { return r.key("places") } // user -> sequence (line.lua)
func (r roomKeys) seq() string            { return r.key("seq") }
func (r roomKeys) marks() string          { return r.key("marks") }
func (r roomKeys) budget() string         { return r.key("budget") }
func (r roomKeys) tokens() string         { return r.key("tokens") }
func (r roomKeys) tokenPrefix() string    { return r.key("u:") }
func (r roomKeys) downstream() string     { return r.key("downstream") } // the gate's counters (downstream.lua)
func (r roomKeys) control() string        { return r.key("control") }    // the controller's state (adapt.lua)
func (r roomKeys) token(user string) string {
	return r.tokenPrefix() + user
}
func (r roomKeys) lock(user string) string { return r.key("lock:" + user) }

// failed marks a token holder whose failed order call is counted (unlock.lua).
func (r roomKeys) failed(user string) string { return r.key("failed:" + user) }

// checkUser refuses the empty id: no user's id is empty (the handlers
// never make one), and the line keeps its front under the field ” of the
// places (line.lua), which an empty id would overwrite.
func checkUser(user string) error {
	if user == "" {
		return waitroom.Errorf(waitroom.EInvalidUser, "a user's id is never empty")
	}
	return nil
}

// positionKeys are position.lua's keys, Position's and Seat's.
func (r roomKeys) positionKeys(user string) []string {
	return []string{r.settings(), r.line(), r.token(user), r.budget(), r.tokens(), r.places(), r.seq()}
}

// idempotency names the answer of user's key; the user's length comes first
// because both parts may contain any printable character, ':' included.
func (r roomKeys) idempotency(user, key string) string {
	return r.key("idem:" + strconv.Itoa(len(user)) + ":" + user + ":" + key)
}

// Enter joins the line in one round trip: the script and, with OPEN_ROOMS,
// the room's registration for admission travel in one pipeline
// (re-registering on every enter heals a registration lost to an error;
// operator-created rooms stay registered, so closed rooms need none, and
// an unknown room then writes nothing at all). The first user of an empty
// line registers the room once more after the script has answered: on a
// cluster the pipeline's two commands go to two nodes in no set order, and
// forgetRoom, which re-checks the line after unregistering a room, must never
// miss a user this enter put in line.
func (s *Store) Enter(ctx context.Context, room string, c waitroom.Caller) (waitroom.Standing, error) {
	if err := checkUser(c.User); err != nil {
		return waitroom.Standing{}, err
	}
	reply, err := s.runEnter(ctx, s.scripts.enter, room, c, nil)
	if err != nil {
		return waitroom.Standing{}, waitroom.Unavailable(err)
	}
	return s.entered(ctx, room, reply)
}

// runEnter runs enter.lua, or a script that wraps it (Apply), with enter's
// keys and arguments for c followed by extraKeys and extraArgs. Its errors
// are the store's, for the caller to report unavailable.
func (s *Store) runEnter(ctx context.Context, script *luaScript, room string, c waitroom.Caller, extraKeys []string, extraArgs ...any) ([]any, error) {
	user := c.User
	draw, err := s.draw()
	if err != nil {
		return nil, err
	}
	k := roomKeys(room)
	keys := []string{k.settings(), k.line(), k.seq(), k.token(user), k.marks(), k.budget(), k.tokens()}
	// The token an instant admission issues (enter.lua's admitNow): drawn
	// for every enter, used by the few that find nobody waiting.
	token, err := s.randomToken()
	if err != nil {
		return nil, err
	}
	ms, challenge := challengeOf(c, k)
	keys = append(append(keys, k.admits(), k.queue(), k.places()), challenge...)
	args := append(s.limited(c, []any{user, draw}, visitorBuckets), ms, room+"."+token, c.Place)
	keys, args = append(keys, extraKeys...), append(args, extraArgs...)
	var res *redis.Cmd
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		res = script.evalSha(ctx, p, keys, args...)
		if s.openRooms {
			p.SAdd(ctx, roomsKey, room)
		}
		return nil
	})
	if isNoScript(err) { // the node lost its script cache
		res = script.run(ctx, s.rdb, keys, args...)
		err = res.Err()
	}
	if err != nil {
		return nil, err
	}
	reply, err := res.Slice()
	if err != nil {
		return nil, err
	}
	return reply, nil
}

// entered decodes enter.lua's answer and registers the room after the
// first user of an empty line (see Enter).
func (s *Store) entered(ctx context.Context, room string, reply []any) (waitroom.Standing, error) {
	if reply[0] == "LIMITED" {
		return waitroom.Standing{}, limitedError(reply)
	}
	if reply[0] == "FULL" {
		return waitroom.Standing{}, queueFull(room)
	}
	if reply[0] == "SPENT" {
		return waitroom.Standing{}, spentError()
	}
	st, err := standing(room, reply)
	if err != nil {
		return st, err
	}
	st.Joined = reply[2] == int64(1)
	st.AdmittedNow = st.Status == waitroom.Ready && (reply[2] == int64(2) || reply[2] == int64(3))
	// The first user of an empty line, or the room's only live token: the
	// room may have been unregistered (see Enter), and admission must visit
	// it to prune the token and expire the room's keys.
	if st.Joined && reply[1] == int64(1) || st.Status == waitroom.Ready && reply[2] == int64(3) {
		if err := s.rdb.SAdd(ctx, roomsKey, room).Err(); err != nil {
			return waitroom.Standing{}, waitroom.Unavailable(err)
		}
	}
	return st, nil
}

func queueFull(room string) error {
	return &waitroom.Error{Code: waitroom.EQueueFull,
		Message: fmt.Sprintf("the line of room %q is full, please retry later", room), RetryAfter: 10 * time.Second}
}

// Position reads where the user stands: one script, one round trip. With
// OPEN_ROOMS the room's registration travels in the same pipeline, as in
// Enter: a registration lost after an enter (a failed SADD, a retried
// script) is healed by the waiting user's next poll, so admission never
// forgets a room someone waits in. Operator-created rooms are never
// forgotten, so closed stores need none.
func (s *Store) Position(ctx context.Context, room string, c waitroom.Caller) (waitroom.Standing, error) {
	if err := checkUser(c.User); err != nil {
		return waitroom.Standing{}, err
	}
	k := roomKeys(room)
	keys := k.positionKeys(c.User)
	args := append(s.limited(c, []any{c.User}, callerBuckets), c.Place)
	reply, err := s.runPosition(ctx, room, keys, args)
	if err != nil {
		return waitroom.Standing{}, waitroom.Unavailable(err)
	}
	return standing(room, reply)
}

// runPosition runs position.lua, in one pipeline with the room's
// registration when rooms are open (see Position).
func (s *Store) runPosition(ctx context.Context, room string, keys []string, args []any) ([]any, error) {
	if !s.openRooms {
		return s.scripts.position.run(ctx, s.rdb, keys, args...).Slice()
	}
	var res *redis.Cmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		res = s.scripts.position.evalSha(ctx, p, keys, args...)
		p.SAdd(ctx, roomsKey, room)
		return nil
	})
	if isNoScript(err) {
		res = s.scripts.position.run(ctx, s.rdb, keys, args...)
		err = res.Err()
	}
	if err != nil {
		return nil, err
	}
	return res.Slice()
}

// draw is a pre-queue place: uniform in (0, 1), never either end, from
// the store's random source so that no visitor can choose it.
func (s *Store) draw() (float64, error) {
	var b [4]byte
	if _, err := io.ReadFull(s.random, b[:]); err != nil {
		return 0, err
	}
	return (float64(binary.BigEndian.Uint32(b[:])) + 0.5) / (1 << 32), nil
}

// answerLen is the length of room.lua's answer: kind, two values, then the
// room as the script saw it (its hot field: the rate, the flags, the
// opening and the message; hot.go), 2 when stalled, else 0, the room's
// page (” but in enter's answers) and a waiting place's number.
const answerLen = 7

// standing decodes the answers of enter.lua and position.lua.
func standing(room string, reply []any) (waitroom.Standing, error) {
	if reply[0] == "NOROOM" {
		return waitroom.Standing{}, waitroom.Errorf(waitroom.ERoomNotFound, "there is no room %q", room)
	}
	if reply[0] == "LIMITED" {
		return waitroom.Standing{}, limitedError(reply)
	}
	if len(reply) != answerLen {
		return waitroom.Standing{}, waitroom.Unavailable(malformed("script", reply))
	}
	hot, _ := reply[3].(string)
	r, err := decodeHot(hot)
	if err != nil {
		return waitroom.Standing{}, waitroom.Unavailable(err)
	}
	stalled, _ := reply[4].(int64)
	st := waitroom.Standing{RatePerSec: r.rate, Paused: r.has(hotPaused), Stalled: stalled&hotStalled != 0,
		Adaptive: r.has(hotAdaptive), Message: r.message}
	if r.opensAtMs > 0 {
		st.OpensAt = time.UnixMilli(r.opensAtMs).UTC()
	}
	page, _ := reply[5].(string)
	if st.Page, err = decodePage(page); err != nil {
		return waitroom.Standing{}, waitroom.Unavailable(err)
	}
	switch reply[0] {
	case "READY":
		rec, _ := reply[1].(string)
		token, expiresAt, issuedAt, err := parseRecord(rec)
		if err != nil {
			return waitroom.Standing{}, waitroom.Unavailable(err)
		}
		st.Status, st.Token, st.ExpiresAt, st.IssuedAt = waitroom.Ready, token, expiresAt, issuedAt
	case "WAITING":
		st.Status = waitroom.Waiting
		st.Position, _ = reply[1].(int64)
		st.Number, _ = reply[6].(int64)
	case "PREQUEUE":
		st.Status = waitroom.PreQueue
	case "NOT_IN_QUEUE":
		st.Status = waitroom.NotInQueue
	case "CLOSED":
		st.Status = waitroom.Closed
	default:
		return waitroom.Standing{}, waitroom.Unavailable(malformed("script", reply))
	}
	return st, nil
}

// A token record is "<expiresAtUnixMs>:<issuedAtUnixMs>:<token>" (admit.lua's
// admitTokens, enter.lua's admitNow).
func parseRecord(rec string) (token string, expiresAt, issuedAt time.Time, err error) {
	parts := strings.Split(rec, ":")
	if len(parts) != 3 || parts[2] == "" {
		return "", time.Time{}, time.Time{}, fmt.Errorf("malformed token record (%d bytes)", len(rec)) // never the token itself
	}
	exp, eerr := strconv.ParseInt(parts[0], 10, 64)
	iat, ierr := strconv.ParseInt(parts[1], 10, 64)
	if eerr != nil || ierr != nil {
		return "", time.Time{}, time.Time{}, fmt.Errorf("malformed token record (%d bytes)", len(rec))
	}
	return parts[2], time.UnixMilli(exp).UTC(), time.UnixMilli(iat).UTC(), nil
}

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
	args := s.roomArgs(strconv.FormatFloat(s.interval.Seconds(), 'f', -1, 64), k.tokenPrefix(), room, s.idle.Milliseconds(),
		waitroom.AdaptWindow.Milliseconds(), downstreamExpiry.Milliseconds())
	for i := 0; i < n; i++ {
		t, err := s.randomToken()
		if err != nil {
			return admitCall{}, waitroom.Unavailable(err)
		}
		args = append(args, t)
	}
	keys := []string{k.settings(), k.line(), k.budget(), k.marks(), k.tokens(), k.seq(), k.admits(), k.downstream(), k.control(), k.queue(), k.places()}
	return admitCall{room: room, keys: keys, args: args}, nil
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
		user, _ := reply[i].(string)
		token, _ := reply[i+1].(string)
		waited, _ := reply[i+2].(int64)
		rb.Admitted = append(rb.Admitted, waitroom.Admission{User: user, Token: token, ExpiresAt: expiresAt, Waited: time.Duration(waited) * time.Second})
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
	k := roomKeys(room)
	if n, err := s.rdb.Exists(ctx, k.line(), k.queue(), k.tokens()).Result(); err != nil || n > 0 {
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

// BeginOrder checks c.User's token and takes its lock in one script.
func (s *Store) BeginOrder(ctx context.Context, c waitroom.Caller, o waitroom.OrderAttempt) (waitroom.Lease, error) {
	lockValue, err := s.randomToken()
	if err != nil {
		return waitroom.Lease{}, waitroom.Unavailable(err)
	}
	k := roomKeys(o.Room)
	// The limiter's buckets are fields of the room's hash (ratelimit.lua).
	keys := []string{k.token(c.User), k.lock(c.User), k.idempotency(c.User, o.IdempotencyKey), k.settings()}
	args := s.limited(c, []any{o.Token, lockValue, s.lockTTL.Milliseconds(), flag(o.IdempotencyKey != "")}, callerBuckets)
	args = append(args, flag(o.CreatedRoomsOnly))
	raw, replicated, err := s.runGateWrite(ctx, s.scripts.orderBegin, keys, args...)
	reply, _ := raw.([]any)
	if len(reply) > 0 && reply[0] == "OK" && (err != nil || (s.durable && !replicated)) {
		// A lock a failover could take back guards nothing: give it up now.
		s.dropLock(ctx, o.Room, c.User, lockValue)
		return waitroom.Lease{}, s.unavailableUnlessReplicated(replicated, err)
	}
	if err == nil && len(reply) == 0 {
		err = malformed("order_begin", reply)
	}
	if err != nil {
		return waitroom.Lease{}, waitroom.Unavailable(err)
	}
	if reply[0] == "LIMITED" {
		return waitroom.Lease{}, limitedError(reply)
	}
	lease := waitroom.Lease{OrderAttempt: o, User: c.User}
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
	keys := []string{k.token(l.User), k.lock(l.User), k.idempotency(l.User, l.IdempotencyKey), k.tokens(), k.downstream()}
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
	if err := unlockScript.run(ctx, s.rdb, []string{k.lock(l.User), k.downstream(), k.failed(l.User)}, l.LockValue, l.Downstream.Field(), downstreamExpiry.Milliseconds()).Err(); err != nil {
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

// malformed describes an unexpected reply by its shape alone: replies
// carry entry tokens, and this error ends up in the logs.
func malformed(script string, reply []any) error {
	kind := "?"
	if len(reply) > 0 {
		if s, ok := reply[0].(string); ok && len(s) <= 16 {
			kind = s
		}
	}
	return fmt.Errorf("unexpected %s reply: %d values, first %q", script, len(reply), kind)
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
