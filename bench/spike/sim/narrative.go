package sim

import (
	"fmt"
	"math"
	"strings"
)

// headlineText says, under the headline table, which targets are met and
// reads the polling figures.
func headlineText(b *strings.Builder, rep *Report, fixed, tier []*Result) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	if len(fixed) == 0 {
		return
	}
	med := func(rs []*Result, f func(*Result) float64) float64 { return medianOf(rs, f) }
	p95 := med(fixed, func(r *Result) float64 { return r.OrderP95Ms })
	inv := med(fixed, func(r *Result) float64 { return float64(r.FIFOInversions) })
	dev := med(fixed, func(r *Result) float64 { return 100 * (r.AdmittedPerSec/r.ConfiguredPerSec - 1) })
	ppm := med(fixed, func(r *Result) float64 { return r.PollsPerUserMinute })
	ppu := med(fixed, func(r *Result) float64 { return r.PollsPerUser })
	p("**Targets.** Downstream order p95 %.0f ms against ≤ 250 ms: %s (1.25 × the 200 ms service time; the seeds' k6 run reached 2.42 s). FIFO inversions %.0f: %s. Admitted rate %+.1f%% from configured: %s. ", p95, check(p95 <= 250), inv, check(inv == 0), dev, check(dev >= -2 && dev <= 2))
	p("Polls per waiting user-minute %.1f against 30 for fixed 2 s polling (%.0f%% fewer): %s at this size, where no user waits longer than %s", ppm, 100*(1-ppm/30), check(ppm <= 15), longestWait(fixed[0]))
	for _, r := range rep.LongLine {
		p("; on the long line (%d users, waits of minutes) %.1f: %s", r.Users, r.PollsPerUserMinute, check(r.PollsPerUserMinute <= 15))
	}
	p(".\n\n")
	if len(rep.LongLine) > 0 || len(rep.group("scale")) > 0 {
		p("**What \"far fewer\" means, in numbers.** We read the target as at most half the polls of fixed 2 s polling (≤ 15 per waiting user-minute, a factor ≥ 2). Measured, by line length (the factor is 30 ÷ polls per user-minute; the last column is the busiest second of position requests against what fixed 2 s polling of the users waiting in that same second would send):\n\n")
		pollingByLength(b, rep)
	}
	p("**Polling.** The polls per user-minute are set by API.md's tiers and by how long users wait, not by the strategy: every user spends its last ~10 s of estimated wait in the 2 s tier (±20%%), which alone is the rate of fixed 2 s polling, so short waits cannot poll much less than 30 per minute; the 5 s tier (10–59 s) and the 10 s tier (60 s and more) pay off as waits grow. ")
	if sc := rep.group("scale"); len(sc) > 0 {
		for _, r := range sc {
			if !r.TierOnlyRun() {
				p("At %d users (waits up to %s) the default strategy polls **%.1f times per user-minute** (%.0f%% fewer than fixed 2 s polling; %s against ≤ 15), with downstream p95 %.0f ms. ", r.Users, longestWait(r), r.PollsPerUserMinute, 100*(1-r.PollsPerUserMinute/30), check(r.PollsPerUserMinute <= 15), r.OrderP95Ms)
			}
		}
	}
	for _, r := range rep.LongLine {
		p("On the long line (%d users in %s, waits up to %s, mostly in the 10 s tier: see *A long line* below) it polls **%.1f times per user-minute, %.1f× fewer than fixed 2 s polling** (%s against ≤ 15), with downstream p95 %.0f ms. ", r.Users, r.Scenario.Spike, longestWait(r), r.PollsPerUserMinute, pollingFactor(r.PollsPerUserMinute), check(r.PollsPerUserMinute <= 15), r.OrderP95Ms)
	}
	for _, r := range rep.group("sweep") {
		if r.Strategy.Name == BatchedJitter.Name && !r.Scenario.TierOnly && r.Scenario.Margin == fixed[0].Scenario.Margin {
			rel := "below"
			if r.PollsPerUserMinute > 30 {
				rel = "above"
			}
			p("Conversely, with short waits it is no better than fixed polling: at %d users (waits up to %s, the margin sweep's run at %.1f) it is %.1f, %s 30, because everyone is in the 2 s tier and the capped last poll comes sooner than 2 s. ", r.Users, longestWait(r), r.Scenario.Margin, r.PollsPerUserMinute, rel)
		}
	}
	if len(tier) > 0 {
		tpu := med(tier, func(r *Result) float64 { return r.PollsPerUser })
		tpm := med(tier, func(r *Result) float64 { return r.PollsPerUserMinute })
		if d := ppu - tpu; d >= 0.3 {
			p("The turn cap costs polls: %.1f per waiting user against %.1f with tier-only polling (%+.1f per user; %.1f against %.1f per user-minute, also because users see READY sooner and so wait fewer minutes). The capped poll lands just after the user's turn; when the user is not quite admitted yet (the admitter's jitter, the first batch's budget) it is told to come back within about an interval. That is the price of learning of admission when it happens instead of up to a tier later.\n\n", ppu, tpu, d, ppm, tpm)
		} else {
			p("The turn cap could be expected to add about one poll per user (a last, short poll at the turn); measured, it costs %+.1f: %.1f polls per waiting user against %.1f with tier-only polling. The capped poll *replaces* the tier poll that would have found the user READY up to a tier later, and a second short poll is needed only when the user is not quite admitted yet at its turn (the admitter's jitter, the first batch's budget), which the half-to-one-interval slack makes rare. Polls per user-minute do rise, %.1f against %.1f, because users see READY sooner and so wait fewer minutes for the same polls.\n\n", d, ppu, tpu, ppm, tpm)
		}
		p("To meet the polling target with short waits too, the tiers themselves would have to be longer (e.g. 5 s under 10 s of estimated wait). Since the turn cap now tells each user of its admission on time whatever its tier, longer tiers should not bring the herd back (not measured here); but the table is API.md's binding contract, so that is a contract decision, not made here.\n\n")
	} else {
		p("\n\n")
	}
}

// TierOnlyRun reports whether r ran the tier-only what-if.
func (r *Result) TierOnlyRun() bool { return r.Scenario.TierOnly }

// designText is the section on the design change, poll at one's turn.
func designText(b *strings.Builder, rep *Report, tier []*Result, plotLink string) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("\n## The design change: poll at one's turn\n\n")
	p("**Why.** With API.md's poll table taken literally, a waiting user sleeps a whole tier between polls (2 s ± 20%% near the front, 5 s or 10 s further back). Admission is exact and FIFO, but the order API does not see admissions; it sees users *learning* of them, at their next poll. Users who entered together in the spike poll together, so a second or two of admissions learn of it in the same tier period and reach the order API as one herd; the 2 s tier then keeps that herd in step for several periods. Batch shape alone cannot fix it, because the release to the order API happens at the polls, not at admission (the push runs below isolate the batch shape). The fix is in *how READY users are told to proceed*.\n\n")
	p("**What.** `Config.PollAfterMs(position, u)` in `estimate.go` answers min(tier ± 20%%, position / ADMIT_RATE_PER_SEC + half to one ADMIT_INTERVAL_MS). The tier stays the upper bound, so users far from the front poll exactly as API.md's table says; a user whose turn comes sooner than its tier is told to come back just after its turn. Admission is FIFO at an exact rate, so that poll lands right after the user's own admission and orders reach the order API as evenly as admission paces them. With it, API.md's table acts as an upper bound on `pollAfterMs`; the contract's wording (a tier spread by ±20%%) should say so.\n\n")
	p("**Before and after.** The what-if client below reproduces the previous server: it sleeps `Config.PollTiers.Ms(estimatedWaitSeconds)` and ignores a shorter `pollAfterMs` (`spike run -tier-only`). Same scenario, same seed, default strategy:\n\n")
	var rows []*Result
	for _, r := range rep.group("compare") {
		if r.Strategy.Name == BatchedJitter.Name {
			rows = append(rows, r)
		}
	}
	rows = append(rows, tier...)
	resultTable(b, rows)
	p("\n![downstream in flight, what-if tier-only polling](%s/inflight-tier-only.svg)\n\n", plotLink)
	var now *Result
	for _, r := range rows {
		if !r.Scenario.TierOnly {
			now = r
		}
	}
	if now != nil {
		t := tier[0]
		p("Same seed, one run each: downstream p95 %.0f ms with tier-only polling against %.0f ms with the turn cap; at most %d requests queued at the pool against %d. Compare with the `batched-jitter` panel of the in-flight plot above: with tier-only polling the pool fills in waves a poll tier apart; with the turn cap in-flight requests follow the admission rate (rate × service time ≈ %.0f connections busy). The margin sweep below shows the same at every margin (dashed line).\n", t.OrderP95Ms, now.OrderP95Ms, t.DownstreamMaxQueued, now.DownstreamMaxQueued, t.ConfiguredPerSec*t.Scenario.Service.Mean.Seconds())
	}
}

func runsText(xs []float64) string {
	if len(xs) < 2 {
		return ""
	}
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	return " (runs: " + strings.Join(parts, ", ") + ")"
}

func microSection(b *strings.Builder, mr, pinned *MicroResults, ncpu int) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	runs := 1
	if len(mr.Ops) > 0 && len(mr.Ops[0].RatioRuns) > 0 {
		runs = len(mr.Ops[0].RatioRuns)
	}
	p("\n## Micro-benchmarks (real Redis)\n\n")
	p("`go test -bench . -count %d` in `bench/`, against a redis-server spawned for the run (the version of the machine table). Each operation runs through the handler path in Go and, right after in the same run against the same server, `redis-benchmark` sends EVALSHA of the same script (same key layout, `__rand_int__` user ids) at the same concurrency. The ratio is Go ops/s ÷ redis-benchmark ops/s (goal ≥ 0.8). Each cell is the run with the **median ratio of %d** (its ops/s are from that same run); every run's ratio follows it.\n\n", runs, runs)
	p("Two modes, each from its own `go test` run:\n\n")
	p("- **unpinned** (`make bench-micro`, `%s/micro-results.json`): no affinity; the Go benchmark process (GOMAXPROCS %d, CPUs %s), redis-benchmark and redis-server share the %d cores as the scheduler sees fit. It measures the whole box: the Go client's CPU competes with redis-server's, while redis-benchmark, a lean C event loop, leaves Redis most of a core.\n", "docs/bench", mr.GOMAXPROCS, orUnknown(mr.ClientCPUs), ncpu)
	if pinned != nil {
		p("- **pinned** (`make bench-micro-pinned`, `docs/bench/micro-pinned-results.json`): redis-server on CPU %s alone (`taskset -c %s`); the Go benchmark process on CPU %s with GOMAXPROCS %d (`go test -exec 'taskset -c 1'`), and redis-benchmark on the same CPU (`taskset -c 1`), one after the other, at the same concurrency. Both clients get the same one-core budget and Redis its own core, so the ratio compares what each client can drive through one core: where Redis is the bottleneck on both sides it tends to 1, where the client is, it is the ratio of client CPU per operation (C loop vs handler + JSON + go-redis).\n\n", pinned.RedisCPUs, pinned.RedisCPUs, orUnknown(pinned.ClientCPUs), pinned.GOMAXPROCS)
	} else {
		p("- **pinned**: skipped (no `%s/micro-pinned-results.json`: `taskset` missing or fewer than 2 CPUs); only the unpinned ratios are reported.\n\n", "docs/bench")
	}
	pin := map[string]MicroOp{}
	if pinned != nil {
		for _, o := range pinned.Ops {
			pin[o.Name] = o
		}
	}
	p("| operation | Go path | redis-benchmark | clients | unpinned: Go / redis-benchmark ops/s | **unpinned ratio**, median (runs) | pinned: Go / redis-benchmark ops/s | **pinned ratio**, median (runs) |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	below, belowPinned := 0, 0
	verdict := func(r float64) string {
		if r >= 0.8 {
			return "met"
		}
		return "below 0.8"
	}
	for _, o := range mr.Ops {
		if o.Ratio < 0.8 {
			below++
		}
		pc, pr := "n/a", "n/a"
		if q, ok := pin[o.Name]; ok {
			if q.Ratio < 0.8 {
				belowPinned++
			}
			pc = fmt.Sprintf("%.0f / %.0f", q.GoOpsPerSec, q.RedisBenchPerSec)
			pr = fmt.Sprintf("**%.2f** (%s)%s", q.Ratio, verdict(q.Ratio), runsText(q.RatioRuns))
		}
		p("| %s | %s | %s | %d | %.0f / %.0f | **%.2f** (%s)%s | %s | %s |\n", o.Name, o.Path, o.Script, o.Concurrency, o.GoOpsPerSec, o.RedisBenchPerSec, o.Ratio, verdict(o.Ratio), runsText(o.RatioRuns), pc, pr)
	}
	p("\n**Goal ≥ 0.8.** Unpinned: %d of %d operations meet it", len(mr.Ops)-below, len(mr.Ops))
	if pinned != nil {
		p("; pinned: %d of %d", len(pinned.Ops)-belowPinned, len(pinned.Ops))
	}
	p(". What the ratios include beyond the CPU budget:\n\n")
	p("- **enter** pipelines two commands, EVALSHA enter and SADD of the room into the rooms set (plus one more SADD, a round trip, for the first user of an empty line: once per run here), where redis-benchmark sends the script alone: twice the commands Redis parses per operation.\n")
	p("- **admit batch** is two round trips, SMEMBERS of the rooms and then the pipeline of admit scripts (one room here), against one EVALSHA for redis-benchmark, at concurrency 1 where the round trip is the whole cost.\n")
	p("- **position** is one EVALSHA either way: its gap is the client-side CPU alone (handler, JSON, go-redis).\n")
	p("- **gate check** is two scripts (order_begin, then unlock after the instant downstream answer), compared with the combined rate of the two scripts run by redis-benchmark one after the other.\n\n")
	if pinned != nil {
		var parts []string
		for _, o := range mr.Ops {
			if q, ok := pin[o.Name]; ok {
				parts = append(parts, fmt.Sprintf("%s %.2f → %.2f", o.Name, o.Ratio, q.Ratio))
			}
		}
		p("Unpinned → pinned: %s. The unpinned figure is what a deployment that shares cores between the application and Redis sees; the pinned one isolates the client's cost per operation against redis-benchmark's at equal CPU, with Redis never starved. Neither changes the goal: where a ratio stays under 0.8 when pinned, the gap is the client path itself (the extra command or round trip above, and the handler's routing and JSON on one core), not the scheduler.\n", strings.Join(parts, ", "))
	}
	p("\n### Position latency and memory with many users waiting\n\n")
	p("| | %d waiting | %d waiting | ratio (goal ≤ 1.5) |\n| --- | --- | --- | --- |\n", mr.PositionSmallN, mr.PositionLargeN)
	p("| GET /queue/position through the handler, one client, mean | %.1f µs | %.1f µs | **%.2f**%s |\n", mr.PositionSmallUs, mr.PositionLargeUs, mr.PositionRatio, runsText(mr.PositionRatioRuns))
	p("| ZRANK alone (redis-benchmark, one client) | %.1f µs | %.1f µs | %.2f |\n\n", mr.ZrankSmallUs, mr.ZrankLargeUs, mr.ZrankLargeUs/mr.ZrankSmallUs)
	p("Position at 1M waiting is %s (goal ≤ 1.5×): ZRANK walks the skiplist in O(log n), about %.1f levels more at 1M than at 10k (one level per factor 4), a few hundred nanoseconds against a round trip and handler of tens of microseconds; in the same run ZRANK alone changes %.2f× and the handler path %.2f×; differences of this size are the shared machine's noise (every run's ratio is listed).\n\n", check(mr.PositionRatio <= 1.5), math.Log(float64(mr.PositionLargeN)/float64(mr.PositionSmallN))/math.Log(4), mr.ZrankLargeUs/mr.ZrankSmallUs, mr.PositionRatio)
	p("Filling: %s (%.1f s for %d users).\n\n", mr.FillMethod, mr.FillSeconds, mr.MemUsers)
	p("| memory | value |\n| --- | --- |\n")
	p("| `used_memory` before / after | %d B / %d B |\n", mr.MemBefore, mr.MemAfter)
	p("| **per waiting user** (delta / users; goal ≤ 100 B) | **%.1f B** (%s) |\n", mr.MemPerUser, check(mr.MemPerUser <= 100))
	p("| of which the line (`MEMORY USAGE` of the sorted set / users) | %.1f B |\n", mr.MemLinePerUser)
	p("| user id length | %d bytes |\n", mr.MemUserIDBytes)
	p("| marks (one per second of entries) | %d entries |\n\n", mr.MemMarks)
	p("**What dominates it: the sorted set that is the line.** A sorted set past 128 members is a skiplist plus a hash table (Redis 7.0, jemalloc with 8-byte size classes). Per member: a skiplist node (element pointer, score, backward pointer, and 16 B of forward pointer + span per level, 1.33 levels on average: 40 B at one level, 56 B at two, so ≈ 45 B with the allocator's rounding), a dict entry (key, value and next pointers: 24 B), the dict's bucket array (2^20 pointers for 1M members: ≈ 8 B), and the member itself, an sds string (3 B header + id + NUL: %d B, rounded to the next size class: %d B). That is ≈ %d B, what `MEMORY USAGE` reports for the line; the remaining %.0f B per user in `used_memory` is not attributed to a key (allocator and bookkeeping; the marks and the sequence are a few hundred bytes in all).\n\n", 3+mr.MemUserIDBytes+1, sizeClass(3+mr.MemUserIDBytes+1), 45+24+8+sizeClass(3+mr.MemUserIDBytes+1), mr.MemPerUser-mr.MemLinePerUser)
	if mr.MemPerUser > 100 {
		p("**The ≤ 100 B goal is not met (%.1f B).** About 77 B per member is the fixed cost of a Redis sorted set; only the id's own allocation can shrink. ", mr.MemPerUser)
	}
	p("Ids of at most 12 bytes fit the 16 B size class (8 B less per user than these %d-byte ids); real ids are longer: a JWT `sub` is often a 36-byte UUID (an sds of 40 B, 16 B *more* per user than here) and may be up to 128 characters. Shorter members would mean storing a fixed-length hash of the user id (e.g. 12 bytes of a keyed hash) instead of the id: that saves the id's length in the line, but costs a core change (every script and key built from the id), the readability of the line for operators, and a collision argument; mapping ids to sequence numbers would add a key per user, more memory rather than less. A compact encoding (listpack) is only practical for small sets: at 1M members its ZRANK is O(n), which the position goal forbids. At %.0f B per waiting user a room full to the `QUEUE_CAPACITY` default of 100,000 holds about %.0f MB of Redis memory, and a million waiting about %.0f MB, so we keep the ids as they come.\n", mr.MemUserIDBytes, mr.MemPerUser, mr.MemPerUser*1e5/1e6, mr.MemPerUser)
}

// sizeClass is jemalloc's size class for n bytes (8-byte quantum up to 64,
// 16 B steps up to 128).
func sizeClass(n int) int {
	if n <= 64 {
		return (n + 7) / 8 * 8
	}
	return (n + 15) / 16 * 16
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
