package cost

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Inventory is what a template contains that costs money, counted.
type Inventory struct {
	Functions              map[string]Function // by logical id
	Schedules              []Schedule
	Alarms                 []Alarm
	CompositeAlarms        int
	Dashboards             int
	InterfaceEndpoints     []Endpoint
	NATGateways            int
	PublicIPv4             int // Elastic IPs (a NAT gateway's among them)
	ServerlessCaches       []ServerlessCache
	NodeCaches             []NodeCache
	LogGroups              []LogGroup
	API                    API
	Secrets                int
	KMSKeys                int
	Budgets                int
	BudgetActions          int
	ProvisionedConcurrency int
	Distributions          int    // CloudFront (the waiting page)
	PriceClass             string // the distribution's (PriceClass_All when unset)
	Queues                 []Queue
	QueueConsumers         []QueueConsumer
	WebACLs                []WebACL // AWS WAF (edgeRateLimit, on the page's distribution)
	Tables                 []Table  // DynamoDB (the order record)
}

// WebACL is an AWS WAF web ACL: a monthly fee, one per rule, and every
// request it inspects.
type WebACL struct {
	Rules int
}

// Function is one Lambda function.
type Function struct {
	ID                  string
	Roles               []string // the routes it serves, or "schedule rate(…)"
	MemoryMB            int
	Arch                string // arm64 or x86_64
	Timeout             int    // seconds
	ReservedConcurrency *int
	EphemeralMB         int
	LogFormat           string // Text or JSON
	SystemLogLevel      string // "" (all platform lines), DEBUG, INFO or WARN
	ApplicationLogLevel string
	LogGroup            string
	Env                 map[string]string // the literal variables only
	// EnvironmentKey: its environment is encrypted with a customer-managed
	// KMS key (KmsKeyArn), which Lambda decrypts at each cold start.
	EnvironmentKey bool
}

// MemoryGB is the memory size in GB, as Lambda bills it (1024 MB = 1 GB).
func (f Function) MemoryGB() float64 { return float64(f.MemoryMB) / 1024 }

// PlatformLines reports whether Lambda writes its START/END/REPORT lines:
// only a system log level of WARN (or above) silences them.
func (f Function) PlatformLines() bool {
	lvl := strings.ToUpper(f.SystemLogLevel)
	return lvl != "WARN" && lvl != "ERROR" && lvl != "FATAL"
}

// EMFSurvives reports whether INFO-level application lines (the EMF
// metrics) reach CloudWatch Logs: in JSON format an application log level
// above INFO filters them out, and the metrics with them.
func (f Function) EMFSurvives() bool {
	if f.LogFormat != "JSON" {
		return true
	}
	lvl := strings.ToUpper(f.ApplicationLogLevel)
	return lvl == "" || lvl == "TRACE" || lvl == "DEBUG" || lvl == "INFO"
}

// Schedule is an enabled EventBridge rule with a schedule.
type Schedule struct {
	Expression string
	Targets    []string // logical ids
}

var rateRE = regexp.MustCompile(`^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$`)

// PeriodSeconds is the time between two firings of a rate() schedule.
func (s Schedule) PeriodSeconds() (float64, error) {
	m := rateRE.FindStringSubmatch(strings.TrimSpace(s.Expression))
	if m == nil {
		return 0, fmt.Errorf("cost: schedule %q: only rate(N minute|hour|day) expressions are modelled", s.Expression)
	}
	n, _ := strconv.Atoi(m[1])
	unit := map[string]float64{"minute": 60, "minutes": 60, "hour": 3600, "hours": 3600, "day": 86400, "days": 86400}[m[2]]
	return float64(n) * unit, nil
}

// Alarm is one metric alarm: CloudWatch bills each metric it reads
// (a metric-math alarm reads several).
type Alarm struct {
	Name           string
	Metrics        int
	HighResolution bool // a period under 60 s
}

// Endpoint is an interface VPC endpoint, billed per AZ (one ENI per subnet).
type Endpoint struct {
	Service string
	AZs     int
}

// ServerlessCache is an ElastiCache Serverless cache.
type ServerlessCache struct {
	Engine                string // valkey, redis or memcached
	MinStorageGB          float64
	MinECPUPerSecond      float64
	SnapshotRetentionDays int
}

// NodeCache is a node-based replication group.
type NodeCache struct {
	NodeType string
	Engine   string
	Nodes    int
}

// LogGroup is a CloudWatch Logs group; 0 days is "never expire".
type LogGroup struct {
	ID            string
	RetentionDays int
}

// API is the HTTP API.
type API struct {
	HTTP              bool
	Cors              bool
	CorsMaxAgeSeconds int
	AccessLogFormat   string
	AccessLogGroup    string // logical id
	routes            []route
}

type route struct {
	key    string
	target any
}

// FunctionFor returns the function serving role (a route key, or the
// admission schedule when role is "schedule").
func (inv Inventory) FunctionFor(role string) (Function, bool) {
	for _, f := range inv.Functions {
		for _, r := range f.Roles {
			if r == role || (role == "schedule" && strings.HasPrefix(r, "schedule ")) {
				return f, true
			}
		}
	}
	return Function{}, false
}

// Template helpers: CloudFormation values are JSON of any shape.

func str(v any, def string) string {
	if s, ok := v.(string); ok {
		return s
	}
	return def
}

func num(v any, def float64) float64 {
	switch t := v.(type) {
	case float64:
		return t
	case string:
		if f, err := strconv.ParseFloat(t, 64); err == nil {
			return f
		}
	}
	return def
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

// joined renders a string or an Fn::Join of strings and Refs (a Ref as its
// logical id), which is how CDK spells a route's target.
func joined(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case map[string]any:
		if ref, ok := t["Ref"].(string); ok {
			return ref
		}
		if j := list(t["Fn::Join"]); len(j) == 2 {
			var parts []string
			for _, p := range list(j[1]) {
				parts = append(parts, joined(p))
			}
			return strings.Join(parts, str(j[0], ""))
		}
	}
	return ""
}

// getAttTarget is X of {"Fn::GetAtt": ["X", "Arn"]}.
func getAttTarget(v any) string {
	m, _ := v.(map[string]any)
	if g := list(m["Fn::GetAtt"]); len(g) == 2 {
		return str(g[0], "")
	}
	return ""
}

func targetRefs(v any) []string {
	var out []string
	for _, t := range list(v) {
		tm, _ := t.(map[string]any)
		if id := getAttTarget(tm["Arn"]); id != "" {
			out = append(out, id)
		}
	}
	return out
}

// serviceName is the last dot-separated part of an endpoint's service
// ("com.amazonaws.<region>.secretsmanager" → "secretsmanager").
func serviceName(v any) string {
	s := joined(v)
	if i := strings.LastIndex(s, "."); i >= 0 {
		return s[i+1:]
	}
	return s
}
