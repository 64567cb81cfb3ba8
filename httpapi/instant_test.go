package httpapi_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/metrics"
)

// An idle room's first enter answers READY with a signed entry token that
// buys one order, counted as entered and admitted after a wait of 0 s; the
// next enter, with the budget spent, waits in line.
func TestInstantAdmissionAnswersReadyAndOrders(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine, func(c *waitroom.Config) {
			c.InstantAdmit = true
			c.AdmitRatePerSec = 1 // one user a batch, the next a second later
		})
		var rec bytes.Buffer
		h.api.Metrics = metrics.NewRecorder(&rec)
		resp := h.enter("alice")
		var body struct {
			Status      string `json:"status"`
			EntryToken  string `json:"entryToken"`
			PollAfterMs *int64 `json:"pollAfterMs"`
			Position    int64  `json:"position"`
		}
		if err := json.Unmarshal([]byte(resp.Body), &body); err != nil || resp.StatusCode != 200 || body.Status != "READY" || body.EntryToken == "" || body.PollAfterMs != nil {
			t.Fatalf("the first enter of an idle room: %d %s", resp.StatusCode, resp.Body)
		}
		for _, want := range []string{`"Entered":1`, `"Admitted":1`, `"WaitSeconds":0,`} {
			if !strings.Contains(rec.String(), want) {
				t.Errorf("the instant admission's metrics lack %s:\n%s", want, rec.String())
			}
		}
		if r := h.order("alice", body.EntryToken, "k1", `{"sku":"tv-55"}`); r.StatusCode != 201 {
			t.Fatalf("the order with the instant token: %d %s", r.StatusCode, r.Body)
		}
		resp = h.enter("bob")
		if err := json.Unmarshal([]byte(resp.Body), &body); err != nil || body.Status != "WAITING" || body.Position != 1 {
			t.Fatalf("the budget spent, bob waits: %d %s", resp.StatusCode, resp.Body)
		}
	})
}
