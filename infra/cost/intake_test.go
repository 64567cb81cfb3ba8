package cost

import (
	"encoding/json"
	"os"
	"testing"
)

// intakeFixture is the fixture with an intake queue, its consumer (128 MB
// arm64, JSON at WARN) on an event source mapping of batches of 10, and
// enter's INTAKE set to mode.
func intakeFixture(t *testing.T, mode string) Inventory {
	t.Helper()
	raw, err := os.ReadFile("testdata/fixture.template.json")
	if err != nil {
		t.Fatal(err)
	}
	var tpl map[string]map[string]any
	if err := json.Unmarshal(raw, &tpl); err != nil {
		t.Fatal(err)
	}
	r := tpl["Resources"]
	r["IntakeQueue"] = map[string]any{"Type": "AWS::SQS::Queue", "Properties": map[string]any{"FifoQueue": true}}
	r["IntakeDeadLetters"] = map[string]any{"Type": "AWS::SQS::Queue", "Properties": map[string]any{"FifoQueue": true}}
	r["ConsumerFn"] = map[string]any{"Type": "AWS::Lambda::Function", "Properties": map[string]any{
		"Architectures": []any{"arm64"}, "MemorySize": 128, "Timeout": 10,
		"LoggingConfig": map[string]any{"ApplicationLogLevel": "INFO", "LogFormat": "JSON", "SystemLogLevel": "WARN"},
	}}
	r["ConsumerMapping"] = map[string]any{"Type": "AWS::Lambda::EventSourceMapping", "Properties": map[string]any{
		"FunctionName": map[string]any{"Ref": "ConsumerFn"}, "BatchSize": 10,
		"EventSourceArn": map[string]any{"Fn::GetAtt": []any{"IntakeQueue", "Arn"}},
	}}
	enter := r["EnterFn"].(map[string]any)["Properties"].(map[string]any)["Environment"].(map[string]any)["Variables"].(map[string]any)
	enter["INTAKE"] = mode
	enter["INTAKE_QUEUE_URL"] = map[string]any{"Ref": "IntakeQueue"}
	out, err := json.Marshal(tpl)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := ParseTemplate(out)
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// itemsNamed sums the items named name.
func itemsNamed(items []Item, name string) (float64, bool) {
	var usd float64
	found := false
	for _, it := range items {
		if it.Name == name {
			usd, found = usd+it.USD, true
		}
	}
	return usd, found
}

// With the SQS interface endpoint enter sends through (broker), each
// SendMessage is data through it; in fallback, an outage's enters only: none.
func TestIntakeEndpointData(t *testing.T) {
	for mode, want := range map[string]float64{"broker": 1e6 * 4096 / 1e9 * 0.01, "fallback": 0} {
		inv := intakeFixture(t, mode)
		inv.InterfaceEndpoints = append(inv.InterfaceEndpoints, Endpoint{Service: "sqs", AZs: 2})
		r, err := Estimate(inv, handMeasured(t), USEast1, Options{WaitSeconds: 300, OrderAPIMs: 99})
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := itemsNamed(r.PerMillion, "VPC interface endpoint data (intake)"); ok != (want > 0) || !near(got, want) {
			t.Errorf("%s: endpoint data $%v (found %v), want $%v", mode, got, ok, want)
		}
	}
}

// TestIntakeIsPricedFromTheTemplate: the queue's poller idle, and in broker
// mode SQS, the consumer and one PROCESSING poll per visitor, figured by hand.
func TestIntakeIsPricedFromTheTemplate(t *testing.T) {
	base, err := Estimate(fixture(t), handMeasured(t), USEast1, Options{WaitSeconds: 300, OrderAPIMs: 99})
	if err != nil {
		t.Fatal(err)
	}
	broker, err := Estimate(intakeFixture(t, "broker"), handMeasured(t), USEast1, Options{WaitSeconds: 300, OrderAPIMs: 99})
	if err != nil {
		t.Fatal(err)
	}
	polling := 5 * 180.0 * 730 * 0.50e-6 // 657,000 empty FIFO receives
	if usd, ok := itemsNamed(broker.Idle, "SQS polling (event source mapping)"); !ok || !near(usd, polling) {
		t.Errorf("idle polling $%v (found %v), want $%v", usd, ok, polling)
	}
	if !near(broker.IdleMonthlyUSD-base.IdleMonthlyUSD, polling) {
		t.Errorf("idle grows by $%v, want only the polling $%v", broker.IdleMonthlyUSD-base.IdleMonthlyUSD, polling)
	}
	want := map[string]float64{
		"SQS requests (intake)":              1.2e6 * 0.50e-6,                                     // a send, and 0.2 receives+deletes a visitor
		"Lambda requests intake consumer":    1e5 * 0.20e-6,                                       // batches of 10
		"Lambda duration intake consumer":    1e5 * 0.002 * 0.125 * 0.0000133334,                  // 1.12 ms billed as 2
		"CloudWatch Logs intake consumer":    0,                                                   // WARN: no platform lines
		"PROCESSING poll (one a visitor)":    1e6*(1.00e-6+0.20e-6) + 1e6*0.001*0.25*0.0000133334, // position, 1 ms × 256 MB
		"ElastiCache ECPU (applied records)": 2e6 * 0.0023e-6,
	}
	var sum float64
	for name, usd := range want {
		got, ok := itemsNamed(broker.PerMillion, name)
		if !ok || !near(got, usd) {
			t.Errorf("%s: $%v (found %v), want $%v", name, got, ok, usd)
		}
		sum += usd
	}
	if !near(broker.PerMillionUSD-base.PerMillionUSD, sum) {
		t.Errorf("per million grows by $%v, want $%v", broker.PerMillionUSD-base.PerMillionUSD, sum)
	}

	fallback, err := Estimate(intakeFixture(t, "fallback"), handMeasured(t), USEast1, Options{WaitSeconds: 300, OrderAPIMs: 99})
	if err != nil {
		t.Fatal(err)
	}
	if !near(fallback.PerMillionUSD, base.PerMillionUSD) || len(fallback.Notes) != len(base.Notes)+1 {
		t.Errorf("fallback per million $%v (direct $%v), notes %q: want direct's figure and a note", fallback.PerMillionUSD, base.PerMillionUSD, fallback.Notes)
	}
}

// In broker mode the PROCESSING poll and the consumer's batches under the
// environment key cost a Decrypt per cold start too; neither under it, none.
func TestIntakeDecrypts(t *testing.T) {
	var position, consumer Function
	if items := intakeDecrypts(position, consumer, 1e5, USEast1); len(items) != 0 {
		t.Errorf("no function under the key, yet %v", items)
	}
	position.EnvironmentKey = true
	items := intakeDecrypts(position, consumer, 1e5, USEast1)
	if want := 1e6 * 0.01 * 0.03 / 1e4; len(items) != 1 || !near(items[0].USD, want) {
		t.Errorf("position under the key: %v, want $%v", items, want)
	}
	consumer.EnvironmentKey = true
	items = intakeDecrypts(position, consumer, 1e5, USEast1)
	if want := (1e6 + 1e5) * 0.01 * 0.03 / 1e4; len(items) != 1 || !near(items[0].USD, want) {
		t.Errorf("both under the key: %v, want $%v", items, want)
	}
}
