package cost

import (
	"fmt"
	"math"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/metrics"
)

// Warm handler durations, median of the emulator's REPORT Duration over 200
// invocations (docs/e2e.md, "Measurements", `make e2e-measure`). Lambda
// bills each invocation rounded up to the next 1 ms.
const (
	MeasuredEnterMs    = 0.62
	MeasuredPositionMs = 0.61
	MeasuredOrderMs    = 0.63 // the gate's own work; the order API's answer comes on top
)

// Cache commands per operation, counted from the scripts (redisstore/*.lua)
// and the store's pipelines (README, "Redis round trips"). ElastiCache
// Serverless bills 1 ECPU per simple command moving at most 1 KB; a script
// is counted as the commands it runs.
const (
	// EVALSHA enter: GET, ZRANK, ZCARD, INCR, ZADD, TIME, GET, then SADD
	// wr:rooms. The SET and ZADD of a new second's mark run at most once a
	// second per room and are left out.
	ECPUEnter = 8
	// A waiting poll that carries its place (an anonymous visitor's
	// ticket, an account's signed place) is answered from the process's
	// view of the room: no command of its own (its share of the view's
	// reads is ECPUView's). Within the next batch of its turn (Walk's
	// NearPolls) it asks the store, EVALSHA position: HMGET, the limiter's
	// HSET, HGET of its place, and the stall check near the front (TIME,
	// HMGET; a ZCARD more with maxActive, left out). READY: HMGET, HSET,
	// HGET (no place any more), GET of its token.
	ECPUPositionWaiting = 0
	ECPUPositionNear    = 5
	ECPUPositionReady   = 4
	// One read of a room's view (Store.View): one HMGET of the room's hash,
	// which admit.lua and enter.lua keep the view's fields in. A process reads it at most once per waitroom.ViewMaxAge
	// (ViewReadsPerSecond, 10 a second) for every poll with a place and
	// every GET /queue/line at the origin meanwhile (viewReads).
	ECPUView = 1
	// order_begin with an Idempotency-Key (GET, GET, SET NX PX), then
	// order_commit (GET, DEL, ZREM, SET EX, GET, DEL).
	ECPUOrder = 9
	// One admit batch: SMEMBERS wr:rooms; per room with a line, admit.lua's
	// TIME, HMGET, ZREMRANGEBYSCORE, ZPOPMIN, HSET, PEXPIRE,
	// ZREMRANGEBYSCORE, ZCARD, ZCARD; per admitted user SET, ZADD,
	// ZREVRANGEBYSCORE.
	ECPUAdmitBatch = 1
	ECPUAdmitRoom  = 9
	ECPUAdmitUser  = 3
)

// Options are the visitor's, the operator's and the downstream's side of the model.
type Options struct {
	WaitSeconds float64 // a visitor's wait in line
	OrderAPIMs  float64 // the order API's answer time, billed to the order gate
	IdleRooms   int     // rooms created and registered while nobody visits
	// Viewers is where the visitors are (a CloudFront pricing region, or a
	// country in one): it prices the waiting page's traffic.
	Viewers string
}

// DefaultOptions: a 5-minute wait; an order API answering in 100 ms;
// DefaultIdleRooms created rooms; visitors in the United States.
var DefaultOptions = Options{WaitSeconds: 300, OrderAPIMs: 100, IdleRooms: DefaultIdleRooms, Viewers: DefaultViewers}

// Measured is what the model takes from running the project's own code
// with the template's settings.
type Measured struct {
	Config    waitroom.Config
	Walk      Walk
	IdleAdmit AdmitRun // one invocation, nobody waiting in any created room
	BusyAdmit AdmitRun // one invocation while one of them has a line

	// Bytes ingested per line set (message + per-event overhead).
	EnterEMF, OrderEMF, HeartbeatEMF, AdmitSecondEMF float64
	AccessLog                                        float64 // one access-log line
	IdleMetrics                                      []string
	EventMetrics                                     int // metrics a room's event can emit: metrics.Names × (room + aggregate)
}

// Measure runs the walk, the admit simulation and the log rendering with
// the settings of the template's functions.
func Measure(inv Inventory, opt Options) (Measured, error) {
	pos, ok := inv.FunctionFor(RoutePosition)
	if !ok {
		return Measured{}, fmt.Errorf("cost: no function serves %s in the template", RoutePosition)
	}
	admit, ok := inv.FunctionFor("schedule")
	if !ok {
		return Measured{}, fmt.Errorf("cost: no scheduled (admit) function in the template")
	}
	var m Measured
	var err error
	if m.Config, err = ConfigFromEnv(pos.Env); err != nil {
		return Measured{}, fmt.Errorf("cost: the position function's environment: %w", err)
	}
	// With the page's distribution the visitors are the page's, following
	// the cached line; without it, clients poll their position.
	walk := WalkVisitor
	if inv.Distributions > 0 {
		walk = WalkPage
	}
	if m.Walk, err = walk(m.Config, opt.WaitSeconds); err != nil {
		return Measured{}, err
	}
	admitCfg, err := ConfigFromEnv(admit.Env)
	if err != nil {
		return Measured{}, fmt.Errorf("cost: the admit function's environment: %w", err)
	}
	if opt.IdleRooms < 0 {
		return Measured{}, fmt.Errorf("cost: %d idle rooms: want 0 or more", opt.IdleRooms)
	}
	if m.IdleAdmit, err = SimulateAdmit(admitCfg, false, opt.IdleRooms); err != nil {
		return Measured{}, err
	}
	// The sale's room is one of the created rooms (or the only one).
	if m.BusyAdmit, err = SimulateAdmit(admitCfg, true, max(1, opt.IdleRooms)); err != nil {
		return Measured{}, err
	}
	rate := int(math.Round(admitCfg.AdmitRatePerSec))
	heartbeat := heartbeatEMF(int(math.Round(1 / (0.9 * admitCfg.AdmitInterval.Seconds()))))
	second := admitSecondEMF(max(rate, 1), opt.WaitSeconds)
	m.EnterEMF, m.OrderEMF = ingested(enterEMF()), ingested(orderEMF())
	m.HeartbeatEMF, m.AdmitSecondEMF = ingested(heartbeat), ingested(second...)
	m.AccessLog = accessLogBytes(inv.API.AccessLogFormat)
	m.IdleMetrics = emfMetrics(m.IdleAdmit.EMF...)
	m.EventMetrics = 2 * len(metrics.Names)
	return m, nil
}
