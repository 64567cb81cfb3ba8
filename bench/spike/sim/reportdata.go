package sim

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/waitroom/waitroom"
)

// reportData is every value report.md.tmpl shows; the template only
// formats them.
type reportData struct {
	Links     links
	Machine   Machine
	SpikeWhen string
	Base      facts
	Targets   targets
	Headline  *headline
	Compare   []*Result
	Statuses  []statusRow
	Redis     []redisRow
	Design    *design
	Push      []*Result
	Margin    *marginSweep
	Scale     []*Result
	Long      *longLine
	Tiers     *tierSweep
	Notify    *notifySection
	Intake    *intakeSection
	RedisCost *redisCostSection
	Challenge *challengeSection
	Failover  *failoverSection
	Close     *closeSection
	Adaptive  *adaptiveSection
	BigRoom   *bigRoomSection
	Micro     *micro
	Missing   []string
}

// links are the files the report names, relative to it.
type links struct {
	Spike, LongLine, Tiers, Micro, Pinned, Notify, Intake, RedisCost, Challenge, Failover, Close, Adaptive, Plots string
}

// targets are the goals the report checks figures against.
type targets struct {
	DownstreamMs     float64 // downstream p95 at the base scenario's service time
	ReadyLearnMs     float64 // READY learned, p95
	PollsPerMinute   float64 // polls per waiting user-minute: half of fixed 2 s polling
	RequestsPerVisit float64 // requests per visitor at a 5-minute wait (issue 9)
	RateDeviationPct float64 // admitted vs configured
	MicroRatio       float64 // Go ops/s ÷ redis-benchmark ops/s
	PositionRatio    float64 // position at 1M waiting ÷ at 10k
	MemPerUser       float64 // bytes per waiting user
}

var reportTargets = targets{ReadyLearnMs: ReadyLearnTargetMs, PollsPerMinute: fixedPollsPerMinute / 2, RequestsPerVisit: 15,
	RateDeviationPct: 2, MicroRatio: 0.8, PositionRatio: 1.5, MemPerUser: 100}

// fixedPollsPerMinute is fixed 2 s polling, the yardstick of the polling figures.
const fixedPollsPerMinute = 30

// facts are a scenario's settings as the prose states them.
type facts struct {
	Scenario
	Rate, ServiceMs float64
	TierWords       string // the tier table in words
	TokenTTLSeconds float64
}

func factsOf(sc Scenario) facts {
	return facts{Scenario: sc, Rate: sc.Rate(), ServiceMs: float64(sc.Service.Mean.Milliseconds()),
		TierWords: tierWords(sc.Tiers()), TokenTTLSeconds: sc.TokenTTL.Seconds()}
}

// tierWords says a POLL_TIERS table in words: "every 10 s while the
// estimated wait is 60 s or more, every 5 s from 10 s, every 2 s below".
func tierWords(s string) string {
	t, err := waitroom.ParsePollTiers(s)
	if err != nil {
		return s
	}
	var parts []string
	for i, tier := range t {
		every := "every " + seconds(tier.PollMs)
		switch {
		case len(t) == 1:
			parts = append(parts, every+" whatever the estimated wait")
		case i == 0:
			parts = append(parts, fmt.Sprintf("%s while the estimated wait is %d s or more", every, tier.MinWaitSeconds))
		case tier.MinWaitSeconds == 0:
			parts = append(parts, every+" below")
		default:
			parts = append(parts, fmt.Sprintf("%s from %d s", every, tier.MinWaitSeconds))
		}
	}
	return strings.Join(parts, ", ") + fmt.Sprintf(" (±%.0f%%)", 100*pollJitter)
}

// pollJitter is line.go's spread of a tier (±20%), as the prose states it.
const pollJitter = 0.2

func seconds(ms int64) string { return fmtTick(float64(ms)/1000) + " s" }

// topTierMs is the longest tier of a table.
func topTierMs(s string) int64 {
	t, err := waitroom.ParsePollTiers(s)
	if err != nil || len(t) == 0 {
		return 0
	}
	return t[0].PollMs
}

func buildReport(in *Inputs, f Files) (*reportData, error) {
	rep := in.Spike
	cmp := group(rep.Runs, "compare")
	if len(cmp) == 0 {
		return nil, fmt.Errorf("%s holds no comparison runs", f.Spike)
	}
	d := &reportData{
		Links: links{link(f.Markdown, f.Spike), link(f.Markdown, f.LongLine), link(f.Markdown, f.Tiers),
			link(f.Markdown, f.Micro), link(f.Markdown, f.Pinned), link(f.Markdown, f.Notify), link(f.Markdown, f.Intake),
			link(f.Markdown, f.RedisCost), link(f.Markdown, f.Challenge), link(f.Markdown, f.Failover), link(f.Markdown, f.Close), link(f.Markdown, f.Adaptive), link(f.Markdown, f.Plots)},
		Machine: rep.Machine, SpikeWhen: rep.When(), Base: factsOf(cmp[0].Scenario), Targets: reportTargets,
		Compare: cmp, Push: group(rep.Runs, "push"), Scale: group(rep.Runs, "scale"),
	}
	for _, m := range in.Missing {
		d.Missing = append(d.Missing, link(f.Markdown, m))
	}
	d.Targets.DownstreamMs = DownstreamTarget(cmp[0].Scenario)
	for _, r := range cmp {
		d.Statuses = append(d.Statuses, statusRow{r.Strategy.Name, r.Status})
		d.Redis = append(d.Redis, redisRowOf(r))
	}
	d.Headline = buildHeadline(rep, in.LongLine, d.Targets)
	d.Design = buildDesign(rep)
	d.Margin = buildMarginSweep(rep)
	if in.LongLine != nil && len(in.LongLine.Runs) > 0 {
		d.Long = buildLongLine(in.LongLine, rep)
	}
	if in.Tiers != nil && len(in.Tiers.Runs) > 0 {
		d.Tiers = buildTierSweep(in.Tiers)
	}
	if in.Notify != nil && len(in.Notify.Results) > 0 {
		d.Notify = buildNotify(in.Notify)
	}
	if in.Intake != nil && len(in.Intake.Acceptance) > 0 {
		d.Intake = buildIntake(in.Intake)
	}
	if in.RedisCost != nil && len(in.RedisCost.Ops) > 0 {
		d.RedisCost = buildRedisCost(in.RedisCost, in.Micro)
	}
	if in.Failover != nil && len(in.Failover.Scenarios) > 0 {
		d.Failover = buildFailover(in.Failover)
	}
	if in.Challenge != nil && len(in.Challenge.Hashes) > 0 {
		d.Challenge = buildChallenge(in.Challenge)
	}
	if in.Close != nil && in.Close.Waiting > 0 {
		d.Close = buildClose(in.Close)
	}
	if in.Adaptive != nil && len(in.Adaptive.Runs) > 0 {
		d.Adaptive = buildAdaptive(in.Adaptive)
	}
	if in.BigRoom != nil && in.BigRoom.Visitors > 0 {
		d.BigRoom = buildBigRoom(in.BigRoom, link(f.Markdown, f.BigRoom))
	}
	if in.Micro != nil {
		d.Micro = buildMicro(in.Micro, in.Pinned)
	}
	return d, nil
}

func group(rs []*Result, g string) []*Result {
	var out []*Result
	for _, x := range rs {
		if x.Group == g {
			out = append(out, x)
		}
	}
	return out
}

type statusRow struct {
	Strategy string
	Status   map[string]int
}

// Keys are the status keys in order.
func (s statusRow) Keys() []string { return sortedKeys(s.Status) }

type redisRow struct {
	Strategy         string
	PerUser, Scripts float64
	Busiest          []string // "name calls/user", busiest first
}

// busiestCommands is how many commands the Redis table lists per strategy.
const busiestCommands = 8

func redisRowOf(r *Result) redisRow {
	keys := sortedKeys(r.RedisCommands)
	sort.SliceStable(keys, func(i, j int) bool { return r.RedisCommands[keys[i]] > r.RedisCommands[keys[j]] })
	row := redisRow{Strategy: r.Strategy.Name, PerUser: r.RedisCmdPerUser, Scripts: r.RedisEvalPerUser}
	for _, k := range keys[:min(len(keys), busiestCommands)] {
		row.Busiest = append(row.Busiest, fmt.Sprintf("%s %.2f", k, float64(r.RedisCommands[k])/float64(r.Users)))
	}
	return row
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// design is the section on poll-at-one's-turn: the default strategy with
// and without the turn cap, same seed.
type design struct {
	Rows      []*Result // the server now, then the what-if
	Now, Tier *Result
	TierTiers string  // the what-if's table in words
	BusyConns float64 // rate × service time
}

func buildDesign(rep *Report) *design {
	tier := group(rep.Runs, "tier-only")
	if len(tier) == 0 {
		return nil
	}
	d := &design{Tier: tier[0], TierTiers: tierWords(tier[0].Scenario.Tiers())}
	for _, r := range group(rep.Runs, "compare") {
		if r.Strategy.Name == BatchedJitter.Name {
			d.Now = r
			d.Rows = append(d.Rows, r)
		}
	}
	d.Rows = append(d.Rows, tier...)
	d.BusyConns = d.Tier.ConfiguredPerSec * d.Tier.Scenario.Service.Mean.Seconds()
	return d
}

// marginSweep is downstream p95 against the safety margin.
type marginSweep struct {
	Users     int
	Spike     time.Duration
	Curve     string
	PerMargin float64 // admission rate per unit of margin
	Margins   []float64
	Rows      []marginRow
	DirectP95 float64 // no-waiting-room in the comparison (0: none)
}

type marginRow struct {
	Name  string
	Cells []*Result // one per margin, nil where missing
}

func buildMarginSweep(rep *Report) *marginSweep {
	sw := group(rep.Runs, "sweep")
	if len(sw) == 0 {
		return nil
	}
	sc := sw[0].Scenario
	m := &marginSweep{Users: sw[0].Users, Spike: sc.Spike, Curve: sc.Curve, PerMargin: sc.Rate() / sc.Margin}
	index := map[float64]int{}
	for _, r := range sw {
		if _, ok := index[r.Scenario.Margin]; !ok {
			index[r.Scenario.Margin] = len(m.Margins)
			m.Margins = append(m.Margins, r.Scenario.Margin)
		}
	}
	sort.Float64s(m.Margins)
	for i, x := range m.Margins {
		index[x] = i
	}
	rows := map[string]int{}
	for _, r := range sw {
		name := r.Strategy.Name
		if r.Scenario.TierOnly {
			name += " (what-if: tier-only polling)"
		}
		if _, ok := rows[name]; !ok {
			rows[name] = len(m.Rows)
			m.Rows = append(m.Rows, marginRow{Name: name, Cells: make([]*Result, len(m.Margins))})
		}
		m.Rows[rows[name]].Cells[index[r.Scenario.Margin]] = r
	}
	for _, r := range group(rep.Runs, "compare") {
		if r.Strategy.Kind == "direct" {
			m.DirectP95 = r.OrderP95Ms
		}
	}
	return m
}

// cellOf is a figure of several runs: the median, and the lowest and
// highest when they differ; "n/a" without runs, or for an optional figure
// that no run recorded.
func cellOf(rs []*Result, f headFigure) string {
	xs := make([]float64, 0, len(rs))
	for _, r := range rs {
		xs = append(xs, f.f(r))
	}
	if len(xs) == 0 || (f.optional && slicesAllZero(xs)) {
		return "n/a"
	}
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	v := Median(xs)
	if f.unit == " ms" {
		v, lo, hi = math.Round(v), math.Round(lo), math.Round(hi)
	}
	out := fmtTick(round2(v)) + f.unit
	if len(xs) > 1 && lo != hi {
		out += fmt.Sprintf(" [%s–%s]", fmtTick(round2(lo)), fmtTick(round2(hi)))
	}
	return out
}

func slicesAllZero(xs []float64) bool {
	for _, x := range xs {
		if x != 0 {
			return false
		}
	}
	return true
}

func medianOf(rs []*Result, f func(*Result) float64) float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = f(r)
	}
	return Median(xs)
}
