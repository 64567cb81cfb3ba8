package localrun_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/openapitest"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/sqstest"
)

// The local runner with INTAKE=broker: an anonymous visitor's enter is
// accepted into the SQS-compatible server, the runner's own consumer applies
// it, and position with the receipt goes PROCESSING → WAITING over HTTP,
// every answer checked against docs/openapi.yaml.
func TestRunnerBrokerIntake(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		r, _ := startRunner(t, engine, map[string]string{"INTAKE": "broker", "INTAKE_QUEUE_URL": sqstest.Queue(t, t.Name(), 30),
			"ADMIT_RATE_PER_SEC": "0.001"})
		client := openapitest.Client(t)
		do := func(method, path, receipt string) (int, map[string]any) {
			t.Helper()
			req, _ := http.NewRequest(method, r.URL+path, nil)
			if receipt != "" {
				req.Header.Set("X-Queue-Receipt", receipt)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			return resp.StatusCode, m
		}
		status, m := do("POST", "/queue/enter", "")
		receipt, _ := m["receipt"].(string)
		if status != http.StatusAccepted || m["status"] != "ACCEPTED" || receipt == "" || m["ticket"] == nil {
			t.Fatalf("enter: %d %v", status, m)
		}
		seen := map[any]bool{}
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			status, m = do("GET", "/queue/position", receipt)
			seen[m["status"]] = true
			if status != 200 || time.Now().After(deadline) {
				t.Fatalf("position: %d %v", status, m)
			}
			if m["status"] == "WAITING" && m["position"] == float64(1) {
				break
			}
			// A fresh room's budget holds one batch, so the first admission may
			// come before a poll sees the place: applied and admitted, also right.
			if m["status"] == "READY" {
				break
			}
		}
		if delete(seen, "PROCESSING"); len(seen) != 1 || !(seen["WAITING"] || seen["READY"]) {
			t.Fatalf("answers seen: %v, want PROCESSING, then WAITING (or READY at once)", seen)
		}
	})
}
