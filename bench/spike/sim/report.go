package sim

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// Machine is where the figures came from.
type Machine struct {
	NumCPU     int    `json:"numCPU"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	CPUModel   string `json:"cpuModel"`
	Kernel     string `json:"kernel"`
	Redis      string `json:"redis"`
	Go         string `json:"go"`
}

// DescribeMachine reads the CPU, kernel, Go and redis-server versions.
func DescribeMachine(ctx context.Context, env *Env) Machine {
	m := Machine{NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Go: runtime.Version(), CPUModel: "unknown", Kernel: "unknown"}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				m.CPUModel = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	m.Redis = "redis-server " + ServerVersion(ctx, env.Admin)
	if out, err := exec.Command("redis-server", "--version").Output(); err == nil && env.Redis.cmd != nil {
		m.Redis = strings.TrimSpace(string(out))
	}
	return m
}

// Report is what spike full writes.
type Report struct {
	Machine  Machine   `json:"machine"`
	Started  string    `json:"started"`
	Finished string    `json:"finished"`
	Runs     []*Result `json:"runs"`

	// The long line (spike longline), read from its own file by the report.
	LongLine     []*Result `json:"-"`
	LongLineWhen string    `json:"-"`
}

// MicroOp is one operation of the micro-benchmarks, beside redis-benchmark.
type MicroOp struct {
	Name             string    `json:"name"`
	Path             string    `json:"path"`   // what the Go side runs
	Script           string    `json:"script"` // what redis-benchmark runs
	Concurrency      int       `json:"concurrency"`
	GoOpsPerSec      float64   `json:"goOpsPerSec"`
	GoP50Us          float64   `json:"goP50Us"`
	GoP99Us          float64   `json:"goP99Us"`
	RedisBenchPerSec float64   `json:"redisBenchOpsPerSec"`
	Ratio            float64   `json:"ratio"`
	RatioRuns        []float64 `json:"ratioRuns,omitempty"` // every run's ratio; the figures above are the median run's
}

// MicroResults is what the bench package writes (BENCH_OUT).
type MicroResults struct {
	Redis             string    `json:"redis"`
	Mode              string    `json:"mode,omitempty"`       // "pinned" or "unpinned"
	RedisCPUs         string    `json:"redisCPUs,omitempty"`  // taskset -c list of redis-server; "" = any
	ClientCPUs        string    `json:"clientCPUs,omitempty"` // the benchmark process's affinity (Go side and redis-benchmark)
	GOMAXPROCS        int       `json:"gomaxprocs,omitempty"`
	Ops               []MicroOp `json:"ops"`
	PositionSmallN    int       `json:"positionSmallN"`
	PositionLargeN    int       `json:"positionLargeN"`
	PositionSmallUs   float64   `json:"positionSmallUs"`
	PositionLargeUs   float64   `json:"positionLargeUs"`
	PositionRatio     float64   `json:"positionRatio"`
	PositionRatioRuns []float64 `json:"positionRatioRuns,omitempty"` // every run's; the figures are the median run's
	ZrankSmallUs      float64   `json:"zrankSmallUs"`
	ZrankLargeUs      float64   `json:"zrankLargeUs"`
	MemUsers          int       `json:"memUsers"`
	MemBefore         int64     `json:"memBefore"`
	MemAfter          int64     `json:"memAfter"`
	MemPerUser        float64   `json:"memPerUser"`
	MemLinePerUser    float64   `json:"memLinePerUser"` // MEMORY USAGE of the line zset / users
	MemMarks          int64     `json:"memMarks"`       // marks zset entries
	MemUserIDBytes    int       `json:"memUserIdBytes"`
	FillMethod        string    `json:"fillMethod"`
	FillSeconds       float64   `json:"fillSeconds"`
}

func (r *Report) group(g string) []*Result {
	var out []*Result
	for _, x := range r.Runs {
		if x.Group == g {
			out = append(out, x)
		}
	}
	return out
}

// defaultRuns are the default strategy's runs at the comparison's size, with
// clients as specified or (tierOnly) with the what-if.
func (r *Report) defaultRuns(tierOnly bool) []*Result {
	var out []*Result
	for _, x := range r.Runs {
		if (x.Group == "compare" || x.Group == "tier-only" || x.Group == "repeat") && x.Strategy.Name == BatchedJitter.Name && x.Scenario.TierOnly == tierOnly {
			out = append(out, x)
		}
	}
	return out
}

func medianOf(rs []*Result, f func(*Result) float64) float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = f(r)
	}
	return Median(xs)
}

func check(ok bool) string {
	if ok {
		return "met"
	}
	return "**not met**"
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// WriteReport renders BENCHMARKS.md and writes the plots into plotDir
// (linked from the Markdown as plotLink/...).
func WriteReport(rep *Report, mr, pinned *MicroResults, plotDir, plotLink string) (string, error) {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	m := rep.Machine
	cmp := rep.group("compare")
	if len(cmp) == 0 {
		return "", fmt.Errorf("the results hold no comparison runs")
	}
	base := cmp[0].Scenario

	p("# Benchmarks\n\n")
	p("Generated by `make bench` (`go run ./bench/spike report`) from `%s/spike-results.json`, `%s/longline-results.json`, `%s/micro-results.json` and `%s/micro-pinned-results.json`; do not edit by hand. ", plotLink, plotLink, plotLink, plotLink)
	p("Every figure below comes from those files, written by this repository's code on the machine described here (spike runs %s → %s).\n\n", rep.Started, rep.Finished)
	p("## Machine\n\n| | |\n| --- | --- |\n")
	p("| CPUs (nproc) | %d (GOMAXPROCS %d), shared with other work |\n| CPU model | %s |\n| kernel | %s |\n| Redis | %s |\n| Go | %s |\n\n", m.NumCPU, m.GOMAXPROCS, m.CPUModel, m.Kernel, m.Redis, m.Go)
	p("All load stays on loopback: simulated users, the handlers, redis-server and the simulated order API share these %d cores, so every latency includes some scheduling noise.\n\n", m.NumCPU)

	p("## Commands\n\n```sh\nmake bench-quick   # ~30 s: the default strategy, small; last line is one JSON object\n")
	p("go run ./bench/spike run -strategies batched-jitter -tier-only   # the what-if: clients sleep the plain API.md tier\n")
	p("make bench         # everything below: spike runs, the long line, micro-benchmarks (unpinned and pinned), this file and the plots\n")
	p("make bench-longline       # the long line alone: 20,000 users, ~5 min\n")
	p("make bench-micro-pinned   # the micro-benchmarks with redis-server on core 0, both clients on core 1 (Go: GOMAXPROCS=1)\n")
	p("go run ./bench/spike run -strategies all -users 2000 -spike 8s      # any scenario by hand (-h for every knob)\n")
	p("go test -run '^$' -bench . -benchtime 20000x ./bench               # the micro-benchmarks alone (REDIS_URL or a spawned redis-server)\n```\n\n")

	p("## The simulation\n\n")
	p("- **System under test**: the real handlers (`awslambda.API.Route`, called in process with API Gateway v2 events, `TRUST_USER_HEADER` identities), the real `redisstore` Lua scripts on a real `redis-server` spawned on a free loopback port (or `REDIS_URL`), the real `waitroom.Admitter`, and the real `orderapi` HTTP client towards the simulated order API. The admit schedule is one long-running Admitter, as the local runner chains invocations back to back. Each run starts from `FLUSHALL` and `CONFIG RESETSTAT`.\n")
	p("- **Order API** (`sim.Pool`, HTTP on loopback): %d connections, service time `%s` (uniform ±20%% around 200 ms unless said otherwise), requests beyond the pool wait FIFO for a connection. It records each request: arrival, connection, answer. *Downstream latency* is arrival → answer at the pool (queueing + service), for served requests.\n", base.Connections, base.ServiceSpec)
	p("- **Rate**: connections × 1 s / mean service time × margin = %d × 1000/%d × %.1f = **%.0f/s** by default.\n", base.Connections, base.Service.Mean.Milliseconds(), base.Margin, base.Rate())
	p("- **Users**: %d arrive within %s on the `%s` curve (most at once, density ∝ e^(−3t/T), the midnight rush); they enter, sleep exactly `pollAfterMs` between polls (the server caps it at the user's turn: see the design change below), order as soon as READY (think time %s), and %.0f%% abandon once READY (never order; their tokens expire). Failed orders and 429s are retried after %s–%s.\n", base.Users, base.Spike, base.Curve, base.Think, base.Abandon*100, base.RetryMin, base.RetryMax)
	p("- **Strategies**: `no-waiting-room` (everyone posts to the order API at once, %s client timeout, up to %d attempts); `rate-limiter-429` (an exact in-process token bucket at the rate, bucket %.1f s of rate, 429 → retry); `whole-second` (ADMIT_INTERVAL_MS=1000: one batch of a second's users, no jitter); `batched` (100 ms batches, Admitter jitter off: `Rand` returns 0); `batched-jitter` (100 ms batches with the Admitter's jitter: **the default**).\n", base.OrderTimeout, base.MaxAttempts, base.LimiterBurst)
	p("- **FIFO inversions**: pairs of users where one surely arrived first (its enter request had returned before the other's was sent) but was admitted later; admission order is the order of `Admitter.OnBatch` (the scripts' ZPOPMIN order), or the limiter's pass order, or the pool's connection order. *Overtaken* counts users passed by at least one later arrival.\n")
	p("- **Polls per waiting user-minute**: position requests / minutes spent waiting (enter → READY seen), over users who waited. Fixed 2 s polling would be 30.\n")
	p("- **Redis commands per user**: `INFO commandstats` after the run (commands run inside scripts included), over all users; *scripts per user* counts EVALSHA alone.\n\n")

	// Headline.
	fixed, tier := rep.defaultRuns(false), rep.defaultRuns(true)
	p("## Headline: the default strategy against the targets\n\n")
	p("`batched-jitter` at margin %.1f, %d users in %s. Each cell is the **median of %d runs** (seeds 1…%d); in brackets, the lowest and highest run. The last column is the what-if *tier-only polling*: the same server, but clients sleep the plain tier of API.md's table for their `estimatedWaitSeconds` and ignore a shorter `pollAfterMs`, which is what the server answered before poll-at-turn (%d runs).\n\n", base.Margin, base.Users, base.Spike, len(fixed), len(fixed), len(tier))
	p("| figure | target | **the server now** (pollAfterMs with the turn cap) | what-if: tier-only polling (API.md table without the turn cap) |\n| --- | --- | --- | --- |\n")
	type row struct {
		name, goal string
		f          func(*Result) float64
		ok         func(float64) bool
		unit       string
	}
	rows := []row{
		{"downstream order p50", "", func(r *Result) float64 { return r.OrderP50Ms }, nil, " ms"},
		{"downstream order p95", "≤ 250 ms", func(r *Result) float64 { return r.OrderP95Ms }, func(v float64) bool { return v <= 250 }, " ms"},
		{"downstream order p99", "", func(r *Result) float64 { return r.OrderP99Ms }, nil, " ms"},
		{"downstream max in flight / max queued at the pool", "", func(r *Result) float64 { return float64(r.DownstreamMaxInFlight) }, nil, ""},
		{"admitted per s (configured 70)", "", func(r *Result) float64 { return r.AdmittedPerSec }, nil, ""},
		{"admitted vs configured (deviation)", "within ±2%", func(r *Result) float64 { return 100 * (r.AdmittedPerSec/r.ConfiguredPerSec - 1) }, func(v float64) bool { return v >= -2 && v <= 2 }, " %"},
		{"FIFO inversions", "0", func(r *Result) float64 { return float64(r.FIFOInversions) }, func(v float64) bool { return v == 0 }, ""},
		{"polls per waiting user-minute (fixed 2 s polling: 30)", "far below 30 (read: ≤ 15)", func(r *Result) float64 { return r.PollsPerUserMinute }, func(v float64) bool { return v <= 15 }, ""},
		{"polls per waiting user", "", func(r *Result) float64 { return r.PollsPerUser }, nil, ""},
		{"arrival → order p50", "", func(r *Result) float64 { return r.E2EP50Ms }, nil, " ms"},
	}
	cell := func(rs []*Result, rw row) string {
		if len(rs) == 0 {
			return "n/a"
		}
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = rw.f(r)
		}
		lo, hi := xs[0], xs[0]
		for _, x := range xs {
			lo, hi = min(lo, x), max(hi, x)
		}
		v := Median(xs)
		if rw.unit == " ms" {
			v, lo, hi = math.Round(v), math.Round(lo), math.Round(hi)
		}
		out := fmt.Sprintf("%s%s", fmtTick(round2(v)), rw.unit)
		if rw.name == "downstream max in flight / max queued at the pool" {
			q := make([]float64, len(rs))
			for i, r := range rs {
				q[i] = float64(r.DownstreamMaxQueued)
			}
			out = fmt.Sprintf("%s / %s", fmtTick(v), fmtTick(Median(q)))
		}
		if len(rs) > 1 && lo != hi {
			out += fmt.Sprintf(" [%s–%s]", fmtTick(round2(lo)), fmtTick(round2(hi)))
		}
		if rw.ok != nil {
			out += " (" + check(rw.ok(v)) + ")"
		}
		return out
	}
	for _, rw := range rows {
		goal := rw.goal
		if goal == "" {
			goal = "–"
		}
		p("| %s | %s | %s | %s |\n", rw.name, goal, cell(fixed, rw), cell(tier, rw))
	}
	p("\n")
	headlineText(&b, rep, fixed, tier)

	// Side by side.
	p("## Strategies side by side\n\n%d users in %s (%s), margin %.1f, clients as specified (sleep `pollAfterMs`). One run each; the default strategy's spread across runs is in the headline.\n\n", base.Users, base.Spike, base.Curve, base.Margin)
	resultTable(&b, cmp)
	p("\n![downstream in flight](%s/inflight.svg)\n\n", plotLink)
	p("### HTTP status counts\n\n| strategy | statuses |\n| --- | --- |\n")
	for _, r := range cmp {
		var parts []string
		for _, k := range sortedKeys(r.Status) {
			parts = append(parts, fmt.Sprintf("`%s`: %d", k, r.Status[k]))
		}
		p("| %s | %s |\n", r.Strategy.Name, strings.Join(parts, ", "))
	}
	p("\n### Redis commands per user\n\n| strategy | all commands / user | scripts / user | busiest commands (calls / user) |\n| --- | --- | --- | --- |\n")
	for _, r := range cmp {
		keys := sortedKeys(r.RedisCommands)
		sort.SliceStable(keys, func(i, j int) bool { return r.RedisCommands[keys[i]] > r.RedisCommands[keys[j]] })
		var parts []string
		for i, k := range keys {
			if i == 8 {
				break
			}
			parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(r.RedisCommands[k])/float64(r.Users)))
		}
		p("| %s | %.1f | %.1f | %s |\n", r.Strategy.Name, r.RedisCmdPerUser, r.RedisEvalPerUser, strings.Join(parts, ", "))
	}

	if t := rep.group("tier-only"); len(t) > 0 {
		designText(&b, rep, t, plotLink)
	}
	if ps := rep.group("push"); len(ps) > 0 {
		p("\n## Worst case: users told at the admission instant (push)\n\n%d users in %s; every admitted user orders the moment the admit script returns (what SSE or a push notification would do). This isolates the batch shape: whole-second admission sends a second's users at once.\n\n", ps[0].Users, ps[0].Scenario.Spike)
		resultTable(&b, ps)
	}

	// Sweep.
	if sw := rep.group("sweep"); len(sw) > 0 {
		p("\n## Downstream p95 against the safety margin\n\n%d users in 3 s per point (%s), one run per point; the rate is 100/s × margin.\n\n", sw[0].Users, sw[0].Scenario.Curve)
		margins := map[float64]bool{}
		byName := map[string]map[float64]*Result{}
		var names []string
		add := func(name string, r *Result) {
			if byName[name] == nil {
				byName[name] = map[float64]*Result{}
				names = append(names, name)
			}
			byName[name][r.Scenario.Margin] = r
			margins[r.Scenario.Margin] = true
		}
		for _, r := range sw {
			name := r.Strategy.Name
			if r.Scenario.TierOnly {
				name += " (what-if: tier-only polling)"
			}
			add(name, r)
		}
		var ms []float64
		for k := range margins {
			ms = append(ms, k)
		}
		sort.Float64s(ms)
		p("| strategy |")
		for _, mm := range ms {
			p(" %.1f (%.0f/s) |", mm, 100*mm)
		}
		p("\n| --- |%s\n", strings.Repeat(" --- |", len(ms)))
		var series []Series
		for _, n := range names {
			p("| %s |", n)
			s := Series{Name: n, Dash: strings.Contains(n, "tier-only")}
			for _, mm := range ms {
				if r := byName[n][mm]; r != nil {
					p(" %.0f ms (max in flight %d) |", r.OrderP95Ms, r.DownstreamMaxInFlight)
					s.X, s.Y = append(s.X, mm), append(s.Y, r.OrderP95Ms)
				} else {
					p(" |")
				}
			}
			p("\n")
			series = append(series, s)
		}
		for _, r := range cmp {
			if r.Strategy.Kind == "direct" {
				p("\n`no-waiting-room` does not depend on the margin: downstream p95 %.0f ms in the comparison above (its own line in the plot).\n", r.OrderP95Ms)
				series = append([]Series{{Name: "no-waiting-room", X: []float64{ms[0], ms[len(ms)-1]}, Y: []float64{r.OrderP95Ms, r.OrderP95Ms}, Dash: true}}, series...)
			}
		}
		c := Chart{Title: "Downstream order p95 vs safety margin", XLabel: "safety margin (rate = 100/s × margin)", YLabel: "p95 at the order API (ms)", Series: series, HLine: 250, HLabel: "target 250 ms"}
		// Keep the waiting-room lines readable: the no-waiting-room line is far above.
		ymax := 0.0
		for _, s := range series[1:] {
			for _, y := range s.Y {
				ymax = max(ymax, y)
			}
		}
		c.YMin, c.YMax = 0, max(300, ymax*1.1)
		if err := os.WriteFile(filepath.Join(plotDir, "p95-vs-margin.svg"), []byte(SVG(820, 420, c)), 0o644); err != nil {
			return "", err
		}
		p("\n![p95 vs margin](%s/p95-vs-margin.svg)\n", plotLink)
	}

	if err := inflightPlot(cmp, filepath.Join(plotDir, "inflight.svg"), "pollAfterMs"); err != nil {
		return "", err
	}
	if t := rep.group("tier-only"); len(t) > 0 {
		if err := inflightPlot(t, filepath.Join(plotDir, "inflight-tier-only.svg"), "what-if: tier-only polling"); err != nil {
			return "", err
		}
	}

	if sc := rep.group("scale"); len(sc) > 0 {
		p("\n## The default strategy at a larger scale\n\n")
		resultTable(&b, sc)
	}
	if err := longLineSection(&b, rep, plotDir, plotLink); err != nil {
		return "", err
	}
	if mr != nil {
		microSection(&b, mr, pinned, m.NumCPU)
	}
	p("\n## Reading the numbers\n\n")
	p("- Single runs on a shared 2-core machine move by tens of milliseconds at the tails; the headline uses medians of the default strategy's runs, the micro-benchmarks the median of their runs, and every ratio (Go vs redis-benchmark, 1M vs 10k) compares figures from the same run.\n")
	p("- The simulation runs in real time (no time scaling); sizes are modest so that `make bench` stays around half an hour, the long line included.\n")
	p("- `whole-second` and `batched` run the Admitter without jitter (`Rand` returns 0): batches exactly one interval apart. Their admitted rate shows how the Redis budget copes with gaps that never fall short of the interval.\n")
	return b.String(), nil
}

func resultTable(b *strings.Builder, rs []*Result) {
	fmt.Fprintf(b, "| strategy | users learn of READY by | ordered / users | downstream p50 / p95 / p99 / max (ms) | max in flight / queued | arrival → order p50 / p95 / p99 (ms) | admitted / configured per s | FIFO inversions (users overtaken) | polls / waiting user-min (per user) | Redis cmds / user | run (s) |\n")
	fmt.Fprintf(b, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rs {
		rate := "n/a"
		if r.ConfiguredPerSec > 0 {
			rate = fmt.Sprintf("%.1f / %.1f (%+.1f%%)", r.AdmittedPerSec, r.ConfiguredPerSec, 100*(r.AdmittedPerSec/r.ConfiguredPerSec-1))
		}
		polls := "n/a"
		if r.Strategy.Kind == "room" && r.Scenario.Notify == "poll" {
			polls = fmt.Sprintf("%.1f (%.1f)", r.PollsPerUserMinute, r.PollsPerUser)
		}
		client := Polling(r.Scenario)
		if r.Strategy.Kind != "room" {
			client = "-"
		}
		fmt.Fprintf(b, "| %s | %s | %d / %d | %.0f / %.0f / %.0f / %.0f | %d / %d | %.0f / %.0f / %.0f | %s | %d (%d) | %s | %.1f | %.1f |\n",
			r.Strategy.Name, client, r.Ordered, r.Users, r.OrderP50Ms, r.OrderP95Ms, r.OrderP99Ms, r.OrderMaxMs,
			r.DownstreamMaxInFlight, r.DownstreamMaxQueued, r.E2EP50Ms, r.E2EP95Ms, r.E2EP99Ms, rate,
			r.FIFOInversions, r.UsersOvertaken, polls, r.RedisCmdPerUser, r.Seconds)
	}
}

func inflightPlot(rs []*Result, path, label string) error {
	var charts []Chart
	for _, r := range rs {
		x := make([]float64, len(r.InFlight))
		inF := make([]float64, len(r.InFlight))
		q := make([]float64, len(r.InFlight))
		for i := range r.InFlight {
			x[i] = float64(i) * TimelineStep.Seconds()
			inF[i] = float64(r.InFlight[i])
			if i < len(r.Queued) {
				q[i] = float64(r.Queued[i])
			}
		}
		c := Chart{Title: fmt.Sprintf("%s (%s): order API connections in use and requests queued, max per 100 ms", r.Strategy.Name, label),
			XLabel: "seconds since the spike began", YLabel: "requests", Series: []Series{{Name: "in flight", X: x, Y: inF}, {Name: "queued", X: x, Y: q, Dash: true}},
			HLine: float64(r.Scenario.Connections), HLabel: "pool size"}
		if r.Strategy.Kind != "direct" {
			c.YMin, c.YMax = 0, 80 // same scale for the protected strategies
		}
		charts = append(charts, c)
	}
	return os.WriteFile(path, []byte(SVG(900, 230, charts...)), 0o644)
}
