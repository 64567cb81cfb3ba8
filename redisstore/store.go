// Package redisstore keeps the waiting room in Redis (or Valkey): one Lua
// script per operation, all keys of a room under one {room} hash tag so that
// every script runs on a cluster. A file per operation holds its Go side:
// enter.go, position.go, admit.go, order.go (and rooms.go, intake.go,
// watch.go); scripts.go declares every script once, with the shared parts
// it is made of. Each script names its keys and arguments at its top.
package redisstore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
)

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
		scripts:       newLimitedScripts(limitedHead(cfg)),
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
func (r roomKeys) line() string           { return r.key("line") } // the sorted part (line.lua)
func (r roomKeys) marks() string          { return r.key("marks") }
func (r roomKeys) budget() string         { return r.key("budget") }
func (r roomKeys) live() string           { return r.key("tokens") } // live tokens: user -> expiry ms
func (r roomKeys) recordPrefix() string   { return r.key("u:") }
func (r roomKeys) downstream() string     { return r.key("downstream") } // the gate's counters (downstream.lua)
func (r roomKeys) control() string        { return r.key("control") }    // the controller's state (adapt.lua)
// record is the user's entry-token record.
func (r roomKeys) record(user string) string {
	return r.recordPrefix() + user
}
func (r roomKeys) lock(user string) string { return r.key("lock:" + user) }

// batches and unclaimed are admission's batches of numbers and
// their numbers not yet claimed; mark is user's claim (claim.lua).
func (r roomKeys) batches() string         { return r.key("batches") }
func (r roomKeys) unclaimed() string       { return r.key("unclaimed") }
func (r roomKeys) mark(user string) string { return r.key("c:" + user) }

// account is the bucket of user's record (line.lua): the account's
// number, under accountField's field. The buckets are one hash each of
// accountBuckets, picked by a digest of the id, so that each holds a few
// dozen records in a listpack (about 20 bytes a record) up to tens of
// millions of accounts in a room, where a hash of every id would hold each
// id whole in a hash table (about 100 bytes).
func (r roomKeys) account(user string) string {
	d := sha256.Sum256([]byte(user))
	return r.key(fmt.Sprintf("a:%05x", binary.BigEndian.Uint32(d[:4])>>(32-accountBucketBits)))
}

// accountField is c's field in its account bucket: 8 bytes of its id's
// digest, in 11 characters of base64 (with the bucket's 18 bits, 82 bits
// tell accounts apart: two of a billion share a record with odds of one in
// 10^7), or "" for an anonymous visitor whose place is its ticket's alone
// (line.lua): one whose ticket carries its number, or a new one, whose
// enter's answer gives it. An anonymous visitor whose entry the broker
// applied holds a receipt, not its number, until an answer gives it one:
// until then its record is its place, as an account's is.
func accountField(c waitroom.Caller) string {
	if c.Anonymous && (c.Place > 0 || c.NewVisitor) {
		return ""
	}
	d := sha256.Sum256([]byte(c.User))
	return base64.RawURLEncoding.EncodeToString(d[4:12])
}

// accountBucketBits is log2 of the number of account buckets in a room:
// 262,144, a few dozen records each at 10 million accounts, within the
// 128 entries a hash keeps as a listpack (hash-max-listpack-entries).
const accountBucketBits = 18

// failed marks a token holder whose failed order call is counted (unlock.lua).
func (r roomKeys) failed(user string) string { return r.key("failed:" + user) }

// checkUser refuses the empty id: no user's id is empty (the handlers
// never make one), and a store call for nobody would share its keys (the
// token's record, the claim's mark) with every other such call.
func checkUser(user string) error {
	if user == "" {
		return waitroom.Errorf(waitroom.EInvalidUser, "a user's id is never empty")
	}
	return nil
}

// answer names the stored answer of user's idempotency key; the user's length comes first
// because both parts may contain any printable character, ':' included.
func (r roomKeys) answer(user, key string) string {
	return r.key("idem:" + strconv.Itoa(len(user)) + ":" + user + ":" + key)
}

// randomToken returns 128 random bits, URL-safe.
func (s *Store) randomToken() (string, error) {
	var b [16]byte
	if _, err := io.ReadFull(s.random, b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
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
