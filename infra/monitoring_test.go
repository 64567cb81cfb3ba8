package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"

	"github.com/waitroom/waitroom/metrics"
)

// alarmMetrics counts the metrics an alarm reads: what CloudWatch bills
// ($0.10 a month each, standard resolution).
func alarmMetrics(a map[string]any) int {
	if a["MetricName"] != nil {
		return 1
	}
	n := 0
	for _, m := range asSlice(a["Metrics"]) {
		if m.(map[string]any)["MetricStat"] != nil {
			n++
		}
	}
	return n
}

func TestAlarmsAreLeanAndCoverTheOperatorsQuestions(t *testing.T) {
	s := def(t)
	want := map[string]int{ // alarm → metrics it reads
		AlarmAdmitStalled: 1, AlarmQueueNearCapacity: 1, AlarmLowConversion: 2, AlarmHighExpiry: 2, AlarmStoreUnavailable: 1,
		AlarmApi5xx: 2, AlarmLatencyPrefix + "Enter": 1, AlarmLatencyPrefix + "Position": 1, AlarmLatencyPrefix + "OrderGate": 1,
		AlarmApiThrottled: 1, AlarmLambdaThrottles: 4, AlarmAdmitErrors: 1, AlarmCacheLoad: 1, AlarmCacheNearLimit: 1,
	}
	s.tpl.ResourceCountIs(jsii.String("AWS::CloudWatch::Alarm"), jsii.Number(float64(len(want))))
	total := 0
	for id, n := range want {
		a := s.alarm(t, id)
		if got := alarmMetrics(a); got != n {
			t.Errorf("%s reads %d metrics, want %d", id, got, n)
		}
		total += n
	}
	if total != 20 {
		t.Errorf("alarms read %d metrics, want 20 ($2.00 a month)", total)
	}
	stalled := s.alarm(t, AlarmAdmitStalled)
	if stalled["EvaluationPeriods"] != float64(3) || stalled["DatapointsToAlarm"] != float64(2) || stalled["TreatMissingData"] != "breaching" ||
		!strings.Contains(js(stalled), `"MetricName":"`+metrics.AdmitBatches+`"`) || stalled["Threshold"] != float64(1) {
		t.Errorf("AdmitStalled = %s", js(stalled))
	}
	pos := js(s.alarm(t, AlarmLatencyPrefix+"Position"))
	for _, w := range []string{`"Stat":"p99"`, `"Value":"/queue/position"`, `"Value":"GET"`, `"Threshold":1000`} {
		if !strings.Contains(pos, w) {
			t.Errorf("position latency alarm lacks %s: %s", w, pos)
		}
	}
	if a := s.alarm(t, AlarmLatencyPrefix+"OrderGate"); a["Threshold"] != float64(5000) {
		t.Errorf("orders latency threshold = %v, want half of ORDER_TIMEOUT_MS", a["Threshold"])
	}
	throttles := js(s.alarm(t, AlarmLambdaThrottles))
	for _, name := range Functions {
		if name == FnAdmin { // left out on purpose (functionAlarms)
			continue
		}
		if !strings.Contains(throttles, s.fnID(name)) {
			t.Errorf("LambdaThrottles does not read %s", name)
		}
	}
	cache := js(s.alarm(t, AlarmCacheLoad)) + js(s.alarm(t, AlarmCacheNearLimit))
	for _, w := range []string{`"MetricName":"ThrottledCmds"`, `"MetricName":"ElastiCacheProcessingUnits"`, `"Value":"waitroom"`, `"Threshold":4800000`} {
		if !strings.Contains(cache, w) {
			t.Errorf("cache alarms lack %s: %s", w, cache)
		}
	}
	for id, r := range s.resources("AWS::CloudWatch::Alarm") {
		if props(r)["AlarmActions"] != nil {
			t.Errorf("alarm %s has actions without a topic", id)
		}
	}
}

func TestBudget(t *testing.T) {
	s := def(t)
	s.tpl.HasResourceProperties(jsii.String("AWS::Budgets::Budget"), map[string]any{
		"Budget": map[string]any{"BudgetName": "waitroom-monthly", "BudgetType": "COST", "TimeUnit": "MONTHLY",
			"BudgetLimit": map[string]any{"Amount": 50, "Unit": "USD"}},
	})
	s = synthesize(t, func(p *WaitroomProps) { p.AlarmEmail, p.BudgetMonthlyUSD = "oncall@example.com", 20 })
	b := props(s.resources("AWS::Budgets::Budget")[onlyKey(t, s.resources("AWS::Budgets::Budget"), "")])
	if !strings.Contains(js(b), `"Amount":20`) || strings.Count(js(b), `"Address":"oncall@example.com"`) != 2 ||
		!strings.Contains(js(b), `"NotificationType":"FORECASTED"`) || !strings.Contains(js(b), `"NotificationType":"ACTUAL"`) {
		t.Errorf("budget = %s, want actual and forecast notifications to the e-mail", js(b))
	}
	// Its notifications cannot change in place, so its name follows them.
	if name := b["Budget"].(map[string]any)["BudgetName"].(string); !strings.HasPrefix(name, "waitroom-monthly-") || len(name) != len("waitroom-monthly-")+8 {
		t.Errorf("budget with a subscriber named %q, want waitroom-monthly-<8 hex digits of its subscribers>", name)
	}
}

// AWS Budgets publishes to an SNS topic only when the topic's policy lets
// budgets.amazonaws.com do so. With the operator's topic (alarmTopicArn)
// the stack writes that policy, keeping the owner's default statement the
// alarms rely on; with alarmEmail as well the budget mails it and the
// topic's policy is left alone.
func TestBudgetToAnExistingTopic(t *testing.T) {
	const topic = "arn:aws:sns:eu-west-1:123456789012:oncall"
	s := synthesize(t, func(p *WaitroomProps) { p.AlarmTopicArn = topic })
	policies := s.resources("AWS::SNS::TopicPolicy")
	id := onlyKey(t, policies, "")
	p := props(policies[id])
	doc := js(p["PolicyDocument"])
	if js(p["Topics"]) != js([]any{topic}) || !strings.Contains(doc, `"Service":"budgets.amazonaws.com"`) ||
		!strings.Contains(doc, `"aws:SourceAccount":"123456789012"`) || !strings.Contains(doc, `"AWS:SourceOwner":"123456789012"`) {
		t.Errorf("topic policy %s: want budgets.amazonaws.com allowed to publish for this account, and the owner's statement kept", js(p))
	}
	budgets := s.resources("AWS::Budgets::Budget")
	b := budgets[onlyKey(t, budgets, "")]
	if !strings.Contains(js(b), `"SubscriptionType":"SNS"`) || !strings.Contains(js(b["DependsOn"]), id) {
		t.Errorf("budget %s: want SNS notifications created after the topic policy %s", js(b), id)
	}
	s = synthesize(t, func(p *WaitroomProps) { p.AlarmTopicArn, p.AlarmEmail = topic, "oncall@example.com" })
	if n := len(s.resources("AWS::SNS::TopicPolicy")); n != 0 {
		t.Errorf("with alarmEmail the budget mails it, yet %d topic policies were written", n)
	}
}

// A metric-math alarm evaluates its expression only where every input has
// a data point: with no successful order yet (TokensConsumed never
// published), conversion would be missing, not 0 %, and LowTokenConversion
// (missing data: not breaching) would never fire; one function never
// throttled would blank LambdaThrottles' sum. So each input is read through
// FILL(id, 0), in every configuration.
func TestMetricMathInputsAreFilled(t *testing.T) {
	_, stacks := documentedConfigurations(t)
	idRE := regexp.MustCompile(`\b[a-z][A-Za-z0-9_]*\b`)
	for name, s := range stacks {
		for id, r := range s.resources("AWS::CloudWatch::Alarm") {
			var expr string
			inputs := map[string]bool{}
			for _, m := range asSlice(props(r)["Metrics"]) {
				mm := m.(map[string]any)
				if e, ok := mm["Expression"].(string); ok {
					expr = e
				} else if mm["MetricStat"] != nil {
					inputs[mm["Id"].(string)] = true
				}
			}
			if expr == "" {
				continue // one metric, written as Metrics because its dimensions are tokens
			}
			for in := range inputs {
				bare := strings.ReplaceAll(expr, "FILL("+in+", 0)", "")
				if !strings.Contains(expr, "FILL("+in+", 0)") || slices.Contains(idRE.FindAllString(bare, -1), in) {
					t.Errorf("%s: alarm %s reads %s outside FILL(%s, 0): %s", name, id, in, in, expr)
				}
			}
		}
	}
}
