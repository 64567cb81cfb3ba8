// Package cost is Waitroom's AWS cost model: it reads a synthesized
// CloudFormation template, counts what costs money in it, and prices the
// stack idle and per million visitors (docs/cost.md).
package cost

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// The HTTP API's routes, as the API contract spells them: a function is
// recognised by the route it serves (or by the schedule that invokes it),
// never by its logical id.
const (
	RouteEnter    = "POST /queue/enter"
	RoutePosition = "GET /queue/position"
	RouteOrder    = "POST /orders"
)

// template is the part of a CloudFormation template the model reads.
type template struct {
	Resources map[string]resource
}

type resource struct {
	Type       string
	Properties map[string]any
}

// ReadTemplate parses a synthesized template file into an Inventory.
func ReadTemplate(path string) (Inventory, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Inventory{}, fmt.Errorf("cost: %w (run `make synth`)", err)
	}
	return ParseTemplate(raw)
}

// ParseTemplate parses a synthesized template into an Inventory.
func ParseTemplate(raw []byte) (Inventory, error) {
	var t template
	if err := json.Unmarshal(raw, &t); err != nil {
		return Inventory{}, fmt.Errorf("cost: the template is not JSON: %w", err)
	}
	if len(t.Resources) == 0 {
		return Inventory{}, fmt.Errorf("cost: the template has no resources")
	}
	inv := Inventory{Functions: map[string]Function{}}
	for id, r := range t.Resources {
		if err := inv.add(id, r); err != nil {
			return Inventory{}, err
		}
	}
	if err := inv.resolveRoles(t.Resources); err != nil {
		return Inventory{}, err
	}
	return inv, nil
}

// add counts one resource.
func (inv *Inventory) add(id string, r resource) error {
	p := r.Properties
	switch r.Type {
	case "AWS::Lambda::Function":
		f, err := parseFunction(id, p)
		if err != nil {
			return err
		}
		inv.Functions[id] = f
	case "AWS::Events::Rule":
		if s, ok := p["ScheduleExpression"].(string); ok && str(p["State"], "ENABLED") == "ENABLED" {
			inv.Schedules = append(inv.Schedules, Schedule{Expression: s, Targets: targetRefs(p["Targets"])})
		}
	case "AWS::CloudWatch::Alarm":
		inv.Alarms = append(inv.Alarms, parseAlarm(p))
	case "AWS::CloudWatch::CompositeAlarm":
		inv.CompositeAlarms++
	case "AWS::CloudWatch::Dashboard":
		inv.Dashboards++
	case "AWS::EC2::VPCEndpoint":
		if str(p["VpcEndpointType"], "Gateway") == "Interface" {
			inv.InterfaceEndpoints = append(inv.InterfaceEndpoints, Endpoint{
				Service: serviceName(p["ServiceName"]), AZs: len(list(p["SubnetIds"])),
			})
		}
	case "AWS::EC2::NatGateway":
		inv.NATGateways++
	case "AWS::EC2::EIP":
		inv.PublicIPv4++
	case "AWS::ElastiCache::ServerlessCache":
		inv.ServerlessCaches = append(inv.ServerlessCaches, parseServerlessCache(p))
	case "AWS::ElastiCache::ReplicationGroup":
		inv.NodeCaches = append(inv.NodeCaches, NodeCache{
			NodeType: str(p["CacheNodeType"], ""), Engine: str(p["Engine"], "redis"),
			Nodes: int(num(p["NumCacheClusters"], 1) * num(p["NumNodeGroups"], 1)),
		})
	case "AWS::Logs::LogGroup":
		inv.LogGroups = append(inv.LogGroups, LogGroup{ID: id, RetentionDays: int(num(p["RetentionInDays"], 0))})
	case "AWS::ApiGatewayV2::Api":
		inv.API.HTTP = str(p["ProtocolType"], "") == "HTTP"
		if c, ok := p["CorsConfiguration"].(map[string]any); ok {
			inv.API.CorsMaxAgeSeconds = int(num(c["MaxAge"], 0))
			inv.API.Cors = true
		}
	case "AWS::ApiGatewayV2::Stage":
		if a, ok := p["AccessLogSettings"].(map[string]any); ok {
			inv.API.AccessLogFormat = str(a["Format"], "")
			inv.API.AccessLogGroup = getAttTarget(a["DestinationArn"])
		}
	case "AWS::ApiGatewayV2::Route":
		inv.API.routes = append(inv.API.routes, route{key: str(p["RouteKey"], ""), target: p["Target"]})
	case "AWS::DynamoDB::Table":
		pitr, _ := p["PointInTimeRecoverySpecification"].(map[string]any)
		inv.Tables = append(inv.Tables, Table{ID: id, OnDemand: p["BillingMode"] == "PAY_PER_REQUEST",
			PointInTimeRecovery: pitr != nil && pitr["PointInTimeRecoveryEnabled"] == true})
	case "AWS::SQS::Queue":
		inv.Queues = append(inv.Queues, Queue{ID: id, Fifo: p["FifoQueue"] == true || p["FifoQueue"] == "true"})
	case "AWS::Lambda::EventSourceMapping":
		if q := getAttTarget(p["EventSourceArn"]); q != "" {
			inv.QueueConsumers = append(inv.QueueConsumers, QueueConsumer{Function: joined(p["FunctionName"]), Queue: q, BatchSize: int(num(p["BatchSize"], 10))})
		}
	case "AWS::CloudFront::Distribution":
		inv.Distributions++
		dc, _ := p["DistributionConfig"].(map[string]any)
		inv.PriceClass = str(dc["PriceClass"], "PriceClass_All")
	case "AWS::WAFv2::WebACL":
		inv.WebACLs = append(inv.WebACLs, WebACL{Rules: len(list(p["Rules"]))})
	case "AWS::SecretsManager::Secret":
		inv.Secrets++
	case "AWS::KMS::Key":
		inv.KMSKeys++
	case "AWS::Budgets::Budget":
		inv.Budgets++
	case "AWS::Budgets::BudgetsAction":
		inv.BudgetActions++
	case "AWS::Lambda::Alias", "AWS::Lambda::Version":
		if pc, ok := p["ProvisionedConcurrencyConfig"].(map[string]any); ok {
			inv.ProvisionedConcurrency += int(num(pc["ProvisionedConcurrentExecutions"], 0))
		}
	}
	return nil
}

// resolveRoles names the functions by what invokes them: the API routes
// (through their integrations) and the schedule.
func (inv *Inventory) resolveRoles(all map[string]resource) error {
	role := func(fnID, name string) error {
		f, ok := inv.Functions[fnID]
		if !ok {
			return fmt.Errorf("cost: %s targets %q, which is not a Lambda function in the template", name, fnID)
		}
		f.Roles = append(f.Roles, name)
		inv.Functions[fnID] = f
		return nil
	}
	for _, r := range inv.API.routes {
		integ := strings.TrimPrefix(joined(r.target), "integrations/")
		fnID := getAttTarget(all[integ].Properties["IntegrationUri"])
		if fnID == "" {
			continue
		}
		if err := role(fnID, r.key); err != nil {
			return err
		}
	}
	for i, s := range inv.Schedules {
		for _, fnID := range s.Targets {
			if err := role(fnID, "schedule "+s.Expression); err != nil {
				return err
			}
		}
		inv.Schedules[i] = s
	}
	return nil
}

func parseFunction(id string, p map[string]any) (Function, error) {
	f := Function{
		ID:       id,
		MemoryMB: int(num(p["MemorySize"], 128)), // CloudFormation's default
		Arch:     "x86_64",
		Timeout:  int(num(p["Timeout"], 3)),
		Env:      map[string]string{},
	}
	if a := list(p["Architectures"]); len(a) > 0 {
		f.Arch = str(a[0], "x86_64")
	}
	if rc, ok := p["ReservedConcurrentExecutions"]; ok {
		n := int(num(rc, 0))
		f.ReservedConcurrency = &n
	}
	if lc, ok := p["LoggingConfig"].(map[string]any); ok {
		f.LogFormat = str(lc["LogFormat"], "")
		f.SystemLogLevel = str(lc["SystemLogLevel"], "")
		f.ApplicationLogLevel = str(lc["ApplicationLogLevel"], "")
		if ref, ok := lc["LogGroup"].(map[string]any); ok {
			f.LogGroup = str(ref["Ref"], "")
		}
	}
	if f.LogFormat == "" {
		f.LogFormat = "Text"
	}
	if env, ok := p["Environment"].(map[string]any); ok {
		vars, _ := env["Variables"].(map[string]any)
		for k, v := range vars {
			// Values built from other resources (REDIS_URL, ARNs) are
			// intrinsic functions, and {{resolve:…}} references (the proxy
			// and ticket keys) exist only at deploy time: neither configures
			// anything the model prices.
			if s, ok := v.(string); ok && !strings.HasPrefix(s, "{{resolve:") {
				f.Env[k] = s
			}
		}
	}
	f.EnvironmentKey = p["KmsKeyArn"] != nil
	if ep, ok := p["EphemeralStorage"].(map[string]any); ok {
		f.EphemeralMB = int(num(ep["Size"], 512))
	}
	return f, nil
}

func parseAlarm(p map[string]any) Alarm {
	a := Alarm{Name: str(p["AlarmName"], "")}
	if _, ok := p["MetricName"]; ok {
		a.Metrics = 1
		a.HighResolution = num(p["Period"], 60) < 60
		return a
	}
	for _, m := range list(p["Metrics"]) {
		mm, _ := m.(map[string]any)
		if ms, ok := mm["MetricStat"].(map[string]any); ok {
			a.Metrics++
			a.HighResolution = a.HighResolution || num(ms["Period"], 60) < 60
		}
	}
	return a
}

func parseServerlessCache(p map[string]any) ServerlessCache {
	c := ServerlessCache{Engine: str(p["Engine"], "redis"), SnapshotRetentionDays: int(num(p["SnapshotRetentionLimit"], 0))}
	if lim, ok := p["CacheUsageLimits"].(map[string]any); ok {
		if ds, ok := lim["DataStorage"].(map[string]any); ok {
			c.MinStorageGB = num(ds["Minimum"], 0)
			if str(ds["Unit"], "GB") != "GB" {
				c.MinStorageGB = 0
			}
		}
		if e, ok := lim["ECPUPerSecond"].(map[string]any); ok {
			c.MinECPUPerSecond = num(e["Minimum"], 0)
		}
	}
	return c
}
