package main

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
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
	// StoreUnavailableThreshold: 503s for an unreachable store, per oneMinute(),
	// two minutes in a row.
	StoreUnavailableThreshold = 1
)

// AlarmIDs names the stack's alarms (construct ids, also the suffix of the
// alarm names). Function alarms are <Function>Errors and <Function>Throttles.
const (
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

// shareOfAdmitted is 100 × metric / Admitted (metric named id in the
// expression), or fewSamples while fewer than RateMinSample users were
// admitted in the period (too few to judge).
func shareOfAdmitted(id, metric, metricLabel string, fewSamples int, label string, period awscdk.Duration) awscloudwatch.MathExpression {
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(fmt.Sprintf("IF(admitted >= %d, 100 * %s / admitted, %d)", RateMinSample, id, fewSamples)),
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
	if s.topic != nil {
		a.AddAlarmAction(awscloudwatchactions.NewSnsAction(s.topic))
		a.AddOkAction(awscloudwatchactions.NewSnsAction(s.topic))
	}
	s.all = append(s.all, a)
	return a
}

// newAlarms adds the domain alarms and the operational ones.
func newAlarms(stack awscdk.Stack, p WaitroomProps, w *Waitroom, topic awssns.ITopic) []interfacesawscloudwatch.IAlarmRef {
	five := awscdk.Duration_Minutes(jsii.Number(5))
	window := rateWindow(p)
	set := &alarmSet{stack: stack, prefix: p.NamePrefix, topic: topic}
	alarm := set.add

	alarm(AlarmAdmitStalled,
		"No admit batch ran in the last minute: the line is frozen.",
		wrMetric(metrics.AdmitBatches, "Sum", oneMinute(), "Admit batches"),
		AdmitStalledThreshold, awscloudwatch.ComparisonOperator_LESS_THAN_THRESHOLD, 1, 1,
		awscloudwatch.TreatMissingData_BREACHING)

	capacityThreshold := QueueNearCapacityFraction * float64(p.QueueCapacity)
	alarm(AlarmQueueNearCapacity,
		fmt.Sprintf("The fullest room holds more than %.0f%% of QUEUE_CAPACITY (%d): new arrivals will soon get 429 queue_full.",
			QueueNearCapacityFraction*100, p.QueueCapacity),
		wrMetric(metrics.QueueDepth, "Maximum", oneMinute(), "Queue depth (fullest room)"),
		capacityThreshold, awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD, 1, 1,
		awscloudwatch.TreatMissingData_NOT_BREACHING)

	alarm(AlarmLowConversion,
		fmt.Sprintf("Fewer than %d%% of admitted users ordered with their entry token.", LowConversionPercent),
		conversionExpr(window),
		LowConversionPercent, awscloudwatch.ComparisonOperator_LESS_THAN_THRESHOLD, 1, 1,
		awscloudwatch.TreatMissingData_NOT_BREACHING)

	alarm(AlarmHighExpiry,
		fmt.Sprintf("More than %d%% of entry tokens expired unused.", HighExpiryPercent),
		expiryExpr(window),
		HighExpiryPercent, awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD, 1, 1,
		awscloudwatch.TreatMissingData_NOT_BREACHING)

	api5xx := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(fmt.Sprintf("IF(requests >= %d, 100 * errors / requests, 0)", RateMinSample)),
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"requests": w.API.MetricCount(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: oneMinute()}),
			"errors":   w.API.MetricServerError(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: oneMinute()}),
		},
		Label:  jsii.String("API 5xx %"),
		Period: oneMinute(),
	})
	alarm(AlarmApi5xx,
		fmt.Sprintf("More than %d%% of API answers were 5xx in 3 of the last 5 minutes.", Api5xxPercent),
		api5xx, Api5xxPercent, awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD, 5, 3,
		awscloudwatch.TreatMissingData_NOT_BREACHING)

	alarm(AlarmStoreUnavailable,
		"Requests were answered 503 because the cache could not be reached, two minutes in a row.",
		wrMetric(metrics.StoreUnavailable, "Sum", oneMinute(), "Store unavailable"),
		StoreUnavailableThreshold, awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD, 2, 2,
		awscloudwatch.TreatMissingData_NOT_BREACHING)

	for _, name := range Functions {
		fn := w.Functions[name]
		alarm(logicalName(name)+"Errors",
			fmt.Sprintf("Function %s failed (crash, timeout or init error) in the last 5 minutes.", name),
			fn.MetricErrors(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: five}),
			FunctionErrorsThreshold, awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD, 1, 1,
			awscloudwatch.TreatMissingData_NOT_BREACHING)
		alarm(logicalName(name)+"Throttles",
			fmt.Sprintf("Function %s was throttled (concurrency limit) in the last 5 minutes.", name),
			fn.MetricThrottles(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: five}),
			FunctionThrottlesThreshold, awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD, 1, 1,
			awscloudwatch.TreatMissingData_NOT_BREACHING)
	}

	return set.all
}

// newDashboard lays out the operator's page: the alarm states on top, then
// the line, admission, tokens, orders, the API and the functions.
func newDashboard(stack awscdk.Stack, p WaitroomProps, w *Waitroom, alarms []interfacesawscloudwatch.IAlarmRef) string {
	dash := awscloudwatch.NewDashboard(stack, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DashboardName:   jsii.String(p.NamePrefix),
		DefaultInterval: awscdk.Duration_Hours(jsii.Number(3)),
	})
	dash.AddWidgets(awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{
		Markdown: jsii.String(fmt.Sprintf("# Waitroom\nAdmission %g/s per room in batches every %d ms; capacity %d per room; "+
			"entry tokens live %d s. Alarms and what to do: infra/README.md.",
			p.AdmitRatePerSec, p.AdmitIntervalMs, p.QueueCapacity, p.EntryTokenTTLSeconds)),
		Width: jsii.Number(24), Height: jsii.Number(2),
	}))
	dash.AddWidgets(awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{
		Title: jsii.String("Alarms"), Alarms: &alarms, Width: jsii.Number(24), Height: jsii.Number(4),
	}))
	for _, row := range [][]awscloudwatch.IWidget{nowRow(), lineRow(p), tokenRow(p), apiRow(w), functionRow(w), perRoomRow()} {
		dash.AddWidgets(row...)
	}
	return p.NamePrefix
}

// oneMinute is the period of the per-minute views.
func oneMinute() awscdk.Duration { return awscdk.Duration_Minutes(jsii.Number(1)) }

// graph is a 6-high graph widget; right and ann may be nil.
func graph(title string, width float64, left, right []awscloudwatch.IMetric, ann []*awscloudwatch.HorizontalAnnotation) awscloudwatch.IWidget {
	props := &awscloudwatch.GraphWidgetProps{Title: jsii.String(title), Width: jsii.Number(width), Height: jsii.Number(6), Left: &left}
	if len(right) > 0 {
		props.Right = &right
	}
	if len(ann) > 0 {
		props.LeftAnnotations = &ann
	}
	return awscloudwatch.NewGraphWidget(props)
}

// m is a Waitroom aggregate metric per minute.
func m(name, stat, label string) awscloudwatch.IMetric {
	return wrMetric(name, stat, oneMinute(), label)
}

func metricsOf(ms ...awscloudwatch.IMetric) []awscloudwatch.IMetric { return ms }

func nowRow() []awscloudwatch.IWidget {
	return []awscloudwatch.IWidget{awscloudwatch.NewSingleValueWidget(&awscloudwatch.SingleValueWidgetProps{
		Title: jsii.String("Now"), Width: jsii.Number(24), Height: jsii.Number(4),
		Metrics: &[]awscloudwatch.IMetric{
			m(metrics.QueueDepth, "Maximum", "Queue depth (fullest room)"),
			m(metrics.ActiveTokens, "Maximum", "Active tokens (fullest room)"),
			m(metrics.Admitted, "Sum", "Admitted / min"),
			m(metrics.WaitSeconds, "Average", "Wait s (avg)"),
			m(metrics.WaitSeconds, "p99", "Wait s (p99)"),
			m(metrics.AdmitBatches, "Sum", "Admit batches / min"),
		},
	})}
}

func lineRow(p WaitroomProps) []awscloudwatch.IWidget {
	return []awscloudwatch.IWidget{
		graph("Queue depth (fullest room)", 8, metricsOf(m(metrics.QueueDepth, "Maximum", "Queue depth")), nil,
			[]*awscloudwatch.HorizontalAnnotation{
				{Value: jsii.Number(QueueNearCapacityFraction * float64(p.QueueCapacity)), Label: jsii.String("alarm: 90% of capacity")},
				{Value: jsii.Number(float64(p.QueueCapacity)), Label: jsii.String("QUEUE_CAPACITY")},
			}),
		graph("Arrivals per minute", 8,
			metricsOf(m(metrics.Entered, "Sum", "Entered"), m(metrics.QueueFull, "Sum", "Refused: queue full (429)")), nil, nil),
		graph("Admission per minute", 8, metricsOf(m(metrics.Admitted, "Sum", "Admitted")),
			metricsOf(m(metrics.AdmitBatches, "Sum", "Admit batches (heartbeat)")), nil),
	}
}

func tokenRow(p WaitroomProps) []awscloudwatch.IWidget {
	window := rateWindow(p)
	return []awscloudwatch.IWidget{
		graph("Wait, enter to admitted (seconds)", 8,
			metricsOf(m(metrics.WaitSeconds, "Average", "Average"), m(metrics.WaitSeconds, "p99", "p99")), nil, nil),
		graph("Token conversion and expiry (%)", 8, metricsOf(conversionExpr(window), expiryExpr(window)), nil,
			[]*awscloudwatch.HorizontalAnnotation{
				{Value: jsii.Number(LowConversionPercent), Label: jsii.String("conversion alarm below")},
				{Value: jsii.Number(HighExpiryPercent), Label: jsii.String("expiry alarm above")},
			}),
		graph("Entry tokens per minute", 8,
			metricsOf(m(metrics.Admitted, "Sum", "Issued (admitted)"), m(metrics.TokensConsumed, "Sum", "Consumed"),
				m(metrics.TokensExpired, "Sum", "Expired"), m(metrics.TokensRejected, "Sum", "Rejected (403)")),
			metricsOf(m(metrics.ActiveTokens, "Maximum", "Active tokens (fullest room)")), nil),
	}
}

func apiRow(w *Waitroom) []awscloudwatch.IWidget {
	opt := func(stat, label string) *awscloudwatch.MetricOptions {
		return &awscloudwatch.MetricOptions{Statistic: jsii.String(stat), Period: oneMinute(), Label: jsii.String(label)}
	}
	return []awscloudwatch.IWidget{
		graph("Orders per minute", 8,
			metricsOf(m(metrics.OrdersPassed, "Sum", "Passed (2xx)"), m(metrics.OrdersFailed, "Sum", "Failed")), nil, nil),
		graph("Store unavailable (503) per minute", 8,
			metricsOf(m(metrics.StoreUnavailable, "Sum", "Store unavailable")), nil, nil),
		graph("API", 8,
			metricsOf(w.API.MetricCount(opt("Sum", "Requests")), w.API.MetricClientError(opt("Sum", "4xx")),
				w.API.MetricServerError(opt("Sum", "5xx"))),
			metricsOf(w.API.MetricLatency(opt("p99", "Latency p99 (ms)"))), nil),
	}
}

func functionRow(w *Waitroom) []awscloudwatch.IWidget {
	per := func(f func(fn awslambda.Function, o *awscloudwatch.MetricOptions) awscloudwatch.IMetric, stat, suffix string) []awscloudwatch.IMetric {
		var out []awscloudwatch.IMetric
		for _, n := range Functions {
			out = append(out, f(w.Functions[n], &awscloudwatch.MetricOptions{Statistic: jsii.String(stat), Period: oneMinute(), Label: jsii.String(n + suffix)}))
		}
		return out
	}
	errs := func(fn awslambda.Function, o *awscloudwatch.MetricOptions) awscloudwatch.IMetric {
		return fn.MetricErrors(o)
	}
	throttles := func(fn awslambda.Function, o *awscloudwatch.MetricOptions) awscloudwatch.IMetric {
		return fn.MetricThrottles(o)
	}
	duration := func(fn awslambda.Function, o *awscloudwatch.MetricOptions) awscloudwatch.IMetric {
		return fn.MetricDuration(o)
	}
	concurrent := func(fn awslambda.Function, o *awscloudwatch.MetricOptions) awscloudwatch.IMetric {
		return fn.Metric(jsii.String("ConcurrentExecutions"), o)
	}
	return []awscloudwatch.IWidget{
		graph("Function errors and throttles", 8, per(errs, "Sum", " errors"), per(throttles, "Sum", " throttles"), nil),
		graph("Function duration p99 (ms)", 8, per(duration, "p99", ""), nil, nil),
		graph("Concurrent executions (max)", 8, per(concurrent, "Maximum", ""), nil, nil),
	}
}

// perRoomRow shows every room with SEARCH, so new rooms appear by themselves.
func perRoomRow() []awscloudwatch.IWidget {
	perRoom := func(n, stat string) awscloudwatch.IMetric {
		return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String(fmt.Sprintf(`SEARCH('{%s,%s} MetricName="%s"', '%s', 60)`,
				metrics.Namespace, metrics.DimensionRoom, n, stat)),
			Label:  jsii.String(""),
			Period: oneMinute(),
		})
	}
	return []awscloudwatch.IWidget{
		graph("Per room: queue depth", 12, metricsOf(perRoom(metrics.QueueDepth, "Maximum")), nil, nil),
		graph("Per room: admitted per minute", 12, metricsOf(perRoom(metrics.Admitted, "Sum")), nil, nil),
	}
}
