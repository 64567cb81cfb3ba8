package sim

import "fmt"

// BigRoomResults is what bench/bigroom writes (make bench-bigroom): one
// room holding millions of waiting visitors on one redis-server; memory
// per visitor, instructions per enter, admission batch and claim, the last
// visitor's wait, and two figures read from other measures.
type BigRoomResults struct {
	Machine  Machine `json:"machine"`
	Valgrind string  `json:"valgrind"`
	When     string  `json:"when"`
	Seconds  float64 `json:"seconds"`
	Room     string  `json:"room"`
	Visitors int     `json:"visitors"` // waiting at the measures

	Fill      BigRoomFill   `json:"fill"`
	Memory    BigRoomMemory `json:"memory"`
	Callgrind string        `json:"callgrind"` // the method, in words
	Ops       []BigRoomOp   `json:"ops"`
	Wait      BigRoomWait   `json:"wait"`

	// Figures of other measures, read from their results when present.
	PollStoreCommands       BigRoomFigure `json:"pollStoreCommands"`       // store commands per waiting poll through HTTP
	FunctionCallsPerVisitor BigRoomFigure `json:"functionCallsPerVisitor"` // function calls per visitor through the page
}

// BigRoomFill is how the line was made.
type BigRoomFill struct {
	Accounts         int     `json:"accounts"`
	Anonymous        int     `json:"anonymous"`
	AccountExample   string  `json:"accountExample"`
	AnonymousExample string  `json:"anonymousExample"`
	Seconds          float64 `json:"seconds"`
	Method           string  `json:"method"`
	// Append's claim (it writes what enter.lua writes), checked on the
	// same server: Same are the keys and fields both write alike,
	// EnterOnly those enter writes and Append does not, Differ those both
	// write differently (none expected).
	CheckUsers int      `json:"checkUsers"`
	Same       []string `json:"same"`
	EnterOnly  []string `json:"enterOnly"`
	AppendOnly []string `json:"appendOnly"`
	Differ     []string `json:"differ"`
	// ByPresence are the keys and fields holding times, compared by
	// presence alone (the two rooms were filled at different instants).
	ByPresence []string `json:"byPresence"`
}

// BigRoomMemory is used_memory around the fill, which writes the
// accounts' records first (AfterAccounts) and then moves the counter past
// the anonymous visitors' numbers (AfterFill).
type BigRoomMemory struct {
	Visitors      int    `json:"visitors"`      // the visitors the delta covers: all but the first, who entered before
	Accounts      int    `json:"accounts"`      // of which accounts
	Anonymous     int    `json:"anonymous"`     // and anonymous visitors
	Before        int64  `json:"before"`        // the room created, its first visitor in line
	AfterAccounts int64  `json:"afterAccounts"` // the accounts' records written
	AfterFill     int64  `json:"afterFill"`     // the anonymous visitors' numbers given out too: the whole line
	AfterReload   int64  `json:"afterReload"`   // after DEBUG RELOAD (the snapshot loaded back: every bucket at its steady size)
	Buckets       int    `json:"buckets"`       // the accounts' buckets (SCAN MATCH redisstore.AccountPattern), after the reload
	Listpacks     int    `json:"listpacks"`     // of which encoded as listpacks (OBJECT ENCODING)
	BucketBytes   int64  `json:"bucketBytes"`   // MEMORY USAGE of every bucket (SAMPLES 0), after the reload
	Layout        string `json:"layout"`        // what each kind keeps, in words
}

// PerVisitor is used_memory after the reload, less before, over all the visitors.
func (m BigRoomMemory) PerVisitor() float64 {
	return float64(m.AfterReload-m.Before) / float64(max(1, m.Visitors))
}

// PerAccount is the headline for accounts: used_memory after the reload,
// less before, over the accounts alone (what the anonymous visitors cost,
// PerAnonymous, charged to them too).
func (m BigRoomMemory) PerAccount() float64 {
	return float64(m.AfterReload-m.Before) / float64(max(1, m.Accounts))
}

// PerAccountAsFilled is the accounts' share right after their records were written.
func (m BigRoomMemory) PerAccountAsFilled() float64 {
	return float64(m.AfterAccounts-m.Before) / float64(max(1, m.Accounts))
}

// PerAnonymous is the headline for anonymous visitors: used_memory after
// the counter moved past their numbers, less before, over them.
func (m BigRoomMemory) PerAnonymous() float64 {
	return float64(m.AfterFill-m.AfterAccounts) / float64(max(1, m.Anonymous))
}

// BigRoomOp is one operation measured under callgrind.
type BigRoomOp struct {
	Key          string `json:"key"`
	Name         string `json:"name"`
	Limiter      string `json:"limiter"` // on, off, or "" (no caller)
	Calls        int    `json:"calls"`
	Instructions int64  `json:"instructions"` // Ir of the dumps (serverCron not collected)
	Admitted     int    `json:"admitted,omitempty"`
}

// PerCall is the instructions per call.
func (o BigRoomOp) PerCall() float64 { return float64(o.Instructions) / float64(o.Calls) }

// BigRoomWait is the last visitor's wait at a rate.
type BigRoomWait struct {
	RatePerSec      float64 `json:"ratePerSec"`
	LastPosition    int64   `json:"lastPosition"`    // the line's length
	ComputedSeconds float64 `json:"computedSeconds"` // LastPosition / RatePerSec
	// Admission at that rate on the plain server (WindowSeconds 0: not run).
	WindowSeconds      float64 `json:"windowSeconds"`
	WindowBatches      int     `json:"windowBatches"`
	WindowAdmitted     int64   `json:"windowAdmitted"`
	MeasuredRatePerSec float64 `json:"measuredRatePerSec"`
	MeasuredSeconds    float64 `json:"measuredSeconds"` // LastPosition / MeasuredRatePerSec
}

// BigRoomFigure is a figure another measure writes: its value when its
// file holds it, else Measured false and why.
type BigRoomFigure struct {
	Measured bool    `json:"measured"`
	Value    float64 `json:"value,omitempty"`
	Source   string  `json:"source"` // the file and field
	Note     string  `json:"note"`   // why not measured, or how it was
}

// BigRoomHeadline is bench/bigroom's last line of output.
type BigRoomHeadline struct {
	Visitors             int      `json:"visitors"`
	BytesPerVisitor      float64  `json:"bytesPerVisitor"`
	BytesPerAccount      float64  `json:"bytesPerAccount"`
	BytesPerAnonymous    float64  `json:"bytesPerAnonymous"`
	EnterAccount         float64  `json:"enterAccountInstructions"`
	EnterAnonymous       float64  `json:"enterAnonymousInstructions"`
	AdmitBatch           float64  `json:"admitBatchInstructions"`
	Claim                float64  `json:"claimInstructions"`        // an anonymous visitor's
	ClaimAccount         float64  `json:"claimAccountInstructions"` // an account's
	LastWaitSeconds      float64  `json:"lastWaitSeconds"`
	PollStoreCommands    *float64 `json:"pollStoreCommands"`
	FunctionCallsPerUser *float64 `json:"functionCallsPerVisitor"`
}

// Op is the operation of key with limiter (nil: not measured).
func (r *BigRoomResults) Op(key, limiter string) *BigRoomOp {
	for i := range r.Ops {
		if r.Ops[i].Key == key && r.Ops[i].Limiter == limiter {
			return &r.Ops[i]
		}
	}
	return nil
}

// Headline is the run's figures in one object: the limiter on where a caller calls.
func (r *BigRoomResults) Headline() BigRoomHeadline {
	per := func(key, limiter string) float64 {
		if o := r.Op(key, limiter); o != nil {
			return o.PerCall()
		}
		return 0
	}
	fig := func(f BigRoomFigure) *float64 {
		if !f.Measured {
			return nil
		}
		v := f.Value
		return &v
	}
	return BigRoomHeadline{Visitors: r.Visitors, BytesPerVisitor: r.Memory.PerVisitor(),
		BytesPerAccount: r.Memory.PerAccount(), BytesPerAnonymous: r.Memory.PerAnonymous(),
		EnterAccount: per("enterAccount", "on"), EnterAnonymous: per("enterAnonymous", "on"), AdmitBatch: per("admitBatch", ""),
		Claim: per("claim", "on"), ClaimAccount: per("claimAccount", "on"), LastWaitSeconds: r.Wait.ComputedSeconds,
		PollStoreCommands: fig(r.PollStoreCommands), FunctionCallsPerUser: fig(r.FunctionCallsPerVisitor)}
}

// bigRoomSection is the report's "One room, millions of visitors".
type bigRoomSection struct {
	*BigRoomResults
	Link                                                     string // the results file, relative to the report
	PerVisitor, PerAccount, PerAccountAsFilled, PerAnonymous float64
	BucketBytesPerAccount                                    float64
	AccountBytes, AnonymousBytes                             int  // the ids' lengths
	AppendAsEnter                                            bool // the check found no field that Append writes otherwise or alone
	Rows                                                     []bigRoomRow
	WaitComputed, WaitMeasured                               string // h:mm:ss
	Poll, Page                                               string // the figures read from other measures, or why not
}

type bigRoomRow struct {
	Name, Limiter string
	Calls         int
	PerCall       float64
}

func buildBigRoom(r *BigRoomResults, link string) *bigRoomSection {
	m := r.Memory
	s := &bigRoomSection{BigRoomResults: r, Link: link, PerVisitor: m.PerVisitor(), PerAccount: m.PerAccount(),
		PerAccountAsFilled: m.PerAccountAsFilled(), PerAnonymous: m.PerAnonymous(),
		BucketBytesPerAccount: float64(m.BucketBytes) / float64(max(1, r.Fill.Accounts)),
		AccountBytes:          len(r.Fill.AccountExample), AnonymousBytes: len(r.Fill.AnonymousExample),
		AppendAsEnter: len(r.Fill.Differ) == 0 && len(r.Fill.AppendOnly) == 0 && len(r.Fill.Same) > 0,
		WaitComputed:  clock(r.Wait.ComputedSeconds), WaitMeasured: clock(r.Wait.MeasuredSeconds),
		Poll: figureText(r.PollStoreCommands, "%.3f"), Page: figureText(r.FunctionCallsPerVisitor, "%.1f")}
	for _, o := range r.Ops {
		limiter := o.Limiter
		if limiter == "" {
			limiter = "–"
		}
		s.Rows = append(s.Rows, bigRoomRow{o.Name, limiter, o.Calls, o.PerCall()})
	}
	return s
}

// figureText is a figure read from another measure, or why it is not there.
func figureText(f BigRoomFigure, format string) string {
	if !f.Measured {
		return f.Note
	}
	if f.Note != "" {
		return fmt.Sprintf("**"+format+"** (`%s`): %s", f.Value, f.Source, f.Note)
	}
	return fmt.Sprintf("**"+format+"** (`%s`)", f.Value, f.Source)
}

// clock is seconds as h:mm:ss.
func clock(sec float64) string {
	t := int64(sec + 0.5)
	return fmt.Sprintf("%d:%02d:%02d", t/3600, t/60%60, t%60)
}
