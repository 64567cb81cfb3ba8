package redisstore

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"maps"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
)

// luaScript is one of the store's Lua scripts. Its calls are sent once.
//
// go-redis sends a command again when its reply does not come (a read
// timeout, a connection dropped after the write; in a cluster once more on
// the node and again on another). A script's call may have run by then, and
// most of the store's scripts are not idempotent: a poll takes its caller's
// limiter tokens, an admission a batch, an order its lock and its limiter's
// token. Sent again, a late poll took two tokens, a late admission a second
// batch (within the room's budget, but not the batch the admitter saw). So a
// call whose reply is late fails (the caller answers 503 with Retry-After,
// the admitter tries at its next tick), as any other call the store cannot
// answer, and it ran at most once. go-redis still sends it again when it
// knows the first never left (a connection it closed before writing), and
// plain commands (GET, SADD) keep their retry: they are idempotent.
type luaScript struct{ src, sha string }

func newScript(src string) *luaScript {
	if strings.Contains(src, markerPrefix) {
		// A part with a marker (room.lua, ratelimit.lua) built without
		// withConsts: the script would fail where it reads the constants
		// (a room without stored settings, a limited call). Every test fails
		// at once instead.
		panic("a script's constants marker left in its text: build it with withConsts")
	}
	sum := sha1.Sum([]byte(src))
	return &luaScript{src: src, sha: hex.EncodeToString(sum[:])}
}

// processor is a client or a pipeline.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// once is a command go-redis does not send a second time (NoRetry).
type once struct{ *redis.Cmd }

func (once) NoRetry() bool { return true }

// evalSha runs the script by its hash on c, or queues it when c is a
// pipeline.
func (s *luaScript) evalSha(ctx context.Context, c processor, keys []string, args ...any) *redis.Cmd {
	return s.call(ctx, c, "evalsha", s.sha, keys, args)
}

// eval runs the script by its text (a node that lost its script cache).
func (s *luaScript) eval(ctx context.Context, c processor, keys []string, args ...any) *redis.Cmd {
	return s.call(ctx, c, "eval", s.src, keys, args)
}

// run runs the script by its hash, and by its text when the node has not
// cached it: a NOSCRIPT reply ran nothing.
func (s *luaScript) run(ctx context.Context, c processor, keys []string, args ...any) *redis.Cmd {
	cmd := s.evalSha(ctx, c, keys, args...)
	if isNoScript(cmd.Err()) {
		cmd = s.eval(ctx, c, keys, args...)
	}
	return cmd
}

// load caches the script on c's nodes (every master of a cluster).
func (s *luaScript) load(ctx context.Context, c redis.Scripter) error {
	return c.ScriptLoad(ctx, s.src).Err()
}

func (s *luaScript) call(ctx context.Context, c processor, name, body string, keys []string, args []any) *redis.Cmd {
	cmdArgs := make([]any, 0, 3+len(keys)+len(args))
	cmdArgs = append(cmdArgs, name, body, len(keys))
	for _, k := range keys {
		cmdArgs = append(cmdArgs, k)
	}
	cmd := redis.NewCmd(ctx, append(cmdArgs, args...)...)
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3) // a cluster routes the call by its first key
	}
	_ = c.Process(ctx, once{cmd})
	return cmd
}

// luaFiles are the scripts' sources: each script's own file and the shared
// parts prepended to it.
//
//go:embed *.lua
var luaFiles embed.FS

// source is a script's text: head (written by Go: a store's configuration),
// then the files, the shared parts first and the script's own last.
func source(head string, files ...string) string {
	var b strings.Builder
	b.WriteString(head)
	for _, f := range files {
		text, err := luaFiles.ReadFile(f)
		if err != nil {
			panic(err) // a file name below is wrong: every test fails at once
		}
		b.Write(text)
		b.WriteString("\n")
	}
	return b.String()
}

// The shared parts a room script begins with: the room's settings and what
// is read of them (room.lua); with the limiter, a visit (visit.lua).
var (
	roomParts  = []string{"settings.lua", "room.lua"}
	visitParts = []string{"settings.lua", "room.lua", "ratelimit.lua", "visit.lua"}
)

// The scripts, one declaration each: its head, its shared parts and its
// own file. Each carries only the parts it calls: every function defined is
// a closure made at every call.
var (
	admitScript       = newScript(withConsts(source("", slices.Concat(roomParts, []string{"admission.lua", "marks.lua", "line.lua", "admit.lua"})...), "", roomsArgHead))
	statusScript      = newScript(withConsts(source("", slices.Concat(roomParts, []string{"admission.lua", "marks.lua", "line.lua", "status.lua"})...), "", roomsArgHead))
	frontScript       = newScript(source("", "line.lua", "front.lua"))
	settingsSetScript = newScript(source("", "settings.lua", "pack.lua", "adaptive.lua", "settings_set.lua"))
	orderCommitScript = newScript(source("", "downstream.lua", "order_commit.lua"))
	unlockScript      = newScript(source("", "downstream.lua", "unlock.lua"))
	adaptScript       = newScript(source("", "adaptive.lua", "adapt.lua"))
)

// limitedScripts are the scripts that take the abuse limiter, declared
// once and compiled per store, with its configuration in their text
// (scriptConsts). apply.lua wraps enter.lua itself, so that an applied
// entry joins the line exactly as a direct enter does.
type limitedScripts struct{ enter, position, accept, orderBegin, apply *luaScript }

// scriptConsts are a store's configuration as its limited scripts' text:
// the head (configHead: the constants their main bodies read), and the
// lines written into the functions that read the others, as those
// functions' own locals (limitsLine into rateLimit, roomsHead into roomOf;
// withConsts): a local of the script that a function reads is an upvalue,
// made at every call of the script.
type scriptConsts struct{ head, limits, rooms string }

func newLimitedScripts(c scriptConsts) limitedScripts {
	src := func(files ...string) *luaScript {
		return newScript(withConsts(source(c.head, files...), c.limits, c.rooms))
	}
	enter := slices.Concat(visitParts, []string{"admission.lua", "challenge.lua", "line.lua", "place.lua", "claim.lua", "instant.lua", "enter.lua"})
	return limitedScripts{
		enter:      src(enter...),
		position:   src(slices.Concat(visitParts, []string{"line.lua", "place.lua", "claim.lua", "position.lua"})...),
		accept:     src(slices.Concat(visitParts, []string{"challenge.lua", "accept.lua"})...),
		orderBegin: src("ratelimit.lua", "order_begin.lua"),
		apply:      src(slices.Concat([]string{"apply_head.lua"}, enter, []string{"apply_tail.lua"})...),
	}
}

// limitedHead is a store's configuration as its limited scripts' text.
func limitedHead(cfg waitroom.Config) scriptConsts {
	return scriptConsts{head: configHead(cfg.FarHorizon(), waitroom.StallIntervals*cfg.AdmitInterval, cfg.AdmitInterval),
		limits: limitsLine(cfg.Trust.Limits), rooms: roomsHead(cfg)}
}

// The marker lines of ratelimit.lua's rateLimit and room.lua's roomOf
// that withConsts replaces.
const (
	markerPrefix = "--@"
	limitsMarker = markerPrefix + "limits"
	roomsMarker  = markerPrefix + "rooms"
)

// withConsts is a script's text with its markers replaced by the lines
// given: limits (rateLimit's) and rooms (roomOf's). A marker left, or
// replaced by nothing, is a script that would fail at its first call: it
// fails every test at once instead.
func withConsts(text, limits, rooms string) string {
	if strings.Contains(text, limitsMarker) && limits == "" || strings.Contains(text, roomsMarker) && rooms == "" {
		panic("a script's marker has no line to replace it")
	}
	return strings.NewReplacer(limitsMarker, limits, roomsMarker, rooms).Replace(text)
}

// sources are every script by its own file's name, the limited ones with
// the head of a store without limits or stall horizon, whose rooms are
// OPEN_ROOMS's at the rate 1/s: for the checks that read them all.
var sources = func() map[string]*luaScript {
	l := newLimitedScripts(scriptConsts{head: configHead(0, 0, 0), limits: limitsLine(waitroom.Limits{}),
		rooms: roomsHead(waitroom.Config{AdmitRatePerSec: 1, OpenRooms: true})})
	return map[string]*luaScript{"admit.lua": admitScript, "status.lua": statusScript, "front.lua": frontScript,
		"settings_set.lua": settingsSetScript, "order_commit.lua": orderCommitScript, "unlock.lua": unlockScript,
		"adapt.lua": adaptScript, "enter.lua": l.enter, "position.lua": l.position, "accept.lua": l.accept,
		"order_begin.lua": l.orderBegin, "apply.lua": l.apply}
}()

// Scripts names every script the store loads, for the checks that read
// them all (luacheck); Source gives each one's text.
func Scripts() []string {
	return slices.Sorted(maps.Keys(sources))
}

// Source is the text of one of the store's scripts, by file name
// ("enter.lua"), exactly as the store loads it: for benchmarks that call
// the scripts directly (EVALSHA). ok is false for an unknown name.
func Source(name string) (text string, ok bool) {
	s, ok := sources[name]
	if !ok {
		return "", false
	}
	return s.src, true
}
