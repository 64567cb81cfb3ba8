package main

import (
	"crypto/sha256"
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsbudgets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"github.com/waitroom/waitroom/metrics"
)

// Alarm thresholds, in the units of each alarm's metric or expression.
const (
	// AdmitStalledThreshold: fewer admit batches than this in a minute.
	AdmitStalledThreshold = 1
	// QueueNearCapacityFraction of QUEUE_CAPACITY in the fullest room.
	QueueNearCapacityFraction = 0.9
	// LowConversionPercent: tokens consumed per admitted user, in percent.
	LowConversionPercent = 50
	// HighExpiryPercent: tokens expired per admitted user, in percent.
	HighExpiryPercent = 30
	// Api5xxPercent: 5xx answers per request, in percent.
	Api5xxPercent = 1
	// RateMinSample: the rate alarms stay quiet below this many admissions
	// (or requests) in their window, where a percentage means little.
	RateMinSample = 100
	// FunctionErrorsThreshold and FunctionThrottlesThreshold: per function,
	// over five minutes.
	FunctionErrorsThreshold    = 1
	FunctionThrottlesThreshold = 1
	// LatencyP99Ms: p99 of enter and position, in milliseconds (the order
	// route's is half of ORDER_TIMEOUT_MS).
	LatencyP99Ms = 1000
	// StoreUnavailableThreshold: 503s for an unreachable store, per oneMinute(),
	// two minutes in a row.
	StoreUnavailableThreshold = 1
)

// AlarmIDs names the stack's alarms (construct ids, also the suffix of the
// alarm names). Function alarms are <Function>Errors and <Function>Throttles.
const (
	AlarmAdmitErrors       = "AdmitErrors"
	AlarmLambdaThrottles   = "LambdaThrottles"
	AlarmApiThrottled      = "ApiThrottled"
	AlarmLatencyPrefix     = "LatencyP99"
	AlarmCacheLoad         = "CacheLoad"
	AlarmCacheNearLimit    = "CacheNearLimit"
	AlarmAdmitStalled      = "AdmitStalled"
	AlarmQueueNearCapacity = "QueueNearCapacity"
	AlarmLowConversion     = "LowTokenConversion"
	AlarmHighExpiry        = "HighTokenExpiry"
	AlarmApi5xx            = "Api5xxRate"
	AlarmStoreUnavailable  = "StoreUnavailable"
)

// wrMetric is a Waitroom metric in its all-rooms aggregate (no dimension).
func wrMetric(name, stat string, period awscdk.Duration, label string) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:  jsii.String(metrics.Namespace),
		MetricName: jsii.String(name),
		Statistic:  jsii.String(stat),
		Period:     period,
		Label:      jsii.String(label),
	})
}

// rateWindow is the window of the conversion and expiry alarms: three token
// lives (tokens are consumed or expire up to one TTL after admission), at
// least 15 minutes, in whole minutes.
func rateWindow(p WaitroomProps) awscdk.Duration {
	minutes := (3*p.EntryTokenTTLSeconds + 59) / 60
	if minutes < 15 {
		minutes = 15
	}
	return awscdk.Duration_Minutes(jsii.Number(float64(minutes)))
}

// conversionExpr and expiryExpr are the alarm expressions, in percent.
func conversionExpr(period awscdk.Duration) awscloudwatch.MathExpression {
	return shareOfAdmitted("consumed", metrics.TokensConsumed, "Tokens consumed", 100, "Token conversion % (consumed / admitted)", period)
}

func expiryExpr(period awscdk.Duration) awscloudwatch.MathExpression {
	return shareOfAdmitted("expired", metrics.TokensExpired, "Tokens expired", 0, "Token expiry % (expired / admitted)", period)
}

// filled is a metric-math input read as 0 where it has no data point. An
// expression is evaluated only where all its inputs have one, and our
// inputs are missing exactly when there is something to alarm about (no
// successful order yet: no TokensConsumed; a function never throttled),
// so each is read through FILL.
func filled(id string) string { return "FILL(" + id + ", 0)" }

// shareOfAdmitted is 100 × metric / Admitted (metric named id in the
// expression), or fewSamples while fewer than RateMinSample users were
// admitted in the period (too few to judge).
func shareOfAdmitted(id, metric, metricLabel string, fewSamples int, label string, period awscdk.Duration) awscloudwatch.MathExpression {
	admitted := filled("admitted")
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(fmt.Sprintf("IF(%s >= %d, 100 * %s / %s, %d)", admitted, RateMinSample, filled(id), admitted, fewSamples)),
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"admitted": wrMetric(metrics.Admitted, "Sum", period, "Admitted"),
			id:         wrMetric(metric, "Sum", period, metricLabel),
		},
		Label:  jsii.String(label),
		Period: period,
	})
}

// newMonitoring adds the alarms and the dashboard; it returns the dashboard name.
func newMonitoring(stack awscdk.Stack, p WaitroomProps, w *Waitroom) string {
	alarms := newAlarms(stack, p, w, newAlarmTopic(stack, p))
	return newDashboard(stack, p, w, alarms)
}

// newAlarmTopic is where alarms notify: the operator's topic, a new one
// with an e-mail subscription, or none.
func newAlarmTopic(stack awscdk.Stack, p WaitroomProps) awssns.ITopic {
	var topic awssns.ITopic
	switch {
	case p.AlarmTopicArn != "":
		topic = awssns.Topic_FromTopicArn(stack, jsii.String("AlarmTopic"), jsii.String(p.AlarmTopicArn))
	case p.AlarmEmail != "":
		t := awssns.NewTopic(stack, jsii.String("AlarmTopic"), &awssns.TopicProps{DisplayName: jsii.String("Waitroom alarms")})
		t.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(p.AlarmEmail), nil))
		topic = t
	}
	if topic != nil {
		awscdk.NewCfnOutput(stack, jsii.String("AlarmTopicArn"), &awscdk.CfnOutputProps{Value: topic.TopicArn()})
	}
	return topic
}

// alarmSet adds alarms that all notify one topic and collects them for the
// dashboard's alarm status widget.
type alarmSet struct {
	stack  awscdk.Stack
	prefix string
	topic  awssns.ITopic
	all    []interfacesawscloudwatch.IAlarmRef
}

func (s *alarmSet) add(id, desc string, m awscloudwatch.IMetric, threshold float64, op awscloudwatch.ComparisonOperator,
	periods, datapoints float64, missing awscloudwatch.TreatMissingData) awscloudwatch.Alarm {
	a := awscloudwatch.NewAlarm(s.stack, jsii.String(id), &awscloudwatch.AlarmProps{
		AlarmName:          jsii.String(s.prefix + "-" + id),
		AlarmDescription:   jsii.String(desc + " See infra/README.md, Alarms."),
		Metric:             m,
		Threshold:          jsii.Number(threshold),
		ComparisonOperator: op,
		EvaluationPeriods:  jsii.Number(periods),
		DatapointsToAlarm:  jsii.Number(datapoints),
		TreatMissingData:   missing,
	})
	s.notify(a)
	return a
}

// notify sends a's state changes to the topic and lists it on the dashboard.
func (s *alarmSet) notify(a awscloudwatch.Alarm) {
	if s.topic != nil {
		a.AddAlarmAction(awscloudwatchactions.NewSnsAction(s.topic))
		a.AddOkAction(awscloudwatchactions.NewSnsAction(s.topic))
	}
	s.all = append(s.all, a)
}

// newAlarms adds the domain alarms and the operational ones. Each alarm
// costs $0.10 a month per metric it reads (infra/README.md counts them), so
// one alarm covers what one operator action answers.
func newAlarms(stack awscdk.Stack, p WaitroomProps, w *Waitroom, topic awssns.ITopic) []interfacesawscloudwatch.IAlarmRef {
	set := &alarmSet{stack: stack, prefix: p.NamePrefix, topic: topic}
	domainAlarms(set, p)
	apiAlarms(set, p, w)
	functionAlarms(set, w)
	cacheAlarms(set, p, w.Cache)
	if w.Intake != nil {
		set.notify(w.Intake.DeadLetterAlarm)
	}
	newBudget(stack, p)
	return set.all
}

// domainAlarms read the functions' own metrics (the all-rooms aggregate).
func domainAlarms(set *alarmSet, p WaitroomProps) {
	// Two empty minutes out of three: an idle admit runs one batch a
	// minute, and a tick can land either side of a minute's boundary.
	set.add(AlarmAdmitStalled,
		"No admit batch ran in two of the last three minutes: the line is frozen.",
		wrMetric(metrics.AdmitBatches, "Sum", oneMinute(), "Admit batches"),
		AdmitStalledThreshold, awscloudwatch.ComparisonOperator_LESS_THAN_THRESHOLD, 3, 2,
		awscloudwatch.TreatMissingData_BREACHING)
	set.add(AlarmQueueNearCapacity,
		fmt.Sprintf("The fullest room holds more than %.0f%% of QUEUE_CAPACITY (%d): new arrivals will soon get 429 queue_full.",
			QueueNearCapacityFraction*100, p.QueueCapacity),
		wrMetric(metrics.QueueDepth, "Maximum", oneMinute(), "Queue depth (fullest room)"),
		QueueNearCapacityFraction*float64(p.QueueCapacity), awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD, 1, 1,
		awscloudwatch.TreatMissingData_NOT_BREACHING)
	set.add(AlarmLowConversion,
		fmt.Sprintf("Fewer than %d%% of admitted users ordered with their entry token.", LowConversionPercent),
		conversionExpr(rateWindow(p)),
		LowConversionPercent, awscloudwatch.ComparisonOperator_LESS_THAN_THRESHOLD, 1, 1,
		awscloudwatch.TreatMissingData_NOT_BREACHING)
	set.add(AlarmHighExpiry,
		fmt.Sprintf("More than %d%% of entry tokens expired unused.", HighExpiryPercent),
		expiryExpr(rateWindow(p)),
		HighExpiryPercent, awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD, 1, 1,
		awscloudwatch.TreatMissingData_NOT_BREACHING)
	set.add(AlarmStoreUnavailable,
		"Requests were answered 503 because the cache could not be reached, two minutes in a row.",
		wrMetric(metrics.StoreUnavailable, "Sum", oneMinute(), "Store unavailable"),
		StoreUnavailableThreshold, awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD, 2, 2,
		awscloudwatch.TreatMissingData_NOT_BREACHING)
}

// routeLatency is API Gateway's per-route latency (detailed metrics).
func routeLatency(w *Waitroom, r route) awscloudwatch.IMetric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String("AWS/ApiGateway"), MetricName: jsii.String("Latency"),
		DimensionsMap: &map[string]*string{
			"ApiId": w.API.ApiId(), "Stage": jsii.String("$default"),
			"Resource": jsii.String(r.path), "Method": jsii.String(string(r.method)),
		},
		Statistic: jsii.String("p99"), Period: oneMinute(), Label: jsii.String(r.key() + " p99"),
	})
}

// apiAlarms: the share of 5xx, p99 latency per route, and API Gateway's
// own throttling (a 429 before any function ran).
func apiAlarms(set *alarmSet, p WaitroomProps, w *Waitroom) {
	api5xx := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(fmt.Sprintf("IF(%s >= %d, 100 * %s / %s, 0)", filled("requests"), RateMinSample, filled("errors"), filled("requests"))),
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"requests": w.API.MetricCount(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: oneMinute()}),
			"errors":   w.API.MetricServerError(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: oneMinute()}),
		},
		Label:  jsii.String("API 5xx %"),
		Period: oneMinute(),
	})
	set.add(AlarmApi5xx,
		fmt.Sprintf("More than %d%% of API answers were 5xx in 3 of the last 5 minutes (function errors and throttles show here too).", Api5xxPercent),
		api5xx, Api5xxPercent, awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD, 5, 3,
		awscloudwatch.TreatMissingData_NOT_BREACHING)
	for _, r := range routes {
		if r.public { // the JWKS: static, cached by origins; its function's own route has the alarm
			continue
		}
		limit := float64(LatencyP99Ms)
		if r.fn == FnOrderGate {
			limit = float64(p.OrderTimeoutMs) / 2
		}
		set.add(AlarmLatencyPrefix+logicalName(r.fn),
			fmt.Sprintf("p99 latency of %s above %.0f ms in 3 of the last 5 minutes.", r.key(), limit),
			routeLatency(w, r), limit, awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD, 5, 3,
			awscloudwatch.TreatMissingData_NOT_BREACHING)
	}
	set.add(AlarmApiThrottled,
		"API Gateway throttled requests (429 without Retry-After) in 2 of the last 3 minutes: a route limit or the account quota.",
		awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace: jsii.String(p.ApiThrottledNamespace()), MetricName: jsii.String(ApiThrottledMetric),
			Statistic: jsii.String("Sum"), Period: oneMinute(),
		}),
		1, awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD, 3, 2,
		awscloudwatch.TreatMissingData_NOT_BREACHING)
}

// functionAlarms: throttles of the functions on the sale's path (one alarm,
// four metrics), and admit's errors. The other functions' errors reach users
// as 5xx, which Api5xxRate watches; admit has no caller to see them. The
// admin function is left out: an operator sees its throttling at once in
// waitroomctl, and each alarm metric costs $0.10 a month.
func functionAlarms(set *alarmSet, w *Waitroom) {
	five := awscdk.Duration_Minutes(jsii.Number(5))
	using := map[string]awscloudwatch.IMetric{}
	var ids []string
	for _, name := range w.Props.FunctionNames() {
		if name == FnAdmin {
			continue
		}
		id := "t" + strings.ReplaceAll(name, "-", "")
		ids = append(ids, filled(id))
		using[id] = w.Functions[name].MetricThrottles(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: five})
	}
	set.add(AlarmLambdaThrottles,
		"A function was throttled (its reserved concurrency, the order gate's cap, or the account's limit) in the last 5 minutes.",
		awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String(strings.Join(ids, " + ")), UsingMetrics: &using,
			Label: jsii.String("Lambda throttles"), Period: five,
		}),
		FunctionThrottlesThreshold, awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD, 1, 1,
		awscloudwatch.TreatMissingData_NOT_BREACHING)
	set.add(AlarmAdmitErrors,
		"Function admit failed (crash, timeout or init error) in the last 5 minutes.",
		w.Functions[FnAdmit].MetricErrors(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: five}),
		FunctionErrorsThreshold, awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD, 1, 1,
		awscloudwatch.TreatMissingData_NOT_BREACHING)
}

// cacheMetric is an AWS/ElastiCache metric of the stack's cache.
func cacheMetric(p WaitroomProps, c *Cache, name, stat string) awscloudwatch.IMetric {
	dims := map[string]*string{"clusterId": jsii.String(c.Name)}
	if p.CacheMode == CacheReplicationGroup {
		// Node metrics; -001 is the primary until a failover.
		dims = map[string]*string{"CacheClusterId": jsii.String(c.Name + "-001")}
	}
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String("AWS/ElastiCache"), MetricName: jsii.String(name), DimensionsMap: &dims,
		Statistic: jsii.String(stat), Period: oneMinute(),
	})
}

// cacheAlarms: the serverless cache throttling commands, or its ECPU
// nearing the usage limit; for a replication group, its engine CPU and memory.
func cacheAlarms(set *alarmSet, p WaitroomProps, c *Cache) {
	if p.CacheMode == CacheReplicationGroup {
		set.add(AlarmCacheLoad, "The cache's engine CPU was above 80% in 3 of the last 5 minutes.",
			cacheMetric(p, c, "EngineCPUUtilization", "Maximum"), 80,
			awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD, 5, 3, awscloudwatch.TreatMissingData_NOT_BREACHING)
		set.add(AlarmCacheNearLimit, "The cache's memory was more than 80% used in 3 of the last 5 minutes.",
			cacheMetric(p, c, "DatabaseMemoryUsagePercentage", "Maximum"), 80,
			awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD, 5, 3, awscloudwatch.TreatMissingData_NOT_BREACHING)
		return
	}
	set.add(AlarmCacheLoad, "The cache throttled commands in 2 of the last 3 minutes (ECPU limit or scaling).",
		cacheMetric(p, c, "ThrottledCmds", "Sum"), 1,
		awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD, 3, 2, awscloudwatch.TreatMissingData_NOT_BREACHING)
	set.add(AlarmCacheNearLimit,
		fmt.Sprintf("The cache used more than 80%% of cacheMaxEcpuPerSecond (%d) in 3 of the last 5 minutes.", p.CacheMaxECPUPerSecond),
		cacheMetric(p, c, "ElastiCacheProcessingUnits", "Sum"), 0.8*60*float64(p.CacheMaxECPUPerSecond),
		awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD, 5, 3, awscloudwatch.TreatMissingData_NOT_BREACHING)
}

// newBudget is a monthly cost budget for the account (AWS Budgets has no
// notion of a stack without activated cost-allocation tags): 80% of the
// amount spent, and 100% forecast, notify the alarm e-mail or topic.
//
// A budget's notifications cannot change in place: CloudFormation replaces
// the budget, creating the new one before deleting the old, and budget names
// are unique in the account. So the budget's logical id and name carry a
// digest of its subscribers (none: plain <prefix>-monthly), and a change of
// alarm target creates a budget of another name.
func newBudget(stack awscdk.Stack, p WaitroomProps) {
	var subscribers []*awsbudgets.CfnBudget_SubscriberProperty
	var policy awssns.CfnTopicPolicy
	switch {
	case p.AlarmEmail != "":
		subscribers = append(subscribers, &awsbudgets.CfnBudget_SubscriberProperty{SubscriptionType: jsii.String("EMAIL"), Address: jsii.String(p.AlarmEmail)})
	case p.AlarmTopicArn != "":
		subscribers = append(subscribers, &awsbudgets.CfnBudget_SubscriberProperty{SubscriptionType: jsii.String("SNS"), Address: jsii.String(p.AlarmTopicArn)})
		policy = budgetTopicPolicy(stack, p.AlarmTopicArn)
	}
	id, name := "Budget", p.NamePrefix+"-monthly"
	if suffix := subscribersDigest(subscribers); suffix != "" {
		id, name = id+suffix, name+"-"+suffix
	}
	props := &awsbudgets.CfnBudgetProps{Budget: &awsbudgets.CfnBudget_BudgetDataProperty{
		BudgetName: jsii.String(name), BudgetType: jsii.String("COST"), TimeUnit: jsii.String("MONTHLY"),
		BudgetLimit: &awsbudgets.CfnBudget_SpendProperty{Amount: jsii.Number(float64(p.BudgetMonthlyUSD)), Unit: jsii.String("USD")},
	}}
	if subscribers != nil {
		var notifications []*awsbudgets.CfnBudget_NotificationWithSubscribersProperty
		for _, n := range []struct {
			kind      string
			threshold float64
		}{{"ACTUAL", 80}, {"FORECASTED", 100}} {
			notifications = append(notifications, &awsbudgets.CfnBudget_NotificationWithSubscribersProperty{
				Notification: &awsbudgets.CfnBudget_NotificationProperty{NotificationType: jsii.String(n.kind),
					ComparisonOperator: jsii.String("GREATER_THAN"), Threshold: jsii.Number(n.threshold), ThresholdType: jsii.String("PERCENTAGE")},
				Subscribers: &subscribers,
			})
		}
		props.NotificationsWithSubscribers = &notifications
	}
	budget := awsbudgets.NewCfnBudget(stack, jsii.String(id), props)
	if policy != nil {
		budget.AddResourceDependency(policy, jsii.String("Budgets checks it may publish when the notification is created"))
	}
}

// subscribersDigest is 8 hex digits naming a set of subscribers ("" for none).
func subscribersDigest(subscribers []*awsbudgets.CfnBudget_SubscriberProperty) string {
	if len(subscribers) == 0 {
		return ""
	}
	h := sha256.New()
	for _, s := range subscribers {
		fmt.Fprintf(h, "%s %s\n", *s.SubscriptionType, *s.Address)
	}
	return fmt.Sprintf("%x", h.Sum(nil))[:8]
}

// budgetTopicPolicy lets AWS Budgets publish to the operator's topic, for
// budgets of this account only. A topic policy replaces the topic's whole
// access policy, so it also keeps the statement every new topic has (the
// owner account may publish, subscribe and manage it), which is what the
// alarms need. An operator whose topic policy is managed elsewhere sets
// alarmEmail as well: the budget then mails it and no policy is written.
func budgetTopicPolicy(stack awscdk.Stack, topicArn string) awssns.CfnTopicPolicy {
	account := awscdk.Arn_Split(jsii.String(topicArn), awscdk.ArnFormat_NO_RESOURCE_NAME).Account
	doc := map[string]any{
		"Version": "2012-10-17",
		"Statement": []any{
			map[string]any{
				"Sid": "OwnerAccount", "Effect": "Allow", "Principal": map[string]any{"AWS": "*"}, "Resource": topicArn,
				"Action": []any{"SNS:GetTopicAttributes", "SNS:SetTopicAttributes", "SNS:AddPermission", "SNS:RemovePermission",
					"SNS:DeleteTopic", "SNS:Subscribe", "SNS:ListSubscriptionsByTopic", "SNS:Publish"},
				"Condition": map[string]any{"StringEquals": map[string]any{"AWS:SourceOwner": account}},
			},
			map[string]any{
				"Sid": "BudgetsPublish", "Effect": "Allow", "Principal": map[string]any{"Service": "budgets.amazonaws.com"},
				"Action": "SNS:Publish", "Resource": topicArn,
				"Condition": map[string]any{
					"StringEquals": map[string]any{"aws:SourceAccount": account},
					"ArnLike":      map[string]any{"aws:SourceArn": awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String("arn:"), awscdk.Aws_PARTITION(), jsii.String(":budgets::"), account, jsii.String(":*")})},
				},
			},
		},
	}
	return awssns.NewCfnTopicPolicy(stack, jsii.String("BudgetTopicPolicy"), &awssns.CfnTopicPolicyProps{
		Topics: jsii.Strings(topicArn), PolicyDocument: doc,
	})
}
