package sim

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"

	"github.com/waitroom/waitroom"
)

// headline is the default strategy against the targets: medians of its
// runs at the comparison's size, with the turn cap and with the what-if.
type headline struct {
	Now, Tier    []*Result
	Rows         []headRow
	P95, Inv     float64 // medians of the runs with the turn cap
	Dev, Learn   float64
	PPM, PPU     float64
	TierPPM      float64
	TierPPU      float64
	LongestWait  string
	Long         []*Result
	Polling      []pollingRow
	Scale        []*Result // the larger-scale runs with the turn cap
	Short        *Result   // the margin sweep's run at the base margin: the shortest waits
	CapCostsPoll bool      // the turn cap costs ≥ 0.3 polls per user
}

type headRow struct{ Name, Goal, Now, Tier string }

// headFigure is one row of the headline table.
type headFigure struct {
	name, goal string
	f          func(*Result) float64
	ok         func(float64) bool // nil: no target
	unit       string             // " ms": rounded to whole milliseconds
	optional   bool               // older results may lack it (all zero: n/a)
}

func buildHeadline(rep, long *Report, t targets) *headline {
	var now, tier []*Result
	for _, x := range rep.Runs {
		if (x.Group == "compare" || x.Group == "tier-only" || x.Group == "repeat") && x.Strategy.Name == BatchedJitter.Name {
			if x.Scenario.TierOnly {
				tier = append(tier, x)
			} else {
				now = append(now, x)
			}
		}
	}
	if len(now) == 0 {
		return nil
	}
	h := &headline{Now: now, Tier: tier, LongestWait: longestWait(now[0])}
	med := func(rs []*Result, f func(*Result) float64) float64 { return medianOf(rs, f) }
	h.P95 = med(now, func(r *Result) float64 { return r.OrderP95Ms })
	h.Inv = med(now, func(r *Result) float64 { return float64(r.FIFOInversions) })
	h.Dev = med(now, deviation)
	h.Learn = med(now, func(r *Result) float64 { return r.ReadyLearnP95Ms })
	h.PPM = med(now, func(r *Result) float64 { return r.PollsPerUserMinute })
	h.PPU = med(now, func(r *Result) float64 { return r.PollsPerUser })
	if len(tier) > 0 {
		h.TierPPM = med(tier, func(r *Result) float64 { return r.PollsPerUserMinute })
		h.TierPPU = med(tier, func(r *Result) float64 { return r.PollsPerUser })
		h.CapCostsPoll = h.PPU-h.TierPPU >= 0.3
	}
	for _, f := range headFigures(now[0], t) {
		row := headRow{Name: f.name, Goal: f.goal, Now: cellOf(now, f), Tier: cellOf(tier, f)}
		if f.ok != nil {
			if row.Now != "n/a" {
				row.Now += " (" + check(f.ok(med(now, f.f))) + ")"
			}
			if row.Tier != "n/a" {
				row.Tier += " (" + check(f.ok(med(tier, f.f))) + ")"
			}
		}
		if row.Goal == "" {
			row.Goal = "–"
		}
		h.Rows = append(h.Rows, row)
	}
	if long != nil {
		h.Long = long.Runs
	}
	for _, r := range group(rep.Runs, "scale") {
		if !r.Scenario.TierOnly {
			h.Scale = append(h.Scale, r)
		}
	}
	for _, r := range group(rep.Runs, "sweep") {
		if r.Strategy.Name == BatchedJitter.Name && !r.Scenario.TierOnly && r.Scenario.Margin == now[0].Scenario.Margin {
			h.Short = r
		}
	}
	h.Polling = pollingByLength(h)
	return h
}

func deviation(r *Result) float64 {
	if r.ConfiguredPerSec == 0 {
		return 0
	}
	return 100 * (r.AdmittedPerSec/r.ConfiguredPerSec - 1)
}

func headFigures(r *Result, t targets) []headFigure {
	le := func(limit float64) func(float64) bool { return func(v float64) bool { return v <= limit } }
	return []headFigure{
		{name: "downstream order p50", f: func(r *Result) float64 { return r.OrderP50Ms }, unit: " ms"},
		{name: "downstream order p95", goal: fmt.Sprintf("≤ %.0f ms", t.DownstreamMs), f: func(r *Result) float64 { return r.OrderP95Ms }, ok: le(t.DownstreamMs), unit: " ms"},
		{name: "downstream order p99", f: func(r *Result) float64 { return r.OrderP99Ms }, unit: " ms"},
		{name: "downstream max in flight", f: func(r *Result) float64 { return float64(r.DownstreamMaxInFlight) }},
		{name: "downstream max queued at the pool", f: func(r *Result) float64 { return float64(r.DownstreamMaxQueued) }},
		{name: fmt.Sprintf("admitted per s (configured %s)", fmtTick(r.ConfiguredPerSec)), f: func(r *Result) float64 { return r.AdmittedPerSec }},
		{name: "admitted vs configured (deviation)", goal: fmt.Sprintf("within ±%.0f%%", t.RateDeviationPct), f: deviation, ok: func(v float64) bool { return math.Abs(v) <= t.RateDeviationPct }, unit: " %"},
		{name: "FIFO inversions", goal: "0", f: func(r *Result) float64 { return float64(r.FIFOInversions) }, ok: func(v float64) bool { return v == 0 }},
		{name: "READY learned, p95 (admission → first answer showing READY)", goal: fmt.Sprintf("≤ %.0f ms", t.ReadyLearnMs), f: func(r *Result) float64 { return r.ReadyLearnP95Ms }, ok: le(t.ReadyLearnMs), unit: " ms", optional: true},
		{name: fmt.Sprintf("polls per waiting user-minute (fixed 2 s polling: %d)", fixedPollsPerMinute), goal: fmt.Sprintf("far below %d (read: ≤ %.0f)", fixedPollsPerMinute, t.PollsPerMinute), f: func(r *Result) float64 { return r.PollsPerUserMinute }, ok: le(t.PollsPerMinute)},
		{name: "polls per waiting user", f: func(r *Result) float64 { return r.PollsPerUser }},
		{name: "requests per visitor (enter + polls + order)", f: func(r *Result) float64 { return r.RequestsPerVisitor }, optional: true},
		{name: "arrival → order p50", f: func(r *Result) float64 { return r.E2EP50Ms }, unit: " ms"},
	}
}

func check(ok bool) string {
	if ok {
		return "met"
	}
	return "**not met**"
}

// longestWait is the longest measured enter → READY wait, or the line's
// length over the rate (marked ~) for results that predate the measure.
func longestWait(r *Result) string {
	if r.MaxWaitSeconds > 0 {
		return fmt.Sprintf("%.0f s", r.MaxWaitSeconds)
	}
	return fmt.Sprintf("~%.0f s", float64(r.Users)/r.ConfiguredPerSec)
}

// pollingRow is one line length in the table of polls per user-minute.
type pollingRow struct {
	What        string
	R           *Result
	PPM, Factor float64 // polls per waiting user-minute; fixed 2 s polling ÷ that
	LongestWait string
}

// Met says whether the polling target is met.
func (p pollingRow) Met() bool { return p.PPM <= fixedPollsPerMinute/2 }

func pollingByLength(h *headline) []pollingRow {
	row := func(what string, r *Result, ppm float64) pollingRow {
		f := 0.0
		if ppm > 0 {
			f = fixedPollsPerMinute / ppm
		}
		return pollingRow{What: what, R: r, PPM: ppm, Factor: f, LongestWait: longestWait(r)}
	}
	var out []pollingRow
	if h.Short != nil {
		out = append(out, row(fmt.Sprintf("margin sweep's run at %.1f (one run)", h.Short.Scenario.Margin), h.Short, h.Short.PollsPerUserMinute))
	}
	out = append(out, row(fmt.Sprintf("headline (median of %d runs)", len(h.Now)), h.Now[0], h.PPM))
	for _, r := range h.Scale {
		out = append(out, row("larger scale (one run)", r, r.PollsPerUserMinute))
	}
	for _, r := range h.Long {
		out = append(out, row("**long line** (one run)", r, r.PollsPerUserMinute))
	}
	return out
}

// longLine is the Black Friday case: a long line, waits of minutes.
type longLine struct {
	R                    *Result
	Rows                 []*Result // R alone, for the results table
	When                 string
	Deviation            float64
	MeanWaitSeconds      float64
	ScaleLongestWait     string  // the longest wait of the shorter runs
	PollsAtPeakWaiting   int     // position requests in the second the most users waited
	PeakWaitingAt        int     // that second
	Polls, Fixed         float64 // position requests over the run; fixed 2 s polling's
	Tiers                string  // its tier table in words
	BusiestNearSpike     bool    // the busiest second is within one top tier of the spike's end
	TopTierSeconds       float64 // the longest tier
	RequestsLongWait     float64 // requests per visitor who waited ≥ LongWaitFrom
	RequestsLongWaitFrom int
}

func buildLongLine(lr, rep *Report) *longLine {
	r := lr.Runs[0]
	l := &longLine{R: r, Rows: lr.Runs[:1], When: lr.When(), Deviation: deviation(r), Tiers: tierWords(r.Scenario.Tiers()),
		TopTierSeconds: float64(topTierMs(r.Scenario.Tiers())) / 1000, ScaleLongestWait: "a minute", RequestsLongWaitFrom: LongWaitFrom}
	for _, s := range group(rep.Runs, "scale") {
		if !s.Scenario.TierOnly {
			l.ScaleLongestWait = longestWait(s)
		}
	}
	if r.PollsPerUser > 0 {
		l.MeanWaitSeconds = r.WaitingUserMinutes * 60 / (float64(r.Polls) / r.PollsPerUser)
	}
	for i, n := range r.PollsPerStep {
		l.Polls += float64(n)
		if i < len(r.WaitingPerStep) {
			l.Fixed += r.WaitingPerStep[i] / 2
		}
	}
	for i, w := range r.WaitingPerStep {
		if w == r.PeakWaiting {
			l.PeakWaitingAt = i
			if i < len(r.PollsPerStep) {
				l.PollsAtPeakWaiting = r.PollsPerStep[i]
			}
			break
		}
	}
	l.BusiestNearSpike = float64(r.PeakPollsAtSec) <= r.Scenario.Spike.Seconds()+(1+pollJitter)*l.TopTierSeconds
	l.RequestsLongWait, _ = r.RequestsForWait(LongWaitFrom)
	return l
}

// tierSweep is the poll-tier sweep: one run per candidate table.
type tierSweep struct {
	Runs               []*Result
	When               string
	Sc                 facts
	DownTarget         float64
	LongFrom           int
	Rows               []tierRow
	Chosen, Before     *tierRow
	ChosenTopS         float64 // the chosen table's longest tier
	ChosenMaxSleepS    float64 // its longest sleep, the tier +20%
	TokenTTLSeconds    float64
	DefaultTiers       string
	PreviousTiers      string
	WaitSeconds        float64
	RequestsTarget     float64
	ChosenMeetsAll     bool
	Parallel           int     // runs at a time
	FullRoomPerSec     float64 // position requests/s of a room full to DefaultQueueCapacity, chosen table
	FullRoomBeforePerS float64 // the same under the previous table
	QueueCapacity      int
}

type tierRow struct {
	R              *Result
	Tiers          string
	Long           float64 // requests per visitor who waited ≥ LongFrom
	LongUsers      int
	DownOK, LearnK bool
}

func buildTierSweep(tr *Report) *tierSweep {
	sc := tr.Runs[0].Scenario
	s := &tierSweep{Runs: tr.Runs, When: tr.When(), Sc: factsOf(sc), DownTarget: DownstreamTarget(sc), LongFrom: LongWaitFrom,
		TokenTTLSeconds: sc.TokenTTL.Seconds(), DefaultTiers: waitroom.DefaultPollTiers, PreviousTiers: PreviousPollTiers,
		WaitSeconds: TierSweepWait.Seconds(), RequestsTarget: reportTargets.RequestsPerVisit, Parallel: max(1, tr.Parallel)}
	for _, r := range tr.Runs {
		row := tierRow{R: r, Tiers: r.Scenario.Tiers(), DownOK: r.OrderP95Ms <= s.DownTarget, LearnK: r.ReadyLearnP95Ms <= ReadyLearnTargetMs}
		row.Long, row.LongUsers = r.RequestsForWait(LongWaitFrom)
		s.Rows = append(s.Rows, row)
	}
	for i := range s.Rows {
		switch {
		case IsDefaultTiers(s.Rows[i].Tiers):
			s.Chosen = &s.Rows[i]
		case s.Rows[i].Tiers == PreviousPollTiers:
			s.Before = &s.Rows[i]
		}
	}
	if s.Chosen != nil {
		s.ChosenTopS = float64(topTierMs(s.Chosen.Tiers)) / 1000
		s.ChosenMaxSleepS = s.ChosenTopS * (1 + pollJitter)
		s.ChosenMeetsAll = s.Chosen.DownOK && s.Chosen.LearnK && s.Chosen.Long <= s.RequestsTarget
		s.FullRoomPerSec = waitroom.DefaultQueueCapacity / s.ChosenTopS
	}
	s.QueueCapacity = waitroom.DefaultQueueCapacity
	s.FullRoomBeforePerS = waitroom.DefaultQueueCapacity / (float64(topTierMs(PreviousPollTiers)) / 1000)
	return s
}

// micro is the micro-benchmark section.
type micro struct {
	M, Pinned          *MicroResults
	Runs               int
	Rows               []microRow
	Below, BelowPinned int
	LookupRatio        float64 // a place's HGET alone, large line over small
	Mem                *memModel
}

type microRow struct {
	Op, Pin MicroOp
	HasPin  bool
}

func buildMicro(mr, pinned *MicroResults) *micro {
	m := &micro{M: mr, Pinned: pinned, Runs: 1}
	if len(mr.Ops) > 0 && len(mr.Ops[0].RatioRuns) > 0 {
		m.Runs = len(mr.Ops[0].RatioRuns)
	}
	pin := map[string]MicroOp{}
	if pinned != nil {
		for _, o := range pinned.Ops {
			pin[o.Name] = o
			if o.Ratio < reportTargets.MicroRatio {
				m.BelowPinned++
			}
		}
	}
	for _, o := range mr.Ops {
		q, ok := pin[o.Name]
		m.Rows = append(m.Rows, microRow{Op: o, Pin: q, HasPin: ok})
		if o.Ratio < reportTargets.MicroRatio {
			m.Below++
		}
	}
	if mr.LookupSmallUs > 0 {
		m.LookupRatio = mr.LookupLargeUs / mr.LookupSmallUs
	}
	m.Mem = memModelOf(mr)
	return m
}

// memModel is what a waiting account costs in Redis 7.0's line (redisstore's
// line.lua and place.lua: its number, one record in one of the room's
// bucket hashes, each a listpack beside its 'b', with an expiry), from the
// run's figures (the buckets, their records, the line's numbers, the keys)
// and the layout's constants, with jemalloc.
type memModel struct {
	FieldBytes, FieldEntry int     // an account's field (its id's digest) and its listpack entry
	NumberEntry            float64 // a number's listpack entry, on average over the line's numbers
	Record                 float64 // the two: an account's own bytes
	Buckets                int     // account buckets measured
	PerBucket              float64 // accounts a bucket
	Fixed                  int     // a listpack's header and end, 'b' and the born's entries
	Rounding               float64 // a listpack's allocator class beyond its bytes, mean over the buckets
	Robj, KeyClass, Entry  int     // the value's object; the key's sds class; a dict entry (keyspace or expiry)
	Bucket, Overhead       float64 // a bucket's own bytes; per account
	KeySlots, ExpirySlots  int     // the keyspace's and the expiries' hash tables' slots
	TablesPerUser          float64 //
	Total                  float64 // the model's bytes per account
	Charged, Uncharged     float64 // per account: what MEMORY USAGE counts of the model, and what it leaves out
	Unattributed           float64 // used_memory per account beyond the line's MEMORY USAGE
	Before                 float64 // the layout before (a queue of ids, a hash of id -> sequence) for these ids
	UUIDBefore             int     // what a 36-byte UUID added to each in it, over these ids
	QueueMB, MillionMB     float64 // used_memory of a full default room and of a million waiting
}

// Redis 7.0's overheads on a 64-bit build: a dict entry (key, value, next:
// 24 B, in jemalloc's 32 B class); a value's object (robj, 16 B); a short
// sds (1 B header, type 5, up to 31 bytes, + NUL); a listpack (6 B header,
// 1 B end) and its string entries (1 B encoding, the bytes, 1 B back
// length); a hash table's slot (8 B).
const (
	dictEntryBytes   = 32
	dictEntryRaw     = 24
	robjBytes        = 16
	sdsOverhead      = 1 + 1
	listpackHeader   = 6 + 1
	listpackOverhead = 2
	tableSlotBytes   = 8
	uuidBytes        = 36
)

// memModelOf models mr's buckets; nil for results without them.
func memModelOf(mr *MicroResults) *memModel {
	if mr.MemBuckets == 0 || mr.MemUsers == 0 {
		return nil
	}
	m := &memModel{FieldBytes: mr.MemFieldBytes, FieldEntry: listpackOverhead + mr.MemFieldBytes, Buckets: mr.MemBuckets,
		Robj: robjBytes, KeyClass: sizeClass(sdsOverhead + mr.MemKeyBytes), Entry: dictEntryBytes}
	m.NumberEntry = meanIntEntry(int64(mr.MemUsers))
	m.Record = float64(m.FieldEntry) + m.NumberEntry
	m.PerBucket = float64(mr.MemUsers) / float64(mr.MemBuckets)
	m.Fixed = listpackHeader + listpackOverhead + len("b") + listpackInt(mr.MemBorn)
	for records, n := range mr.MemBucketSizes {
		bytes := float64(m.Fixed) + float64(records)*m.Record
		m.Rounding += float64(n) * (float64(sizeClass(int(math.Ceil(bytes)))) - bytes) / float64(mr.MemBuckets)
	}
	m.Bucket = float64(m.Fixed) + m.Rounding + float64(m.Robj+m.KeyClass+2*m.Entry)
	m.Overhead = m.Bucket / m.PerBucket
	m.KeySlots, m.ExpirySlots = tableSize(mr.MemKeys), tableSize(mr.MemExpires)
	m.TablesPerUser = float64(tableSlotBytes*(m.KeySlots+m.ExpirySlots)) / float64(mr.MemUsers)
	m.Total = m.Record + m.Overhead + m.TablesPerUser
	// MEMORY USAGE counts a bucket's dict entry unrounded, and neither
	// its expiry's entry nor the tables.
	m.Uncharged = float64(dictEntryBytes-dictEntryRaw+m.Entry)/m.PerBucket + m.TablesPerUser
	m.Charged = m.Total - m.Uncharged
	m.Unattributed = mr.MemPerUser - mr.MemLinePerUser
	m.Before = beforeNumbers(mr)
	m.UUIDBefore = sizeClass(sdsOverhead+uuidBytes) - sizeClass(sdsOverhead+mr.MemUserIDBytes) + uuidBytes - mr.MemUserIDBytes // the places' sds, the queue's entry
	m.QueueMB = mr.MemPerUser * waitroom.DefaultQueueCapacity / 1e6
	m.MillionMB = mr.MemPerUser
	return m
}

// beforeNumbers is what a waiting user cost in the layout before numbers
// (issue 20's: a queue, a listpack of ids, and places, a hash of id ->
// sequence) for mr's ids and line: the id in the queue, a dict entry, the
// id and the sequence as sds, the dict's table.
func beforeNumbers(mr *MicroResults) float64 {
	seq := sizeClass(sdsOverhead + len(strconv.Itoa(max(1, mr.MemUsers-1))))
	table := float64(tableSlotBytes*tableSize(int64(mr.MemUsers))) / float64(mr.MemUsers)
	return float64(listpackOverhead+mr.MemUserIDBytes+dictEntryBytes+sizeClass(sdsOverhead+mr.MemUserIDBytes)+seq) + table
}

// listpackInts are a listpack's integer entries (encoding and back
// length) by the largest non-negative value each holds: 7 bits, 13, 16,
// 24, 32, 64.
var listpackInts = []struct {
	upTo  int64
	bytes int
}{{127, 2}, {4095, 3}, {math.MaxInt16, 4}, {1<<23 - 1, 5}, {math.MaxInt32, 6}, {math.MaxInt64, 10}}

// listpackInt is the bytes of v's entry in a listpack, v ≥ 0.
func listpackInt(v int64) int {
	for _, e := range listpackInts {
		if v <= e.upTo {
			return e.bytes
		}
	}
	return 10
}

// meanIntEntry is listpackInt's mean over the numbers 1 to n.
func meanIntEntry(n int64) float64 {
	var sum float64
	from := int64(1)
	for _, e := range listpackInts {
		if from > n {
			break
		}
		to := min(n, e.upTo)
		sum += float64(to-from+1) * float64(e.bytes)
		from = to + 1
	}
	return sum / float64(n)
}

// tableSize is the slots of a Redis dict holding n entries: the power of
// two at least n.
func tableSize(n int64) int {
	if n <= 1 {
		return 4
	}
	return 1 << bits.Len64(uint64(n-1))
}

// sizeClass is jemalloc's size class for n bytes on x86-64 (a 16 B
// quantum: 8, then steps of 16 up to 128, then four classes a doubling).
func sizeClass(n int) int {
	switch {
	case n <= 8:
		return 8
	case n <= 128:
		return (n + 15) / 16 * 16
	}
	step := 1 << (bits.Len(uint(n-1)) - 3)
	return (n + step - 1) / step * step
}
