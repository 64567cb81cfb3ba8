package cost

import (
	"fmt"
	"math"
	"sort"
)

// Visitors is the unit of the per-visitor figure: a million.
const Visitors = 1e6

const (
	gb          = 1e9 // CloudWatch Logs and data processing bill decimal GB
	daysInMonth = HoursPerMonth / 24.0
	// logStorageCapDays stands in for "never expire": a year of logs.
	logStorageCapDays = 365
	// OrderExchangeBytes is one order request and its answer through a NAT
	// gateway (headers, a small JSON body each way, TLS).
	OrderExchangeBytes = 4096
)

// Item is one line of the bill.
type Item struct {
	Name   string
	Detail string
	USD    float64
}

// Report is the model's answer.
type Report struct {
	Configuration      string // what was priced (set by the caller)
	Idle               []Item
	PerMillion         []Item
	IdleMonthlyUSD     float64
	PerMillionUSD      float64
	RequestsPerVisitor int
	WaitSeconds        float64
	IdleRooms          int
	Viewers            string
	PriceClass         string // the page distribution's, when there is one
	Notes              []string
}

// Estimate prices inv idle and per million visitors.
func Estimate(inv Inventory, m Measured, p Prices, opt Options) (Report, error) {
	if inv.ProvisionedConcurrency > 0 {
		return Report{}, fmt.Errorf("cost: the template provisions concurrency, which this model does not price")
	}
	fns, err := roleFunctions(inv)
	if err != nil {
		return Report{}, err
	}
	r := Report{RequestsPerVisitor: m.Walk.Requests(), WaitSeconds: opt.WaitSeconds, IdleRooms: m.IdleAdmit.Rooms,
		Viewers: opt.Viewers, PriceClass: inv.PriceClass}
	if r.Idle, err = idleItems(inv, fns, m, p); err != nil {
		return Report{}, err
	}
	r.PerMillion = perMillionItems(inv, fns, m, p, opt)
	page, err := pagePerMillion(inv, m.Walk, opt)
	if err != nil {
		return Report{}, err
	}
	r.PerMillion = append(r.PerMillion, page...)
	edge, err := edgePerMillion(inv, m.Walk, p)
	if err != nil {
		return Report{}, err
	}
	r.PerMillion = append(r.PerMillion, edge...)
	intake, notes := intakePerMillionItems(inv, fns, m, p)
	r.PerMillion = append(r.PerMillion, intake...)
	r.PerMillion = append(r.PerMillion, orderRecordPerMillionItems(inv, p)...)
	r.Notes = append(r.Notes, notes...)
	for _, it := range r.Idle {
		r.IdleMonthlyUSD += it.USD
	}
	for _, it := range r.PerMillion {
		r.PerMillionUSD += it.USD
	}
	for _, f := range []Function{fns.enter, fns.position, fns.order, fns.admit} {
		if !f.EMFSurvives() {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: application log level %s drops the INFO-level EMF lines, and with them every metric it emits", f.ID, f.ApplicationLogLevel))
		}
	}
	return r, nil
}

// roles are the four functions, found by what invokes them.
type roles struct {
	enter, position, order, admit Function
	schedule                      Schedule
}

func roleFunctions(inv Inventory) (roles, error) {
	var r roles
	for name, dst := range map[string]*Function{RouteEnter: &r.enter, RoutePosition: &r.position, RouteOrder: &r.order, "schedule": &r.admit} {
		f, ok := inv.FunctionFor(name)
		if !ok {
			return roles{}, fmt.Errorf("cost: no function for %s in the template", name)
		}
		*dst = f
	}
	for _, s := range inv.Schedules {
		for _, t := range s.Targets {
			if t == r.admit.ID {
				r.schedule = s
			}
		}
	}
	return r, nil
}

// retentionDays is how long a log group (logical id) keeps its lines; a
// group the template does not retain (or Lambda's own, created on first use)
// never expires.
func (inv Inventory) retentionDays(group string) float64 {
	for _, g := range inv.LogGroups {
		if g.ID == group && g.RetentionDays > 0 {
			return float64(g.RetentionDays)
		}
	}
	return logStorageCapDays
}

// logCost is the ingestion and the steady-state storage (uncompressed, an
// upper bound) of bytes a month kept retentionDays.
func logCost(p Prices, bytes, retentionDays float64) float64 {
	stored := bytes / gb * math.Min(retentionDays, logStorageCapDays) / daysInMonth
	return bytes/gb*p.LogsIngestGB.USD + stored*p.LogsStorageGBMonth.USD
}

func money(x float64) string { return fmt.Sprintf("$%.4f", x) }

// idleItems is the monthly bill with the stack deployed and nobody visiting.
func idleItems(inv Inventory, fns roles, m Measured, p Prices) ([]Item, error) {
	var items []Item
	add := func(name, detail string, usd float64) { items = append(items, Item{name, detail, usd}) }
	period, err := fns.schedule.PeriodSeconds()
	if err != nil {
		return nil, err
	}
	invocations := HoursPerMonth * 3600 / period
	for _, c := range inv.ServerlessCaches {
		storage, ecpu, minGB := p.cache(c.Engine)
		gbMetered := math.Max(minGB, c.MinStorageGB)
		add("ElastiCache Serverless storage ("+c.Engine+")", fmt.Sprintf("%g GB metered minimum × %d h × %s", gbMetered, HoursPerMonth, money(storage.USD)),
			gbMetered*HoursPerMonth*storage.USD)
		add("ElastiCache ECPU (idle admit batches)", fmt.Sprintf("%.0f invocations × %d batches × (SMEMBERS + %d rooms × %d)",
			invocations, m.IdleAdmit.Batches, m.IdleAdmit.Rooms, ECPUAdmitRoom), invocations*m.IdleAdmit.ECPU()*ecpu.USD)
		if c.MinECPUPerSecond > 0 {
			add("ElastiCache ECPU (CacheUsageLimits minimum)", fmt.Sprintf("%g ECPU/s × %d h", c.MinECPUPerSecond, HoursPerMonth),
				c.MinECPUPerSecond*HoursPerMonth*3600*ecpu.USD)
		}
		if c.SnapshotRetentionDays > 0 {
			add("ElastiCache snapshots", fmt.Sprintf("%d daily kept; an idle cache holds a few KB", c.SnapshotRetentionDays), 0)
		}
	}
	for _, c := range inv.NodeCaches {
		pr, err := p.node(c)
		if err != nil {
			return nil, err
		}
		add("ElastiCache nodes", fmt.Sprintf("%d × %s × %d h × %s", c.Nodes, c.NodeType, HoursPerMonth, money(pr.USD)), float64(c.Nodes)*HoursPerMonth*pr.USD)
	}
	a := fns.admit
	add("Lambda admit requests", fmt.Sprintf("%.0f invocations (%s)", invocations, fns.schedule.Expression), invocations*p.LambdaRequest.USD)
	gbs := invocations * m.IdleAdmit.BilledMs() / 1000 * a.MemoryGB()
	add("Lambda admit duration", fmt.Sprintf("%.0f × %.0f ms billed (%d batches) × %d MB %s = %.0f GB-s", invocations,
		m.IdleAdmit.BilledMs(), m.IdleAdmit.Batches, a.MemoryMB, a.Arch, gbs), gbs*p.lambdaGBSecond(a.Arch).USD)
	logBytes := invocations * platformBytes(a)
	if a.EMFSurvives() {
		logBytes += invocations * m.IdleAdmit.EMFBytes()
	}
	add("CloudWatch Logs (admit)", fmt.Sprintf("%.3f GB a month ingested, kept %g days", logBytes/gb, inv.retentionDays(a.LogGroup)),
		logCost(p, logBytes, inv.retentionDays(a.LogGroup)))
	if a.EMFSurvives() {
		add("CloudWatch custom metrics", fmt.Sprintf("%d emitted while idle, %d rooms created %v", len(m.IdleMetrics), m.IdleAdmit.Rooms, m.IdleMetrics),
			float64(len(m.IdleMetrics))*p.CustomMetricMonth.USD)
	}
	items = append(items, monitoringItems(inv, p)...)
	items = append(items, networkItems(inv, p)...)
	items = append(items, intakeIdleItems(inv, p)...)
	items = append(items, orderRecordIdleItems(inv, p)...)
	page, err := pageIdleItems(inv, p)
	if err != nil {
		return nil, err
	}
	items = append(items, page...)
	items = append(items, edgeIdleItems(inv, p)...)
	add("EventBridge schedule", fns.schedule.Expression+": scheduled rules on the default bus are free", 0)
	return items, nil
}

// monitoringItems are the alarms, dashboards and budgets.
func monitoringItems(inv Inventory, p Prices) []Item {
	var std, hi int
	for _, a := range inv.Alarms {
		if a.HighResolution {
			hi += a.Metrics
		} else {
			std += a.Metrics
		}
	}
	items := []Item{{"CloudWatch alarms", fmt.Sprintf("%d alarms reading %d standard and %d high-resolution metrics", len(inv.Alarms), std, hi),
		float64(std)*p.AlarmMetricMonth.USD + float64(hi)*p.HighResAlarmMetricMonth.USD}}
	if inv.CompositeAlarms > 0 {
		items = append(items, Item{"CloudWatch composite alarms", fmt.Sprint(inv.CompositeAlarms), float64(inv.CompositeAlarms) * p.CompositeAlarmMonth.USD})
	}
	items = append(items, Item{"CloudWatch dashboards", fmt.Sprint(inv.Dashboards), float64(inv.Dashboards) * p.DashboardMonth.USD})
	if inv.Budgets > 0 || inv.BudgetActions > 0 {
		paid := max(0, inv.BudgetActions-2)
		items = append(items, Item{"AWS Budgets", fmt.Sprintf("%d budgets, %d actions (the first two action-enabled budgets are free)", inv.Budgets, inv.BudgetActions),
			float64(paid) * daysInMonth * p.BudgetActionDay.USD})
	}
	return items
}

// networkItems are the endpoints, NAT gateways, addresses, secrets and keys.
func networkItems(inv Inventory, p Prices) []Item {
	var items []Item
	eps := append([]Endpoint(nil), inv.InterfaceEndpoints...)
	sort.Slice(eps, func(i, j int) bool { return eps[i].Service < eps[j].Service })
	for _, e := range eps {
		items = append(items, Item{"VPC interface endpoint " + e.Service, fmt.Sprintf("%d AZs × %d h × %s", e.AZs, HoursPerMonth, money(p.InterfaceEndpointAZHour.USD)),
			float64(e.AZs) * HoursPerMonth * p.InterfaceEndpointAZHour.USD})
	}
	if inv.NATGateways > 0 {
		items = append(items, Item{"NAT gateways", fmt.Sprintf("%d × %d h × %s", inv.NATGateways, HoursPerMonth, money(p.NATGatewayHour.USD)),
			float64(inv.NATGateways) * HoursPerMonth * p.NATGatewayHour.USD})
	}
	if inv.PublicIPv4 > 0 {
		items = append(items, Item{"Public IPv4 addresses", fmt.Sprintf("%d × %d h × %s", inv.PublicIPv4, HoursPerMonth, money(p.PublicIPv4Hour.USD)),
			float64(inv.PublicIPv4) * HoursPerMonth * p.PublicIPv4Hour.USD})
	}
	if inv.Secrets > 0 {
		items = append(items, Item{"Secrets Manager secrets", fmt.Sprint(inv.Secrets), float64(inv.Secrets) * p.SecretMonth.USD})
	}
	if inv.KMSKeys > 0 {
		items = append(items, Item{"KMS keys", fmt.Sprint(inv.KMSKeys), float64(inv.KMSKeys) * p.KMSKeyMonth.USD})
	}
	return items
}
