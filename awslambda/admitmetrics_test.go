package awslambda

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/metrics"
)

func batchOf(room string, admitted int, waiting int64) waitroom.Batch {
	rb := waitroom.RoomBatch{Room: room, Waiting: waiting, ActiveTokens: 7, TokensExpired: 1}
	for i := 0; i < admitted; i++ {
		rb.Admitted = append(rb.Admitted, waitroom.Admission{Waited: 3 * time.Second})
	}
	return waitroom.Batch{Rooms: []waitroom.RoomBatch{rb}}
}

func records(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	buf.Reset()
	return out
}

// Ten batches a second become one record per room and one heartbeat.
func TestAdmitMetricsSumPerSecond(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	m := NewAdmitMetrics(metrics.NewRecorder(&buf))
	m.now = func() time.Time { return clock }
	for i := 0; i < 10; i++ {
		m.Observe(batchOf("r", 5, int64(100-i)))
		clock = clock.Add(90 * time.Millisecond)
	}
	if got := records(t, &buf); len(got) != 0 {
		t.Fatalf("emitted before a second passed: %v", got)
	}
	clock = clock.Add(200 * time.Millisecond)
	m.Observe(batchOf("r", 5, 80))
	got := records(t, &buf)
	if len(got) != 2 {
		t.Fatalf("want heartbeat + room record, got %v", got)
	}
	heartbeat, room := got[0], got[1]
	if heartbeat[metrics.AdmitBatches] != 11.0 {
		t.Fatalf("heartbeat %v", heartbeat)
	}
	if room[metrics.Admitted] != 55.0 || room[metrics.QueueDepth] != 80.0 || room[metrics.TokensExpired] != 11.0 || len(room[metrics.WaitSeconds].([]any)) != 55 {
		t.Fatalf("room record %v", room)
	}
	m.Flush()
	if got := records(t, &buf); len(got) != 0 {
		t.Fatalf("nothing left to flush, got %v", got)
	}
	m.Observe(batchOf("r", 120, 0)) // over EMF's 100 values: split
	m.Flush()
	got = records(t, &buf)
	samples := 0
	for _, r := range got {
		if w, ok := r[metrics.WaitSeconds].([]any); ok {
			if len(w) > 100 {
				t.Fatalf("%d values in one record", len(w))
			}
			samples += len(w)
		}
	}
	if samples != 120 {
		t.Fatalf("wait samples %d, want 120", samples)
	}
}
