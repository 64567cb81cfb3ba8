package cost

import (
	"fmt"
	"math"
	"strings"
)

// perRequestDoc: how each per-visitor line is priced.
func perRequestDoc(def Priced) string {
	p, w := USEast1, def.M.Walk
	perM := func(pr Price) string { return fmt.Sprintf("$%.2f per million", pr.USD*1e6) }
	pre := preflightsPerVisitor(def.Inv.API, w, w.Requests())
	rows := [][]string{
		{"API Gateway", perM(p.HTTPAPIRequest) + " HTTP API requests (each up to 512 KB). A cross-origin page also sends CORS preflights: one per " +
			fmt.Sprintf("route, again each time `MaxAge` expires (%g a visitor for a %g-s wait at the default's %d-s `MaxAge`).", pre, def.Opt.WaitSeconds, def.Inv.API.CorsMaxAgeSeconds)},
		{"Lambda requests", perM(p.LambdaRequest) + ", per enter, poll and order"},
		{"Lambda duration", fmt.Sprintf("Measured warm handler time (docs/e2e.md, emulator `REPORT Duration` medians: enter %g ms, position %g ms, "+
			"order gate %g ms), **rounded up to 1 ms** as Lambda bills, × memory. The order gate also waits for the order API and is billed for "+
			"it: `-order-api-ms`, default %g ms, so %g ms. In AWS the cache round trip over TLS in the VPC adds time that the loopback "+
			"measurement lacks. At 2 ms billed the position line doubles (+%s per million).", MeasuredEnterMs, MeasuredPositionMs, MeasuredOrderMs,
			DefaultOptions.OrderAPIMs, billedMs(MeasuredOrderMs+DefaultOptions.OrderAPIMs), usd(itemUSD(def.R.PerMillion, "Lambda duration position")))},
		{"ElastiCache ECPU", fmt.Sprintf("1 ECPU per simple command moving ≤ 1 KB; a script counts as the commands it runs (`redisstore/*.lua`, "+
			"README \"Redis round trips\"). Enter %d (script and `SADD`); position %d while waiting with its place (answered from the room's view), "+
			"%d within the next batch of its turn (the store answers) and %d when READY; a read of the room's view %d, each process reading it at "+
			"most %d times a second per room for every poll and line request meanwhile (%d warm position instances a room, `cost.ViewReaders`, an "+
			"allowance); order %d, admission %d per admitted user plus %d per room and %d `SMEMBERS` per batch", ECPUEnter, ECPUPositionWaiting,
			ECPUPositionNear, ECPUPositionReady, ECPUView, ViewReadsPerSecond, ViewReaders, ECPUOrder, ECPUAdmitUser, ECPUAdmitRoom, ECPUAdmitBatch)},
		{"admission", "While a line exists, each invocation runs all its batches. The per-visitor share is the extra billed time over an idle " +
			"invocation × the invocations the line spans (`visitors / rate / schedule period`)"},
		{"CloudWatch Logs", fmt.Sprintf("%s per GB ingested plus %s per GB-month kept, counted uncompressed (an upper bound; AWS bills stored "+
			"logs compressed). Each line is billed with %d bytes of event overhead. Lines: the EMF record of enter and of a passed order, "+
			"rendered by `metrics.Recorder`; admission's records for each second of a line; the API access log, one line per request and "+
			"preflight; and, unless the function's system log level is WARN, Lambda's START/END/REPORT lines (text, %.0f B an invocation) or "+
			"`platform.start`/`platform.report` (JSON, %.0f B)", usd(p.LogsIngestGB.USD), usd(p.LogsStorageGBMonth.USD), EventOverheadBytes,
			ingested(platformLines["Text"]...), ingested(platformLines["JSON"]...))},
		{"custom metrics", fmt.Sprintf("%s per metric-month, prorated by the hour: `metrics.Names` × (the room + the aggregate) for the hours "+
			"the line lasts (a million at %g/s: %.0f h), less what idle already pays", usd(p.CustomMetricMonth.USD), def.M.Config.AdmitRatePerSec,
			math.Ceil(Visitors/def.M.Config.AdmitRatePerSec/3600))},
		{"NAT", fmt.Sprintf("when the template has a NAT gateway: $%.3f per GB for an order's %d B exchange", p.NATGatewayGB.USD, OrderExchangeBytes)},
		{"SQS endpoint", fmt.Sprintf("with `intake=broker` and the SQS interface endpoint enter sends through: $%.3f per GB for a SendMessage's %d B "+
			"exchange (in fallback only an outage's enters pass it: not priced)", p.InterfaceEndpointGB.USD, SendExchangeBytes)},
		{"KMS requests", fmt.Sprintf("when a function's environment is encrypted with the stack's key (`KmsKeyArn`: it holds a secret), Lambda "+
			"decrypts it at each cold start, one Decrypt at $%.2f per 10,000; cold starts are bounded by %.0f%% of that function's invocations "+
			"(`cost.ColdStartShare`), warm invocations call nothing. KMS's free 20,000 requests a month are left out", p.KMSRequest.USD*1e4,
			ColdStartShare*100)},
		{"DynamoDB (the order record)", fmt.Sprintf("on demand: %d write units an order (the claim before the order goes downstream, and the answer kept "+
			"for a replay: every order taken to carry an `Idempotency-Key`) at $%.3f per million, and its %d B item stored, with point-in-time "+
			"recovery, until TTL deletes it (up to %g days after the token: $%.2f + $%.2f per GB-month)", OrderRecordWrites, p.DynamoDBWriteUnit.USD*1e6,
			OrderRecordItemBytes, TTLDeletionDays, p.DynamoDBStorageGBMonth.USD, p.DynamoDBPITRGBMonth.USD)},
	}
	return mdTable([]string{"item", "how"}, rows)
}

// idleHowDoc: how each idle line is priced.
func idleHowDoc(def Priced) string {
	p, idle := USEast1, def.M.IdleAdmit
	period, _ := roleSchedule(def.Inv).PeriodSeconds()
	rows := [][]string{
		{"ElastiCache Serverless storage", fmt.Sprintf("the metered minimum: %g GB for Valkey (%g GB for Redis OSS), or `CacheUsageLimits.DataStorage.Minimum` "+
			"when higher, × %d h × $%.3f/GB-h. This is the floor of the stack, %s.", ValkeyMinStorageGB, RedisMinStorageGB, HoursPerMonth,
			p.ValkeyStorageGBHour.USD, usd(itemUSD(def.R.Idle, "ElastiCache Serverless storage (valkey)")))},
		{"ElastiCache ECPU", fmt.Sprintf("the idle admit batches (one `SMEMBERS` each, and the admit script in each of the %d created rooms, %d ECPU), "+
			"and `CacheUsageLimits.ECPUPerSecond.Minimum` when set (that minimum is billed)", idle.Rooms, ECPUAdmitRoom)},
		{"admit", fmt.Sprintf("one invocation per schedule period (%s a month at `rate(1 minute)`): %s per million, plus its billed duration × "+
			"memory. The duration is **not assumed**: `SimulateAdmit` runs the real handler (`awslambda.AdmitFunction` over `waitroom.Admitter`) "+
			"on a virtual clock against a store holding %d created rooms where nobody waits (%v a round trip, batch jitter at u = %.1f), and "+
			"measures when it returns: after %d batch (%.3f s).", thousands(HoursPerMonth*3600/period), usd(p.LambdaRequest.USD*1e6), idle.Rooms,
			StoreRoundTrip, PollJitterU, idle.Batches, idle.Seconds)},
		{"admit logs", fmt.Sprintf("its platform lines and what the admit function's own metrics (`awslambda.AdmitMetrics`) wrote in that run: "+
			"%.0f B an idle invocation", idle.EMFBytes())},
		{"custom metrics", fmt.Sprintf("the metrics the idle run's lines declare, %s each: %s. A created room where nobody waits and no token "+
			"lives writes none", usd(p.CustomMetricMonth.USD), strings.Join(def.M.IdleMetrics, ", "))},
		{"alarms", fmt.Sprintf("%s per standard-resolution alarm metric, %s high resolution, %s per composite alarm", usd(p.AlarmMetricMonth.USD),
			usd(p.HighResAlarmMetricMonth.USD), usd(p.CompositeAlarmMonth.USD))},
		{"dashboards", usd(p.DashboardMonth.USD) + " each"},
		{"interface endpoints", fmt.Sprintf("%s per endpoint-AZ-hour", usd(p.InterfaceEndpointAZHour.USD))},
		{"NAT gateway, public IPv4", fmt.Sprintf("$%.3f per hour and $%.3f per address-hour", p.NATGatewayHour.USD, p.PublicIPv4Hour.USD)},
		{"secrets, KMS keys", fmt.Sprintf("%s and %s a month each. The stack's one key, made when a function holds a secret, is rotated "+
			"yearly: each of the first two rotations adds %s a month, later ones nothing (the figures are the first year's)",
			usd(p.SecretMonth.USD), usd(p.KMSKeyMonth.USD), usd(p.KMSKeyMonth.USD))},
		{"budgets", fmt.Sprintf("free. Action-enabled budgets beyond the first two cost %s a day.", usd(p.BudgetActionDay.USD))},
		{"EventBridge", "scheduled rules on the default bus are free"},
		{"snapshots", "listed when retained; an idle cache holds a few KB, so nothing"},
		{"DynamoDB (the order record)", "on demand: an idle table bills only its storage and backups, and holds nothing once its tokens' items expire"},
	}
	return mdTable([]string{"item", "how"}, rows)
}

func roleSchedule(inv Inventory) Schedule {
	fns, _ := roleFunctions(inv)
	return fns.schedule
}

// pageDoc: the waiting page's idle lines, its per-visitor lines, and what
// they cost for visitors elsewhere.
func pageDoc(page, def Priced) (string, error) {
	var b strings.Builder
	cf := func(items []Item) []Item {
		var out []Item
		for _, it := range items {
			if strings.HasPrefix(it.Name, "CloudFront") || strings.HasPrefix(it.Name, "S3") {
				out = append(out, it)
			}
		}
		return out
	}
	fmt.Fprintf(&b, "Idle, the page adds (configuration `page`, idle %s a month in all):\n\n%s\n", usd(page.R.IdleMonthlyUSD),
		mdTable([]string{"item", "a month", "how"}, itemRows(cf(page.R.Idle))))
	w := page.M.Walk
	d := def.M.Walk
	fmt.Fprintf(&b, "A visitor of the page waiting %g s follows the room's line at a poller's pace (its tier of `POLL_TIERS`, never later "+
		"than its turn): %d line fetches, which CloudFront answers from its copy (billed as CloudFront requests and bytes, no function runs), "+
		"and %d function calls (enter, %d position at its turn, order), where a client polling its position makes %d (%d polls). The origin "+
		"sees about %d line requests a second per room (`cost.LineOriginPerRoomPerSecond`, an allowance, not a measurement), %s a visitor at "+
		"%g admitted a second, billed as API Gateway and Lambda requests.\n\n", page.Opt.WaitSeconds, w.LineFetches, w.Requests(),
		w.WaitingPolls+w.ReadyPolls, d.Requests(), d.WaitingPolls+d.ReadyPolls, LineOriginPerRoomPerSecond, count(w.LineOrigin),
		page.M.Config.AdmitRatePerSec)
	fmt.Fprintf(&b, "Per million visitors in the US:\n\n%s\n", mdTable([]string{"item", "per million", "how"}, itemRows(cf(page.R.PerMillion))))
	rows, err := viewerRows(page)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(&b, "By where the visitors are (`make cost COST_CONFIG=page COST_VIEWERS=…`; CloudFront bills each request and byte at "+
		"the rates of the edge that serves it, and a price class limits the edges):\n\n%s\n",
		mdTable([]string{"visitors in", "price class", "billed at", "CloudFront per million", "total per million"}, rows))
	files, bytes, err := pageFiles()
	if err != nil {
		return "", err
	}
	req := float64(w.ViewerRequests())
	free := math.Min(10e6/(float64(files)+req), 1e12/(bytes+req*APIAnswerBytes))
	fmt.Fprintf(&b, "The page is %s bytes in %d files (and `waitroom/config.json`). CloudFront's always-free 10 million requests and 1 TB "+
		"a month, left out of the bills, would cover the first %s visitors of a month. The page is same-origin, so its browsers send no "+
		"CORS preflights (the configuration's `corsOrigins=none`: the default's cross-origin page costs %s per million in preflights).\n",
		thousands(bytes), files-1, thousands(math.Floor(free/1000)*1000), usd(itemUSD(def.R.PerMillion, "API Gateway CORS preflights")))
	return b.String(), nil
}

// viewerRows prices the page for visitors in several regions, and Korea's
// under PriceClass_100 for comparison.
func viewerRows(page Priced) ([][]string, error) {
	var rows [][]string
	for _, c := range []struct{ viewers, class string }{{"us", ""}, {"europe", ""}, {"japan", ""}, {"korea", ""}, {"korea", "PriceClass_100"}} {
		pc := page
		if c.class != "" {
			pc.Inv.PriceClass = c.class
		}
		pv, err := pc.With(Options{WaitSeconds: page.Opt.WaitSeconds, OrderAPIMs: page.Opt.OrderAPIMs, IdleRooms: page.Opt.IdleRooms, Viewers: c.viewers})
		if err != nil {
			return nil, err
		}
		v, _ := ViewerRegion(c.viewers)
		billed, served := BilledRegion(pc.Inv.PriceClass, v)
		where := billed.Name
		if !served {
			where += " (no edge in the class there: served from farther, billed here at the lowest rates)"
		}
		class := "`" + pc.Inv.PriceClass + "`"
		if c.class == "" {
			class += " (the stack's)"
		}
		cfUSD := itemUSD(pv.R.PerMillion, "CloudFront HTTPS requests") + itemUSD(pv.R.PerMillion, "CloudFront data transfer out")
		rows = append(rows, []string{c.viewers, class, where, usd(cfUSD), usd(pv.R.PerMillionUSD)})
	}
	return rows, nil
}

// networkDoc: what nat and fallback add to the default, from their templates.
func networkDoc(def, nat, fallback Priced) string {
	line := func(items []Item) string {
		var parts []string
		for _, it := range items {
			parts = append(parts, fmt.Sprintf("%s %s (%s)", it.Name, usd(it.USD), it.Detail))
		}
		return strings.Join(parts, "; ")
	}
	var endpoints []Item
	for _, it := range fallback.R.Idle {
		if strings.HasPrefix(it.Name, "VPC interface endpoint") {
			endpoints = append(endpoints, it)
		}
	}
	var natIdle []Item
	for _, it := range differing(def.R.Idle, nat.R.Idle) {
		if strings.HasPrefix(it.Name, "NAT") || strings.HasPrefix(it.Name, "Public IPv4") {
			natIdle = append(natIdle, it)
		}
	}
	natTotal := 0.0
	for _, it := range natIdle {
		natTotal += it.USD
	}
	return fmt.Sprintf("- `nat`: %s: **%s a month**; per million visitors, %s.\n- `fallback`: %s.\n", line(natIdle), usd(natTotal),
		line(differing(def.R.PerMillion, nat.R.PerMillion)), line(endpoints))
}

// intakeDoc: what broker and fallback add to direct, line by line.
func intakeDoc(def, broker, fallback Priced) string {
	var b strings.Builder
	for _, pc := range []Priced{broker, fallback} {
		idle, perM := differing(def.R.Idle, pc.R.Idle), differing(def.R.PerMillion, pc.R.PerMillion)
		fmt.Fprintf(&b, "`%s`, idle: %s a month more than direct (%s in all); the lines that differ:\n\n%s\n", pc.Name,
			usd(pc.R.IdleMonthlyUSD-def.R.IdleMonthlyUSD), usd(pc.R.IdleMonthlyUSD), mdTable([]string{"item", "a month", "how"}, itemRows(idle)))
		extra := pc.R.PerMillionUSD - def.R.PerMillionUSD
		fmt.Fprintf(&b, "`%s`, per million visitors: %s more than direct (%s against %s, %+.0f %%)", pc.Name, usd(extra), usd(pc.R.PerMillionUSD),
			usd(def.R.PerMillionUSD), 100*extra/def.R.PerMillionUSD)
		if len(perM) == 0 {
			b.WriteString(": the broker carries only the enters made while the store is down.\n\n")
			continue
		}
		fmt.Fprintf(&b, "; the lines that differ by a cent or more:\n\n%s\n", mdTable([]string{"item", "per million", "how"}, itemRows(perM)))
	}
	return b.String()
}
