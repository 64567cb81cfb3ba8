package cost

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// count writes a count a visitor: whole, or with up to two decimals when a
// share (the line's origin requests) makes it fractional.
func count(x float64) string {
	return strings.TrimSuffix(strings.TrimRight(strconv.FormatFloat(x, 'f', 2, 64), "0"), ".")
}

// billedMs is a handler time as Lambda bills it: rounded up to 1 ms.
func billedMs(ms float64) float64 { return math.Ceil(ms) }

// preflightsPerVisitor is the CORS preflights a cross-origin page sends:
// one per route the first time, and again whenever the browser's cached
// answer (Access-Control-Max-Age) has expired.
func preflightsPerVisitor(api API, w Walk, requests int) float64 {
	if !api.Cors {
		return 0
	}
	if api.CorsMaxAgeSeconds <= 0 {
		return float64(requests)
	}
	visitSeconds := float64(w.ReadyAfterMs) / 1000
	routes := 3.0 // enter, position, order
	return routes + math.Floor(visitSeconds/float64(api.CorsMaxAgeSeconds))
}

// perMillionItems is what a million visitors add to the idle bill, each
// waiting opt.WaitSeconds in one room.
func perMillionItems(inv Inventory, fns roles, m Measured, p Prices, opt Options) []Item {
	var items []Item
	add := func(name, detail string, usd float64) { items = append(items, Item{name, detail, usd}) }
	w := m.Walk
	polls := float64(w.WaitingPolls + w.ReadyPolls)
	req := w.Invocations()
	pre := preflightsPerVisitor(inv.API, w, w.Requests())
	what := fmt.Sprintf("enter, %.0f polls, order", polls)
	if w.LineOrigin > 0 {
		what += fmt.Sprintf(", %s line requests reaching the origin (%d a second per room, over %g admitted a second)", count(w.LineOrigin),
			LineOriginPerRoomPerSecond, m.Config.AdmitRatePerSec)
	}
	add("API Gateway HTTP API requests", fmt.Sprintf("%s a visitor: %s", count(req), what), Visitors*req*p.HTTPAPIRequest.USD)
	if pre > 0 {
		add("API Gateway CORS preflights", fmt.Sprintf("%.0f a visitor (cross-origin page, max-age %d s)", pre, inv.API.CorsMaxAgeSeconds), Visitors*pre*p.HTTPAPIRequest.USD)
	}
	add("Lambda requests", fmt.Sprintf("%s a visitor", count(req)), Visitors*req*p.LambdaRequest.USD)
	for _, c := range []struct {
		name  string
		f     Function
		count float64
		ms    float64
	}{
		{"enter", fns.enter, 1, billedMs(MeasuredEnterMs)},
		{"position", fns.position, w.PositionCalls(), billedMs(MeasuredPositionMs)},
		{"order-gate", fns.order, 1, billedMs(MeasuredOrderMs + opt.OrderAPIMs)},
	} {
		gbs := Visitors * c.count * c.ms / 1000 * c.f.MemoryGB()
		add("Lambda duration "+c.name, fmt.Sprintf("%.0f × %.0f ms × %d MB %s = %.0f GB-s", Visitors*c.count, c.ms, c.f.MemoryMB, c.f.Arch, gbs),
			gbs*p.lambdaGBSecond(c.f.Arch).USD)
	}
	items = append(items, environmentDecrypts(fns, w, p)...)
	items = append(items, admitWhileLine(fns, m, p)...)
	items = append(items, cacheAndLogs(inv, fns, m, p, pre)...)
	if inv.NATGateways > 0 {
		add("NAT gateway data (orders)", fmt.Sprintf("%d B an order", OrderExchangeBytes), Visitors*OrderExchangeBytes/gb*p.NATGatewayGB.USD)
	}
	return items
}

// lineInvocations is how many admit invocations a million visitors' line
// spans: the line lasts Visitors / rate seconds.
func lineInvocations(fns roles, m Measured) float64 {
	period, _ := fns.schedule.PeriodSeconds()
	return Visitors / m.Config.AdmitRatePerSec / period
}

// admitWhileLine is admit's extra duration while a line exists: an
// invocation runs its full batches instead of an idle one's.
func admitWhileLine(fns roles, m Measured, p Prices) []Item {
	a := fns.admit
	n := lineInvocations(fns, m)
	extraMs := math.Max(0, m.BusyAdmit.BilledMs()-m.IdleAdmit.BilledMs())
	gbs := n * extraMs / 1000 * a.MemoryGB()
	return []Item{{"Lambda duration admit (while the line exists)",
		fmt.Sprintf("%.0f invocations × %.0f ms more than idle × %d MB = %.0f GB-s", n, extraMs, a.MemoryMB, gbs),
		gbs * p.lambdaGBSecond(a.Arch).USD}}
}

// ViewReadsPerSecond is how often a process reads a room's view at most:
// once per waitroom.ViewMaxAge.
const ViewReadsPerSecond = 10

// ViewReaders is how many warm position instances read one room's view at
// once, an allowance, not a measurement: at the default 100 admitted a
// second, a room's polls and line requests (a few hundred a second at about
// a millisecond each) keep one or two busy, and Lambda keeps more warm
// through their bursts.
const ViewReaders = 10

// viewReads is a visitor's share of the reads of its room's view: each of
// its polls (a poll carrying its place looks at the view first) and its
// line requests at the origin reads it at most once, and all of the room's
// together at most ViewReadsPerSecond × ViewReaders a second, over the
// visitors admitted meanwhile (rate a second).
func viewReads(w Walk, rate float64) float64 {
	asks := float64(w.WaitingPolls+w.ReadyPolls) + w.LineOrigin
	return math.Min(asks, ViewReadsPerSecond*ViewReaders/rate)
}

// cacheAndLogs are the ECPUs, the log lines and the event's metrics.
func cacheAndLogs(inv Inventory, fns roles, m Measured, p Prices, preflights float64) []Item {
	var items []Item
	w := m.Walk
	n := lineInvocations(fns, m)
	if len(inv.ServerlessCaches) > 0 {
		_, ecpu, _ := p.cache(inv.ServerlessCaches[0].Engine)
		polls := (w.WaitingPolls-w.NearPolls)*ECPUPositionWaiting + w.NearPolls*ECPUPositionNear + w.ReadyPolls*ECPUPositionReady
		views := viewReads(w, m.Config.AdmitRatePerSec)
		perVisitor := float64(ECPUEnter+polls+ECPUOrder+ECPUAdmitUser) + views*ECPUView
		batches := n * (m.BusyAdmit.ECPU() - m.IdleAdmit.ECPU())
		total := Visitors*perVisitor + batches
		items = append(items, Item{"ElastiCache ECPU", fmt.Sprintf("%.1f a visitor (requests %s, of which %s reads of the room's view; admission batches %.1f)",
			total/Visitors, count(perVisitor), count(views), batches/Visitors), total * ecpu.USD})
	}
	type logSource struct {
		name  string
		f     Function
		bytes float64
	}
	emf := func(f Function, b float64) float64 {
		if f.EMFSurvives() {
			return b
		}
		return 0
	}
	admitBytes := n * (float64(m.BusyAdmit.Flushes)*(m.HeartbeatEMF+m.AdmitSecondEMF) - m.IdleAdmit.EMFBytes())
	sources := []logSource{
		{"enter", fns.enter, Visitors * (platformBytes(fns.enter) + emf(fns.enter, m.EnterEMF))},
		{"position", fns.position, Visitors * w.PositionCalls() * platformBytes(fns.position)},
		{"order-gate", fns.order, Visitors * (platformBytes(fns.order) + emf(fns.order, m.OrderEMF))},
		{"admit", fns.admit, emf(fns.admit, math.Max(0, admitBytes))},
	}
	for _, s := range sources {
		items = append(items, Item{"CloudWatch Logs " + s.name, fmt.Sprintf("%.0f B a visitor (platform lines: %v, %s)", s.bytes/Visitors, s.f.PlatformLines(), s.f.LogFormat),
			logCost(p, s.bytes, inv.retentionDays(s.f.LogGroup))})
	}
	if m.AccessLog > 0 {
		lines := Visitors * (w.Invocations() + preflights)
		items = append(items, Item{"CloudWatch Logs API access log", fmt.Sprintf("%.0f lines of %.0f B", lines, m.AccessLog),
			logCost(p, lines*m.AccessLog, inv.retentionDays(inv.API.AccessLogGroup))})
	}
	hours := math.Ceil(Visitors / m.Config.AdmitRatePerSec / 3600)
	extra := max(0, m.EventMetrics-len(m.IdleMetrics))
	items = append(items, Item{"CloudWatch custom metrics (event)", fmt.Sprintf("%d metrics × %.0f h of line, prorated by the hour", extra, hours),
		float64(extra) * hours / HoursPerMonth * p.CustomMetricMonth.USD})
	return items
}

// ColdStartShare bounds the share of invocations that start a new
// execution environment: "cold starts typically occur in under 1% of
// invocations" (AWS Lambda Developer Guide, "Understanding the Lambda
// execution environment lifecycle"). An upper bound for a sale, whose
// traffic keeps environments warm.
const ColdStartShare = 0.01

// environmentDecrypts: a function whose environment is encrypted with a
// customer-managed key costs one KMS Decrypt per cold start (Lambda
// decrypts the variables as it starts an environment; warm invocations
// call nothing), at most ColdStartShare of its invocations.
func environmentDecrypts(fns roles, w Walk, p Prices) []Item {
	var invocations float64
	for _, c := range []struct {
		f     Function
		count float64
	}{{fns.enter, 1}, {fns.position, w.PositionCalls()}, {fns.order, 1}} {
		if c.f.EnvironmentKey {
			invocations += c.count
		}
	}
	if invocations == 0 {
		return nil
	}
	decrypts := Visitors * invocations * ColdStartShare
	return []Item{{"KMS requests (environment key)", fmt.Sprintf("%s invocations a visitor under the key × at most %.0f%% cold starts, one Decrypt each = %.0f",
		count(invocations), ColdStartShare*100, decrypts), decrypts * p.KMSRequest.USD}}
}
