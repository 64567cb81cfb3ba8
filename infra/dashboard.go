package main

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"github.com/waitroom/waitroom/metrics"
)

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
	for _, row := range [][]awscloudwatch.IWidget{nowRow(), lineRow(p), tokenRow(p), apiRow(w), functionRow(w), opsRow(p, w), perRoomRow()} {
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
			metricsOf(m(metrics.Entered, "Sum", "Entered"), m(metrics.QueueFull, "Sum", "Refused: queue full (429)"),
				m(metrics.Accepted, "Sum", "Accepted into the broker (202)")), nil, nil),
		graph("Admission per minute", 8, metricsOf(m(metrics.Admitted, "Sum", "Admitted")),
			metricsOf(m(metrics.AdmitBatches, "Sum", "Admit batches (heartbeat)"),
				m(metrics.EffectiveRate, "Maximum", "Effective rate per second (fastest room; adaptive rooms move it)")), nil),
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
		// Abuse and the deliberate fail-opens (issue 12, docs/security.md).
		graph("Rate limited (429) and fail-open per minute", 8,
			metricsOf(m(metrics.RateLimited, "Sum", "Rate limited"), m(metrics.LimiterFailOpen, "Sum", "Limiter failed open"),
				m(metrics.OrdersFailOpen, "Sum", "Orders forwarded unguarded")), nil, nil),
		graph("API", 8,
			metricsOf(w.API.MetricCount(opt("Sum", "Requests")), w.API.MetricClientError(opt("Sum", "4xx")),
				w.API.MetricServerError(opt("Sum", "5xx"))),
			metricsOf(w.API.MetricLatency(opt("p99", "Latency p99 (ms)"))), nil),
	}
}

func functionRow(w *Waitroom) []awscloudwatch.IWidget {
	per := func(f func(fn awslambda.Function, o *awscloudwatch.MetricOptions) awscloudwatch.IMetric, stat, suffix string) []awscloudwatch.IMetric {
		var out []awscloudwatch.IMetric
		for _, n := range w.Props.FunctionNames() {
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

// opsRow: per-route latency, the cache's load, API Gateway's own 429s.
func opsRow(p WaitroomProps, w *Waitroom) []awscloudwatch.IWidget {
	var latency []awscloudwatch.IMetric
	for _, r := range routes {
		if !r.public {
			latency = append(latency, routeLatency(w, r))
		}
	}
	cache := metricsOf(cacheMetric(p, w.Cache, "ThrottledCmds", "Sum"))
	load := metricsOf(cacheMetric(p, w.Cache, "ElastiCacheProcessingUnits", "Sum"))
	if p.CacheMode == CacheReplicationGroup {
		cache = metricsOf(cacheMetric(p, w.Cache, "DatabaseMemoryUsagePercentage", "Maximum"))
		load = metricsOf(cacheMetric(p, w.Cache, "EngineCPUUtilization", "Maximum"))
	}
	return []awscloudwatch.IWidget{
		graph("Latency p99 per route (ms)", 8, latency, nil, nil),
		graph("Cache", 8, load, cache, nil),
		graph("Throttled by API Gateway (429, per minute)", 8, metricsOf(awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace: jsii.String(p.ApiThrottledNamespace()), MetricName: jsii.String(ApiThrottledMetric),
			Statistic: jsii.String("Sum"), Period: oneMinute(),
		})), nil, nil),
	}
}
