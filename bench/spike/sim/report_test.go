package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
)

// fakeRun is a result with every figure the report reads.
func fakeRun(group string, st Strategy, sc Scenario) *Result {
	return &Result{Group: group, Strategy: st, Scenario: sc, Users: sc.Users, Ordered: sc.Users - 5, Seconds: 30,
		OrderP50Ms: 201, OrderP95Ms: 238, OrderP99Ms: 240, OrderMaxMs: 241, DownstreamMaxInFlight: 19, DownstreamMaxQueued: 1,
		AdmittedPerSec: 70, ConfiguredPerSec: 70, Polls: 300, PollsPerUser: 3, WaitingUserMinutes: 10, PollsPerUserMinute: 30,
		ReadyLearnP50Ms: 80, ReadyLearnP95Ms: 140, ReadyLearnMaxMs: 900, RequestsPerVisitor: 5,
		ByWait:       []WaitBin{{FromSeconds: 0, Users: 10, Requests: 4}, {FromSeconds: 270, Users: 5, Requests: 11}},
		PollsPerStep: []int{0, 200, 100}, WaitingPerStep: []float64{50, 100, 40}, PeakPollsPerSec: 200, PeakPollsAtSec: 1,
		Fixed2sAtPeakPerSec: 50, PeakWaiting: 100, Fixed2sPeakPerSec: 50, MaxWaitSeconds: 2.5,
		InFlight: []int{1, 2}, Queued: []int{0, 0}, Status: map[string]int{"POST /orders 201": 95}, RedisCommands: map[string]int64{"evalsha": 300}}
}

func fakeInputs() *Inputs {
	sc := DefaultScenario()
	sc.ServiceSpec = sc.Service.String()
	tierOnly := sc
	tierOnly.TierOnly, tierOnly.PollTiers = true, PreviousPollTiers
	sweep := sc
	sweep.Margin = 0.5
	spike := &Report{Machine: Machine{NumCPU: 3}, Started: "a", Finished: "b"}
	for _, st := range Strategies {
		spike.Runs = append(spike.Runs, fakeRun("compare", st, sc), fakeRun("sweep", st, sweep))
	}
	spike.Runs = append(spike.Runs, fakeRun("tier-only", BatchedJitter, tierOnly), fakeRun("push", Batched, sc), fakeRun("scale", BatchedJitter, sc))
	tiers := &Report{}
	for _, t := range []string{PreviousPollTiers, waitroom.DefaultPollTiers} {
		s := TierSweepScenario()
		s.PollTiers = t
		tiers.Runs = append(tiers.Runs, fakeRun("tiers", BatchedJitter, s))
	}
	micro := &MicroResults{Ops: []MicroOp{{Name: "enter", Ratio: 0.9, RatioRuns: []float64{0.8, 0.9, 1}}}, PositionSmallN: 10_000, PositionLargeN: 1_000_000,
		PositionSmallUs: 10, PositionLargeUs: 11, PositionRatio: 1.1, LookupSmallUs: 1, LookupLargeUs: 1.2, MemUsers: 1 << 20, MemPerUser: 110, MemLinePerUser: 93, MemUserIDBytes: 13,
		MemBucketsPerUser: 93, MemBuckets: 1 << 18, MemBucketSizes: map[int]int{4: 1 << 18}, MemFieldBytes: 11, MemKeyBytes: 18, MemBorn: 1_780_000_000_000, MemKeys: 1<<18 + 6, MemExpires: 1 << 18}
	notify := &NotifyResults{Machine: Machine{Redis: "redis-server 7.9"}, Started: "c", Finished: "d",
		Scenario: NotifyScenario{Visitors: 400, AdmitRatePerSec: 25, AdmitIntervalMs: 150, WarmupSeconds: 2, EntryTokenTTLSeconds: 300},
		Results: []NotifyResult{{Mode: NotifySSE, Visitors: 360, P50Ms: 1.5, P95Ms: 5, MaxMs: 13, Requests: 800},
			{Mode: NotifyPoll, Visitors: 359, P50Ms: 65.8, P95Ms: 119.4, MaxMs: 134, Requests: 1000}}}
	intake := &IntakeResults{Machine: "2 CPUs, redis 7.9",
		Acceptance: []IntakeAcceptance{{Intake: "direct", Clients: 32, Requests: 1000, PerSecond: 10000, P50Ms: 2, P95Ms: 5, P99Ms: 8, Status: 200},
			{Intake: "broker", Clients: 32, Requests: 1000, PerSecond: 2500, P50Ms: 8, P95Ms: 20, P99Ms: 32, Status: 202}},
		Drain: []IntakeDrain{{Path: "store (batches of 10)", Entries: 1000, Seconds: 0.125, PerSecond: 8000}}}
	return &Inputs{Spike: spike, LongLine: &Report{Runs: []*Result{fakeRun("longline", BatchedJitter, sc)}}, Tiers: tiers, Micro: micro, Notify: notify, Intake: intake,
		RedisCost: fakeRedisCost(), Failover: fakeFailover()}
}

// fakeFailover is bench/failover's results with round figures.
func fakeFailover() *FailoverResults {
	sc := FailoverScenario{Key: "single-lag", Name: "1 s of lag", Topology: "primary and replica", DurableWrites: "off", LagMs: 1000, Frozen: true,
		Visitors: 300, RatePerSec: 50, EntersAcked: 300, EntersLost: 12, AccountsAcked: 150, AccountsLost: 12, AnonymousAcked: 150, PlacesRestored: 7, DuplicateSeqs: 11, FIFOInversions: 40, FIFOPairs: 44000, DoubleAdmissions: 3, Unordered: 4,
		Orders: 320, TokensOrdered: 300, MaxOrdersPerToken: 2, TokensOrderedTwice: 20, RecoverySeconds: 0.25, RejoinSeconds: 1.5,
		Answers: []FailoverAnswer{{Phase: "lag", Route: "orders", Answer: "201", Count: 20}, {Phase: "after", Route: "position", Answer: "200", Count: 1000},
			{Phase: "after", Route: "position", Answer: "503 Retry-After", Count: 1234}, {Phase: "after", Route: "enter", Answer: "200 slow", Count: 5}}}
	return &FailoverResults{Machine: Machine{Redis: "redis-server 7.9"}, Started: "f", Seconds: 200, Scenarios: []FailoverScenario{sc},
		WaitCost:   FailoverWaitCost{Calls: 2000, OffP50: 0.1, OffP95: 0.2, OffP99: 0.3, WaitP50: 0.25, WaitP95: 0.5, WaitP99: 1, RoundTripsOff: 2, RoundTripsWait: 2},
		RecordCost: FailoverRecordCost{Server: "dynalite 9.9", Calls: 2000, P50: 1.5, P95: 7.25, P99: 20}}
}

// fakeRedisCost is bench/rediscost's results with round figures: 2,000
// calls, position 200,000 instructions a call with the limiter on and
// 100,000 off, a GET 5,000.
func fakeRedisCost() *RedisCostResults {
	op := func(key, name, limiter string, perCall int64) RedisCostOp {
		return RedisCostOp{Key: key, Name: name, Limiter: limiter, Calls: 2000, Instructions: 2000 * perCall, Timer: 2000 * perCall / 50}
	}
	commit := op("gateCommit", "gate commit", "on", 70_000)
	commit.NoLimiter = true
	admit := op("admitBatch", "admit batch", "", 1_000_000)
	admit.Admitted, admit.Calls, admit.Instructions = 10, 100, 100_000_000
	return &RedisCostResults{Machine: Machine{Redis: "redis-server 7.9"}, Valgrind: "valgrind-3.99", Started: "e", Seconds: 300,
		Method: RedisCostMethod{Waiting: 100_000, Calls: 2000, Warmup: 200, Chunk: 250, AdmitCalls: 100, AdmitSleepMs: 120, AdmitWarmupS: 65, AdmitWarmups: 542,
			Limits: waitroom.Limits{ClientRatePerSec: 5, ClientBurst: 20, IPRatePerSec: 500, IPBurst: 2000}, IdlePerSec: 5000, Hz: 10, FillPerSec: 5000, FillSeconds: 23},
		Ops: []RedisCostOp{commit, op("position", "position", "on", 200_000), op("position", "position", "off", 100_000),
			op("enterNew", "enter (new user)", "on", 250_000), op("enterNew", "enter (new user)", "off", 150_000), admit, op("get", "plain GET", "", 5000)},
		Functions: []RedisCostFunc{{Name: "luaV_execute", Object: "redis-server", InclusiveOn: 160_000, SelfOn: 11_000, CallsOn: 1, InclusiveOff: 60_000, CallsOff: 1, TopBySelfOrder: 1}},
		Memory: RedisCostMemory{Users: 1_000_000, UserIDBytes: 13, Before: 2_000_000, After: 112_000_000, LineBytes: 101_700_000,
			Callers: 50_000, CallersBefore: 112_000_000, CallersAfter: 131_000_000, KeysPerCaller: 2, ExpiresPerCaller: 2}}
}

func TestRedisCostHeadline(t *testing.T) {
	h, err := fakeRedisCost().Headline()
	if err != nil {
		t.Fatal(err)
	}
	if want := (RedisCostHeadline{PositionInstructions: 200_000, EnterNewInstructions: 250_000, LimiterShare: 0.5, BytesPerWaitingUser: 110}); h != want {
		t.Errorf("headline %+v, want %+v", h, want)
	}
	if _, err := (&RedisCostResults{}).Headline(); err == nil {
		t.Error("a headline without position")
	}
	rows := RedisCostRows(fakeRedisCost())
	if len(rows) != 5 || rows[1].Key != "position" || rows[1].Ratio != 2 || rows[3].Off != nil || rows[3].On.PerCall() != 1_000_000 {
		t.Errorf("rows: %+v", rows)
	}
}

func TestReportRendersFromTheResults(t *testing.T) {
	dir := t.TempDir()
	f := Files{Spike: filepath.Join(dir, "r", "spike.json"), Tiers: filepath.Join(dir, "r", "tiers.json"), Notify: filepath.Join(dir, "r", "notify.json"),
		Intake: filepath.Join(dir, "r", "intake.json"), RedisCost: filepath.Join(dir, "r", "cost.json"), Failover: filepath.Join(dir, "r", "failover.json"), Markdown: filepath.Join(dir, "B.md"), Plots: filepath.Join(dir, "r")}
	md, err := WriteReport(fakeInputs(), f)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"share these 3 cores",                                    // the recorded machine, not a constant
		"`r/spike.json`",                                         // paths as given, relative to the Markdown
		"admitted per s (configured 70)",                         // the configured rate of the results
		"## Poll tiers: requests per visitor",                    // the tier sweep
		"**The choice: `POLL_TIERS=" + waitroom.DefaultPollTiers, // the default, marked chosen
		"**11.00** (5)",                                          // requests per visitor at ≥ 270 s, from ByWait
		"an integer entry of 4.96 B on average",                  // numbers 1 to 2^20: 127 of 2 B, 3,968 of 3, 28,672 of 4, the rest 5
		"(20 B), the listpack's allocator class (4.1 B",          // 20 + 4 × 17.96 = 91.9 B in the 96 B class
		"136 B a bucket, 34.0 B per account at 4.00 accounts",    // 20 + 4.1 + 16 + 32 (18-char key) + 2 × 32
		"524288 slots of 8 B for its 262150 keys and 262144 for their 262144 expiries, add 6.0 B per account", //
		"That is ≈ 58.0 B", // 18.0 + 34.0 + 6.0 (2^19 + 2^18 slots of 8 B over 2^20)
		"≈ 42.0 B against the 93.0 B it measures, and 16.0 B", // uncharged: (8 + 32) / 4 + 6
		"cost ≈ 87 B a user for these ids",                    // 15 + 32 + 16 + 16 + 8 for 13-byte ids at 2^20 users
		"it cost 55 B more",                                   // a UUID against 13-byte ids: 32 in the places, 23 in the queue
		"## How soon the visitor knows",                       // bench/notify's section
		"`r/notify.json`",                                     // named among the inputs
		"`ADMIT_INTERVAL_MS` 150, 400 visitors",               // the recorded scenario, not constants
		"admitted at 25 a second",                             //
		"| polling as `pollAfterMs` says | 359 | 65.8 ms | 119.4 ms | 134.0 ms | 2.5 |", // requests per visitor: 1000 / 400
		"## Intake: direct versus broker",                                               // bench/intake's section
		"`r/intake.json`",                                                               //
		"| `broker` | 32 | 1000 | 0 | 2500 | 8.00 ms | 20.00 ms | 32.00 ms | 202 |",     // the recorded figures
		"×0.25 the direct throughput, with p50 ×4.0 and p99 ×4.0",                       // ratios computed from them
		"| store (batches of 10) | 1000 | 0.12 | 8000 |",                                //
		"## Redis instructions per call (issue 20)",                                     // bench/rediscost's section
		"`r/cost.json`", //
		"| position | 200,000 | 100,000 | 2.00× | 40.0 |",                                     // per call, on ÷ off, in GETs: computed
		"| gate commit (takes no limiter) | 70,000 | – | – | 14.0 |",                          //
		"**The limiter's share of position: 50.0%** (100,000 of 200,000",                      //
		"enter (new user) 1.67×",                                                              // 250,000 ÷ 150,000
		"| admit batch | 1,000,000 | – | – | 200.0 |",                                         //
		"and admits 10 users",                                                                 //
		"| **`luaV_execute`** (1) | redis-server | 160,000 | 60,000 | 1.00 / 1.00 | 11,000 |", //
		"| **per waiting user** at 1,000,000 waiting (13-byte ids) | **110.0 B** |",           // (112,000,000 − 2,000,000) ÷ 1,000,000
		"| per caller with live limiter buckets (its id's and its IP's) | 380.0 B",            // 19,000,000 ÷ 50,000
		"differ by +0.0 B, the line's own `MEMORY USAGE` by +8.7 B",                           // against the micro-benchmarks' 110 and 93
		"3.5 waiting users' worth",                                                            // 380 ÷ 110
		"## A failover mid-sale (issue 24)",                                                   // bench/failover's section
		"`r/failover.json`",                                                                   //
		"| 1 s of lag | primary and replica | off | off | no | 300 / **12** | 150 / 12 | 150 / 0 | 7 | 11 | 40 (44,000) | 3 | 320 / 300 (2) | **4** | **20** | 0.2 s | 1.5 s | 0 |",
		"| 1 s of lag, primary and replica | 20 answers: all plain | 2,239 answers: position 503 Retry-After ×1,234; enter 200 slow ×5 |",
		"| wait | 0.25 ms | 0.50 ms | 1.00 ms | 2 |",  //
		"0.15 ms at the median here (0.30 ms at p95)", // wait − off
		"on 2,000 orders against dynalite 9.9 on this machine (in memory, one HTTP connection): **1.50 ms at p50, 7.25 ms at p95** (20.00 ms at p99)", // the record's claim
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(md, "<no value>") {
		t.Errorf("report has an unset value:\n%s", md)
	}
	for _, svg := range []string{"inflight.svg", "inflight-tier-only.svg", "p95-vs-margin.svg", "longline-polls.svg", "tiers-requests.svg"} {
		if _, err := os.Stat(filepath.Join(f.Plots, svg)); err != nil {
			t.Errorf("plot %s: %v", svg, err)
		}
	}
}

func TestTierWords(t *testing.T) {
	for in, want := range map[string]string{
		"60:10000,10:5000,0:2000": "every 10 s while the estimated wait is 60 s or more, every 5 s from 10 s, every 2 s below (±20%)",
		"0:60000":                 "every 60 s whatever the estimated wait (±20%)",
	} {
		if got := tierWords(in); got != want {
			t.Errorf("tierWords(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRequestsForWait(t *testing.T) {
	r := &Result{ByWait: []WaitBin{{FromSeconds: 240, Users: 10, Requests: 10}, {FromSeconds: 270, Users: 10, Requests: 12}, {FromSeconds: 300, Users: 30, Requests: 14}}}
	if got, n := r.RequestsForWait(270); got != 13.5 || n != 40 {
		t.Errorf("RequestsForWait(270) = %v, %d; want 13.5, 40", got, n)
	}
	if _, n := r.RequestsForWait(400); n != 0 {
		t.Errorf("RequestsForWait(400) counts %d users", n)
	}
}

func TestSizeClass(t *testing.T) {
	for n, want := range map[int]int{1: 8, 9: 16, 16: 16, 17: 32, 40: 48, 64: 64, 65: 80, 72: 80, 128: 128, 129: 160, 200: 224, 257: 320} {
		if got := sizeClass(n); got != want {
			t.Errorf("sizeClass(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestPolling(t *testing.T) {
	sc := DefaultScenario()
	if got := Polling(sc); got != "pollAfterMs" {
		t.Errorf("default: %q", got)
	}
	sc.TierOnly = true
	if got := Polling(sc); got != "tier only" {
		t.Errorf("tier-only: %q", got)
	}
	sc.Notify = "push"
	if got := Polling(sc); got != "push" {
		t.Errorf("push: %q", got)
	}
}

func TestListpackInt(t *testing.T) {
	for v, want := range map[int64]int{0: 2, 127: 2, 128: 3, 4095: 3, 4096: 4, 32767: 4, 32768: 5, 1<<23 - 1: 5, 1 << 23: 6, 1<<31 - 1: 6, 1 << 31: 10, 1_780_000_000_000: 10} {
		if got := listpackInt(v); got != want {
			t.Errorf("listpackInt(%d) = %d, want %d", v, got, want)
		}
	}
	if got := meanIntEntry(128); got != (127*2+3)/128.0 {
		t.Errorf("meanIntEntry(128) = %v", got)
	}
}
