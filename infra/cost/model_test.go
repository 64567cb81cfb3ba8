package cost

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
)

func fixture(t *testing.T) Inventory {
	t.Helper()
	raw, err := os.ReadFile("testdata/fixture.template.json")
	if err != nil {
		t.Fatal(err)
	}
	inv, err := ParseTemplate(raw)
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

func TestParseFixture(t *testing.T) {
	inv := fixture(t)
	for role, want := range map[string]string{RouteEnter: "EnterFn", RoutePosition: "PositionFn", RouteOrder: "OrderFn", "schedule": "AdmitFn"} {
		if f, ok := inv.FunctionFor(role); !ok || f.ID != want {
			t.Errorf("%s: got %q, want %s", role, f.ID, want)
		}
	}
	admit, _ := inv.FunctionFor("schedule")
	if admit.MemoryMB != 128 || admit.Arch != "arm64" || admit.PlatformLines() || !admit.EMFSurvives() || admit.Env["ADMIT_BATCHES"] != "700" {
		t.Errorf("admit: %+v", admit)
	}
	if _, ok := admit.Env["REDIS_URL"]; ok {
		t.Error("an intrinsic function was read as a literal variable")
	}
	if len(inv.Alarms) != 2 || len(inv.InterfaceEndpoints) != 1 || inv.InterfaceEndpoints[0].AZs != 2 ||
		inv.InterfaceEndpoints[0].Service != "secretsmanager" || inv.NATGateways != 1 || inv.PublicIPv4 != 1 ||
		inv.Dashboards != 1 || inv.Secrets != 1 || inv.Budgets != 1 || len(inv.ServerlessCaches) != 1 {
		t.Errorf("inventory: %+v", inv)
	}
}

// handMeasured stands in for Measure so that the arithmetic is pinned on
// its own: a visitor polls 9 times WAITING (the last within the next batch
// of its turn: the store answers it) and once READY; an idle admit
// invocation is one batch in 1 ms, one with a line 778 batches in 70 s.
func handMeasured(t *testing.T) Measured {
	cfg, err := ConfigFromEnv(map[string]string{"ADMIT_RATE_PER_SEC": "100"})
	if err != nil {
		t.Fatal(err)
	}
	return Measured{
		Config: cfg,
		Walk:   Walk{Position: 30000, WaitingPolls: 9, NearPolls: 1, ReadyPolls: 1, ReadyAfterMs: 300_000},
		// The idle run's one metric line ingests 100 B with its overhead.
		IdleAdmit:    AdmitRun{Seconds: 0.001, Batches: 1, Flushes: 1, EMF: []string{strings.Repeat("x", 100-EventOverheadBytes)}},
		BusyAdmit:    AdmitRun{Seconds: 70, Batches: 778, Rooms: 1, Flushes: 70},
		EnterEMF:     200,
		OrderEMF:     300,
		HeartbeatEMF: 100,
		// One second of a room's admission records.
		AdmitSecondEMF: 1000,
		IdleMetrics:    []string{"AdmitBatches"},
		EventMetrics:   26,
	}
}

// TestFixtureArithmetic pins every line item of the fixture, figured by
// hand. 730 h a month; 43,800 admit invocations (rate(1 minute)); log
// storage is kept 30 of 30.4167 days; functions log JSON at WARN (no
// platform lines).
func TestFixtureArithmetic(t *testing.T) {
	r, err := Estimate(fixture(t), handMeasured(t), USEast1, Options{WaitSeconds: 300, OrderAPIMs: 99})
	if err != nil {
		t.Fatal(err)
	}
	days := 730 / 24.0
	idle := map[string]float64{
		"ElastiCache Serverless storage (valkey)": 0.1 * 730 * 0.084,                    // 6.132
		"ElastiCache ECPU (idle admit batches)":   43800 * 1 * 0.0023e-6,                // 0.00010074
		"Lambda admit requests":                   43800 * 0.20e-6,                      // 0.00876
		"Lambda admit duration":                   43800 * 0.001 * 0.125 * 0.0000133334, // 1 ms × 128 MB
		"CloudWatch Logs (admit)":                 0.00438*0.50 + 0.00438*30/days*0.03,  // 43,800 heartbeats of 100 B
		"CloudWatch custom metrics":               0.30,                                 // AdmitBatches
		"CloudWatch alarms":                       2*0.10 + 1*0.30,                      // math alarm of 2 metrics, one 10-s alarm
		"CloudWatch dashboards":                   3.00,                                 //
		"VPC interface endpoint secretsmanager":   2 * 730 * 0.01,                       // 14.60
		"NAT gateways":                            730 * 0.045,                          // 32.85
		"Public IPv4 addresses":                   730 * 0.005,                          // 3.65
		"Secrets Manager secrets":                 0.40,                                 //
		"AWS Budgets":                             0,                                    // no action
		"EventBridge schedule":                    0,                                    //
	}
	checkItems(t, "idle", r.Idle, idle, 61.443253340365)

	line := 1e6 / 100 / 60 // admit invocations while a million visitors' line lasts
	perMillion := map[string]float64{
		"API Gateway HTTP API requests":                 12 * 1.00,                                  // enter + 10 polls + order
		"Lambda requests":                               12 * 0.20,                                  //
		"Lambda duration enter":                         1e6 * 0.001 * 0.25 * 0.0000133334,          // 1 ms billed
		"Lambda duration position":                      10e6 * 0.001 * 0.25 * 0.0000133334,         //
		"Lambda duration order-gate":                    1e6 * 0.100 * 0.25 * 0.0000166667,          // 0.63 + 99 ms → 100 ms, x86
		"Lambda duration admit (while the line exists)": line * 69.999 * 0.125 * 0.0000133334,       // 70,000 − 1 ms
		"ElastiCache ECPU":                              (30e6 + line*(778*10-1)) * 0.0023e-6,       // 8 + 8×0 + 5 + 4 + 9 + 3 + 1 a visitor: its 10 polls read the view, at most 10 × 10 a second over 100 admitted: 1 read of 1 command
		"CloudWatch Logs enter":                         0.2*0.50 + 0.2*30/days*0.03,                // 200 B a visitor
		"CloudWatch Logs position":                      0,                                          // no EMF, no platform lines
		"CloudWatch Logs order-gate":                    0.3*0.50 + 0.3*30/days*0.03,                // 300 B a visitor
		"CloudWatch Logs admit":                         line * 76900 / 1e9 * (0.50 + 30/days*0.03), // 70 × 1,100 B − 100 B idle
		"CloudWatch custom metrics (event)":             25 * 3 / 730.0 * 0.30,                      // 3 hours of line
		"NAT gateway data (orders)":                     4.096 * 0.045,                              // 4,096 B an order
	}
	checkItems(t, "per million", r.PerMillion, perMillion, 15.431484568)
	if r.RequestsPerVisitor != 12 {
		t.Errorf("requests per visitor %d, want 12", r.RequestsPerVisitor)
	}
	if s := r.Summary(); s.IdleMonthlyUSD != 61.44 || s.PerMillionUSD != 15.43 {
		t.Errorf("summary %+v", s)
	}
}

func checkItems(t *testing.T, what string, items []Item, want map[string]float64, total float64) {
	t.Helper()
	sum := 0.0
	for _, it := range items {
		w, ok := want[it.Name]
		if !ok {
			t.Errorf("%s: unexpected item %q ($%.6f)", what, it.Name, it.USD)
			continue
		}
		if !near(it.USD, w) {
			t.Errorf("%s: %s = $%.9f, want $%.9f (%s)", what, it.Name, it.USD, w, it.Detail)
		}
		delete(want, it.Name)
		sum += it.USD
	}
	for name := range want {
		t.Errorf("%s: missing item %q", what, name)
	}
	if !near(sum, total) {
		t.Errorf("%s: total $%.9f, want $%.9f", what, sum, total)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestWalkVisitor(t *testing.T) {
	cases := []struct {
		tiers                 string
		wait                  float64
		waiting, ready, total int
	}{
		// Polls at 10, 20 s WAITING (positions 20, 10), 30 s READY.
		{"0:10000", 30, 2, 1, 5},
		// The tier is longer than the wait: one poll, capped at the turn
		// (30 s + 0.75 of a 1-s interval), READY.
		{"0:60000", 30, 0, 1, 3},
	}
	for _, c := range cases {
		cfg, err := ConfigFromEnv(map[string]string{"ADMIT_RATE_PER_SEC": "1", "ADMIT_INTERVAL_MS": "1000", "POLL_TIERS": c.tiers})
		if err != nil {
			t.Fatal(err)
		}
		w, err := WalkVisitor(cfg, c.wait)
		if err != nil {
			t.Fatal(err)
		}
		if w.WaitingPolls != c.waiting || w.ReadyPolls != c.ready || w.Requests() != c.total {
			t.Errorf("%s, %g s: %+v (%d requests), want %d waiting, %d ready, %d requests", c.tiers, c.wait, w, w.Requests(), c.waiting, c.ready, c.total)
		}
	}
}

// The page behind CloudFront (issue 36) follows the room's line at a
// poller's pace and asks its position only at its turn. At 1 admitted a
// second and a 10-s tier, a visitor 30 s back fetches the line at 10, 20
// and 30 s, the front it sees half a second old (positions 21, 11, 1):
// the last puts its turn (1 s + 0.75 of an interval) before its tier, so
// it asks its position then, READY at 31.75 s. Enter, one poll, order;
// where a poller of its position polls at 10, 20 (WAITING) and 30 s.
func TestWalkPage(t *testing.T) {
	cases := []struct {
		tiers          string
		fetches, ready int
		readyAfterMs   int64
	}{
		{"0:10000", 3, 1, 31750},
		// The tier is longer than the wait: no line fetch, its position
		// at its turn (30 s + 0.75 of a 1-s interval), READY.
		{"0:60000", 0, 1, 30750},
	}
	for _, c := range cases {
		cfg, err := ConfigFromEnv(map[string]string{"ADMIT_RATE_PER_SEC": "1", "ADMIT_INTERVAL_MS": "1000", "POLL_TIERS": c.tiers})
		if err != nil {
			t.Fatal(err)
		}
		w, err := WalkPage(cfg, 30)
		if err != nil {
			t.Fatal(err)
		}
		if w.LineFetches != c.fetches || w.WaitingPolls != 0 || w.ReadyPolls != c.ready || w.ReadyAfterMs != c.readyAfterMs ||
			w.Requests() != 3 || w.ViewerRequests() != 3+c.fetches {
			t.Errorf("page, %s, 30 s at 1/s: %+v (%d requests, %d through CloudFront), want %d line fetches, no waiting and %d ready poll at %d ms",
				c.tiers, w, w.Requests(), w.ViewerRequests(), c.fetches, c.ready, c.readyAfterMs)
		}
		// The origin sees each room's line LineOriginPerRoomPerSecond times a
		// second while the line lasts; a visitor carries 20/1 of them here.
		if w.LineOrigin != LineOriginPerRoomPerSecond || w.Invocations() != 3+LineOriginPerRoomPerSecond {
			t.Errorf("line origin share %g, invocations %g; want %d and %d", w.LineOrigin, w.Invocations(), LineOriginPerRoomPerSecond, 3+LineOriginPerRoomPerSecond)
		}
	}
}

// The page's pace is a poller's (the lead's rule for app.js): it makes no
// more line fetches than a client polling its position makes polls, and
// the bound holds, at most 4 function calls however long the wait
// (enter, position at the turn, order), where a client polling its
// position by the default tiers makes 32 in 30 minutes.
func TestWalkPageKeepsAPollersPace(t *testing.T) {
	for _, tiers := range []string{waitroom.DefaultPollTiers, "60:10000,10:5000,0:2000"} {
		cfg, err := ConfigFromEnv(map[string]string{"POLL_TIERS": tiers})
		if err != nil {
			t.Fatal(err)
		}
		for _, wait := range []float64{0, 1, 30, 300, 1800, 7200} {
			page, err := WalkPage(cfg, wait)
			poller, err2 := WalkVisitor(cfg, wait)
			if err != nil || err2 != nil {
				t.Fatal(err, err2)
			}
			if page.Requests() > 4 || page.ReadyPolls != 1 || page.LineFetches > poller.WaitingPolls+poller.ReadyPolls {
				t.Errorf("%s, %g s: page %+v (%d function calls), poller %+v; want at most 4 calls, READY once, no more line fetches than polls",
					tiers, wait, page, page.Requests(), poller)
			}
		}
	}
	def, err := ConfigFromEnv(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if w, _ := WalkVisitor(def, 1800); w.Requests() != 32 {
		t.Errorf("polling client, 30 min: %d requests, want 32", w.Requests())
	}
	if w, _ := WalkPage(def, 300); w.LineFetches != 5 || w.Requests() != 3 {
		t.Errorf("page, 5 min: %+v, want 5 line fetches (at 60, 120, … 300 s) and 3 function calls", w)
	}
}

// TestSimulateAdmitBusy runs the real admit handler: with a line, an
// invocation covers ADMIT_BATCHES × ADMIT_INTERVAL_MS with a batch every
// 90% of the interval (the jitter at u = 0.5). Idle may stop sooner,
// never later.
func TestSimulateAdmitBusy(t *testing.T) {
	cfg := waitroom.Config{AdmitRatePerSec: 100, AdmitInterval: 100 * time.Millisecond, AdmitBatches: 700}
	busy, err := SimulateAdmit(cfg, true, 1)
	if err != nil {
		t.Fatal(err)
	}
	if busy.Seconds < 69.9 || busy.Seconds > 70.01 || busy.Batches != 778 || busy.Flushes != 70 {
		t.Errorf("busy run %+v, want about 70 s, 778 batches, 70 flushes", busy)
	}
	idle, err := SimulateAdmit(cfg, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	if idle.Seconds > busy.Seconds || idle.Batches < 1 || idle.Batches > busy.Batches {
		t.Errorf("idle run %+v against busy %+v", idle, busy)
	}
}

// Idle with created rooms (OPEN_ROOMS=false: operators create them before
// the sale, and they stay registered): each batch runs in every room, and
// what the admit function's own metrics write is what idle pays for. A
// room where nobody waits and no token lives is worth no metric.
func TestSimulateAdmitIdleRooms(t *testing.T) {
	cfg := waitroom.Config{AdmitRatePerSec: 100, AdmitInterval: 100 * time.Millisecond, AdmitBatches: 700}
	idle, err := SimulateAdmit(cfg, false, DefaultIdleRooms)
	if err != nil {
		t.Fatal(err)
	}
	if idle.Batches != 1 || idle.Rooms != DefaultIdleRooms {
		t.Errorf("idle run %+v: want one batch over %d rooms", idle, DefaultIdleRooms)
	}
	if got := emfMetrics(idle.EMF...); len(got) != 1 || got[0] != "AdmitBatches" {
		t.Errorf("an idle run over %d quiet rooms declares %v, want only the AdmitBatches heartbeat", DefaultIdleRooms, got)
	}
	if want := float64(ECPUAdmitBatch + DefaultIdleRooms*ECPUAdmitRoom); idle.ECPU() != want {
		t.Errorf("idle ECPU %v, want %v", idle.ECPU(), want)
	}
}

func TestEMFMetricsAreCounted(t *testing.T) {
	if got := emfMetrics(heartbeatEMF(11)); len(got) != 1 || got[0] != "AdmitBatches" {
		t.Errorf("heartbeat declares %v, want the one aggregate AdmitBatches", got)
	}
	got := emfMetrics(enterEMF())
	if len(got) != 2 || got[0] != "Entered" || got[1] != "Entered,Room="+SampleRoom {
		t.Errorf("enter declares %v, want Entered per room and aggregate", got)
	}
}

func TestPlatformAndAccessLines(t *testing.T) {
	f := Function{LogFormat: "Text"}
	if platformBytes(f) == 0 {
		t.Error("text format with no system log level writes START/END/REPORT")
	}
	f.SystemLogLevel = "WARN"
	if platformBytes(f) != 0 {
		t.Error("system log level WARN writes no platform lines")
	}
	b := accessLogBytes(`{"id":"$context.requestId","unknown":"$context.somethingElse"}`)
	if want := float64(len(`{"id":"Yx3kLhD8oAMEbKw=","unknown":"-"}`) + EventOverheadBytes); b != want {
		t.Errorf("access line %v B, want %v", b, want)
	}
	if !strings.Contains(platformLines["JSON"][1], "platform.report") {
		t.Error("JSON platform lines")
	}
}

// A function under a customer-managed environment key costs a Decrypt per
// cold start, at most ColdStartShare of its invocations; the others nothing.
func TestEnvironmentKeyDecrypts(t *testing.T) {
	raw, err := os.ReadFile("testdata/fixture.template.json")
	if err != nil {
		t.Fatal(err)
	}
	inv, err := ParseTemplate(raw)
	if err != nil {
		t.Fatal(err)
	}
	fns, err := roleFunctions(inv)
	if err != nil {
		t.Fatal(err)
	}
	w := Walk{WaitingPolls: 4, ReadyPolls: 1}
	if items := environmentDecrypts(fns, w, USEast1); len(items) != 0 {
		t.Errorf("no function under a key, yet %v", items)
	}
	fns.position.EnvironmentKey, fns.order.EnvironmentKey = true, true
	items := environmentDecrypts(fns, w, USEast1)
	want := Visitors * 6 * ColdStartShare * 0.03 / 1e4 // 5 polls and the order, 1% of them, $0.03 per 10,000
	if len(items) != 1 || math.Abs(items[0].USD-want) > 1e-9 {
		t.Errorf("decrypts %v, want $%.4f", items, want)
	}
	for id, f := range inv.Functions {
		if f.EnvironmentKey {
			t.Errorf("%s: the fixture has no KmsKeyArn", id)
		}
	}
}
