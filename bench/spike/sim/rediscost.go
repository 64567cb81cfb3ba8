package sim

import (
	"fmt"
	"math"

	"github.com/waitroom/waitroom"
)

// RedisCostResults is what bench/rediscost writes (make bench-redis-cost):
// Redis instructions per store call under callgrind, and Redis memory per
// waiting user and per limited caller on a plain redis-server.
type RedisCostResults struct {
	Machine  Machine         `json:"machine"`
	Valgrind string          `json:"valgrind"`
	Started  string          `json:"started"`
	Seconds  float64         `json:"seconds"` // the whole run
	Method   RedisCostMethod `json:"method"`
	Ops      []RedisCostOp   `json:"ops"`
	// Functions: where position's instructions go, limiter on and off.
	Functions []RedisCostFunc `json:"functions"`
	Memory    RedisCostMemory `json:"memory"`
	// HTTPPoll: store commands per waiting visitor's poll through the
	// position handler (nil: not measured).
	HTTPPoll *RedisCostHTTPPoll `json:"httpPoll,omitempty"`
}

// RedisCostHTTPPoll is INFO commandstats over waiting visitors' polls
// through the position handler: back to back (the headline), and Paced.
type RedisCostHTTPPoll struct {
	Visitors        int                 `json:"visitors"`
	Ahead           int                 `json:"ahead"` // users in line ahead of them
	Polls           int                 `json:"polls"`
	Seconds         float64             `json:"seconds"`  // the polls' time, back to back
	Commands        int64               `json:"commands"` // every command the polls ran, those inside scripts included
	CommandsPerPoll float64             `json:"commandsPerPoll"`
	ByCommand       map[string]int64    `json:"byCommand"`
	Paced           *RedisCostPollPhase `json:"paced,omitempty"` // the same polls again, each round spread over a while
	Method          string              `json:"method"`
}

// RedisCostPollPhase is one phase of polls.
type RedisCostPollPhase struct {
	Polls           int              `json:"polls"`
	Seconds         float64          `json:"seconds"`
	PollsPerSec     float64          `json:"pollsPerSec"`
	Commands        int64            `json:"commands"`
	CommandsPerPoll float64          `json:"commandsPerPoll"`
	ByCommand       map[string]int64 `json:"byCommand"`
}

// RedisCostMethod is how the instructions were counted.
type RedisCostMethod struct {
	Waiting      int             `json:"waiting"`      // users in the room's line while measuring
	Calls        int             `json:"calls"`        // measured calls per operation (admit: AdmitCalls)
	Warmup       int             `json:"warmup"`       // unmeasured calls of the same operation first
	Chunk        int             `json:"chunk"`        // measured calls per zero/dump window
	AdmitCalls   int             `json:"admitCalls"`   // measured admission batches
	AdmitSleepMs float64         `json:"admitSleepMs"` // pause before each batch: a full budget
	AdmitWarmupS float64         `json:"admitWarmupS"` // batches run at least this long before the counted ones
	AdmitWarmups int             `json:"admitWarmups"` // that many batches
	Limits       waitroom.Limits `json:"limits"`       // "on"; "off" is all zero
	Room         string          `json:"room"`         // the room and its settings, in words
	Config       string          `json:"config"`       // the store's configuration, in words
	Hz           int             `json:"hz"`           // redis-server's timer frequency (CONFIG GET hz)
	FillPerSec   int             `json:"fillPerSec"`   // users the fill entered in each second of its own
	FillSeconds  int             `json:"fillSeconds"`  // the seconds it entered users in: the line's per-second marks
	// IdlePerSec is what an idle second counts, serverCron left out: the
	// event loop waking for the timer, which stays in every figure.
	IdlePerSec float64 `json:"idlePerSec"`
	Text       string  `json:"text"` // the method in one paragraph (the tool's doc)
}

// RedisCostOp is one operation's count.
type RedisCostOp struct {
	Key          string `json:"key"`     // stable name: position, enterInLine, enterNew, gateCheck, gateCommit, admitBatch, zrank, get
	Name         string `json:"name"`    // in words
	Limiter      string `json:"limiter"` // "on", "off", or "" where the call is never limited
	Calls        int    `json:"calls"`
	Instructions int64  `json:"instructions"` // counted: the dumps' totals less the timer's
	Timer        int64  `json:"timer"`        // serverCron's instructions in the same dumps, left out
	Admitted     int    `json:"admitted,omitempty"`
	// NoLimiter: the call takes no caller (the gate's commit), so "on" and
	// "off" are the same call at two points of the run.
	NoLimiter bool `json:"noLimiter,omitempty"`
}

// PerCall is instructions per call.
func (o RedisCostOp) PerCall() float64 { return float64(o.Instructions) / float64(max(1, o.Calls)) }

// RedisCostFunc is one function's instructions per position call.
type RedisCostFunc struct {
	Name           string  `json:"name"`
	Object         string  `json:"object"`
	InclusiveOn    float64 `json:"inclusiveOn"` // per call, limiter on
	SelfOn         float64 `json:"selfOn"`
	CallsOn        float64 `json:"callsOn"` // calls per call
	InclusiveOff   float64 `json:"inclusiveOff"`
	CallsOff       float64 `json:"callsOff"`
	TopBySelfOrder int     `json:"topBySelf,omitempty"` // rank among the costliest by self cost (1 = first), 0: not among them
}

// RedisCostMemory is used_memory per waiting user and per limited caller.
type RedisCostMemory struct {
	Users              int     `json:"users"`
	UserIDBytes        int     `json:"userIdBytes"`
	Before             int64   `json:"before"`
	After              int64   `json:"after"`
	FillSeconds        float64 `json:"fillSeconds"`
	LineBytes          int64   `json:"lineBytes"` // MEMORY USAGE of the keys that hold the line (the accounts' buckets, redisstore.AccountPattern; the draws, redisstore.LineKey)
	Callers            int     `json:"callers"`   // distinct callers (own id and IP) with live buckets
	CallersBefore      int64   `json:"callersBefore"`
	CallersAfter       int64   `json:"callersAfter"`
	FillMethod         string  `json:"fillMethod"`
	CallerFillMethod   string  `json:"callerFillMethod"`
	KeysPerCaller      float64 `json:"keysPerCaller"` // DBSIZE delta per caller
	ExpiresPerCaller   float64 `json:"expiresPerCaller"`
	ActiveExpiryPaused bool    `json:"activeExpiryPaused"`
}

// PerUser is used_memory per waiting user.
func (m RedisCostMemory) PerUser() float64 {
	return float64(m.After-m.Before) / float64(max(1, m.Users))
}

// LinePerUser is the line's own bytes (MEMORY USAGE) per waiting user.
func (m RedisCostMemory) LinePerUser() float64 {
	return float64(m.LineBytes) / float64(max(1, m.Users))
}

// PerCaller is used_memory per caller whose two buckets (id and IP) are live.
func (m RedisCostMemory) PerCaller() float64 {
	return float64(m.CallersAfter-m.CallersBefore) / float64(max(1, m.Callers))
}

// Op is the named operation's count with the limiter "on", "off" or "".
func (r *RedisCostResults) Op(key, limiter string) (RedisCostOp, bool) {
	for _, o := range r.Ops {
		if o.Key == key && o.Limiter == limiter {
			return o, true
		}
	}
	return RedisCostOp{}, false
}

// RedisCostHeadline is the last line of make bench-redis-cost.
type RedisCostHeadline struct {
	PositionInstructions float64 `json:"positionInstructions"`
	EnterNewInstructions float64 `json:"enterNewInstructions"`
	LimiterShare         float64 `json:"limiterShare"`
	BytesPerWaitingUser  float64 `json:"bytesPerWaitingUser"`
	// PollStoreCommands: store commands per waiting poll through HTTP (nil: not measured).
	PollStoreCommands *float64 `json:"pollStoreCommands,omitempty"`
}

// Headline is position and enter (new user) per call with the limiter on,
// the limiter's share of position ((on − off) / on) and memory per
// waiting user; an error names a missing operation.
func (r *RedisCostResults) Headline() (RedisCostHeadline, error) {
	on, ok1 := r.Op("position", "on")
	off, ok2 := r.Op("position", "off")
	enter, ok3 := r.Op("enterNew", "on")
	if !ok1 || !ok2 || !ok3 {
		return RedisCostHeadline{}, fmt.Errorf("the results lack position (limiter on and off) or enter of a new user (limiter on)")
	}
	var poll *float64
	if r.HTTPPoll != nil {
		v := math.Round(r.HTTPPoll.CommandsPerPoll*1e3) / 1e3
		poll = &v
	}
	return RedisCostHeadline{
		PollStoreCommands:    poll,
		PositionInstructions: math.Round(on.PerCall()),
		EnterNewInstructions: math.Round(enter.PerCall()),
		LimiterShare:         math.Round((on.PerCall()-off.PerCall())/on.PerCall()*1e4) / 1e4,
		BytesPerWaitingUser:  math.Round(r.Memory.PerUser()*10) / 10,
	}, nil
}

// RedisCostRow is one operation with the limiter on and off; On alone
// holds an operation measured once (never limited).
type RedisCostRow struct {
	Key, Name string
	On, Off   *RedisCostOp
	Ratio     float64 // on ÷ off, when both were measured
}

// RedisCostRows are the operations in the order first measured.
func RedisCostRows(r *RedisCostResults) []RedisCostRow {
	var rows []RedisCostRow
	index := map[string]int{}
	for i := range r.Ops {
		o := &r.Ops[i]
		k, ok := index[o.Key]
		if !ok {
			k = len(rows)
			index[o.Key] = k
			rows = append(rows, RedisCostRow{Key: o.Key, Name: o.Name})
		}
		if o.Limiter == "off" {
			rows[k].Off = o
		} else {
			rows[k].On = o
		}
	}
	for i := range rows {
		if on, off := rows[i].On, rows[i].Off; on != nil && off != nil && off.PerCall() > 0 {
			rows[i].Ratio = on.PerCall() / off.PerCall()
		}
	}
	return rows
}

// redisCostSection is the report's "Redis instructions per call".
type redisCostSection struct {
	*RedisCostResults
	Rows          []RedisCostRow
	Head          RedisCostHeadline
	GetPerCall    float64 // plain GET, the unit of the "in GETs" column (0: not measured)
	TimerShare    float64 // serverCron's share of all the dumps' instructions, left out
	Admit         *RedisCostOp
	Limited       []RedisCostRow // rows measured with the limiter on and off
	LimiterOnly   float64        // position's instructions the limiter adds, per call
	Micro         *MicroResults  // the micro-benchmarks' memory figure, to compare
	MemDiff       float64        // bytes per user here − the micro-benchmarks'
	LineDiff      float64        // the line's own bytes per user, here − there
	CallerInUsers float64        // a live caller's buckets in waiting users' worth
}

func buildRedisCost(r *RedisCostResults, micro *MicroResults) *redisCostSection {
	s := &redisCostSection{RedisCostResults: r, Rows: RedisCostRows(r)}
	s.Head, _ = r.Headline()
	var timer, all int64
	for i, o := range r.Ops {
		timer, all = timer+o.Timer, all+o.Timer+o.Instructions
		if o.Key == "get" {
			s.GetPerCall = o.PerCall()
		}
		if o.Key == "admitBatch" {
			s.Admit = &r.Ops[i]
		}
	}
	if all > 0 {
		s.TimerShare = float64(timer) / float64(all)
	}
	for _, row := range s.Rows {
		if row.On != nil && row.Off != nil && !row.On.NoLimiter {
			s.Limited = append(s.Limited, row)
		}
	}
	if on, ok := r.Op("position", "on"); ok {
		off, _ := r.Op("position", "off")
		s.LimiterOnly = on.PerCall() - off.PerCall()
	}
	if micro != nil && micro.MemPerUser > 0 {
		s.Micro, s.MemDiff, s.LineDiff = micro, r.Memory.PerUser()-micro.MemPerUser, r.Memory.LinePerUser()-micro.MemLinePerUser
	}
	if u := r.Memory.PerUser(); u > 0 {
		s.CallerInUsers = r.Memory.PerCaller() / u
	}
	return s
}

// InGets is x in plain GETs (0 without a GET figure).
func (s *redisCostSection) InGets(x float64) float64 {
	if s.GetPerCall == 0 {
		return 0
	}
	return x / s.GetPerCall
}
