package awslambda

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/metrics"
)

func batchOf(room string, admitted int, waiting int64) waitroom.Batch {
	rb := waitroom.RoomBatch{Room: room, Waiting: waiting, ActiveTokens: 7, TokensExpired: 1, EffectiveRatePerSec: float64(waiting) / 2}
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
	if room[metrics.Admitted] != 55.0 || room[metrics.QueueDepth] != 80.0 || room[metrics.TokensExpired] != 11.0 || len(room[metrics.WaitSeconds].([]any)) != 55 ||
		room[metrics.EffectiveRate] != 40.0 { // the latest batch's rate, a gauge
		t.Fatalf("room record %v", room)
	}
	if !strings.Contains(fmt.Sprint(room["_aws"]), "Name:EffectiveRate Unit:Count/Second") {
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

// A created room where nobody waits and no token lives (every idle batch
// reports it) writes no record: CloudWatch bills each metric for every
// hour it is published, so four metrics per quiet room would cost more
// than the rest of the idle stack's metrics. A room that was active gets
// one record of zeros when it falls quiet, so the dashboard's gauges drop
// to 0 instead of keeping their last value.
func TestAdmitMetricsQuietRooms(t *testing.T) {
	var buf bytes.Buffer
	m := NewAdmitMetrics(metrics.NewRecorder(&buf))
	quiet := func(rooms ...string) waitroom.Batch {
		var b waitroom.Batch
		for _, r := range rooms {
			b.Rooms = append(b.Rooms, waitroom.RoomBatch{Room: r})
		}
		return b
	}
	roomRecords := func() (rooms []string, heartbeats int) {
		for _, r := range records(t, &buf) {
			if room, ok := r[metrics.DimensionRoom].(string); ok {
				rooms = append(rooms, room)
			} else if _, ok := r[metrics.AdmitBatches]; ok {
				heartbeats++
			}
		}
		return rooms, heartbeats
	}

	m.Observe(quiet("a", "b", "c"))
	m.Flush()
	if rooms, hb := roomRecords(); len(rooms) != 0 || hb != 1 {
		t.Fatalf("quiet rooms: records for %v, %d heartbeats; want the heartbeat alone", rooms, hb)
	}
	m.Observe(batchOf("a", 2, 5))
	m.Flush()
	if rooms, _ := roomRecords(); len(rooms) != 1 || rooms[0] != "a" {
		t.Fatalf("room a active: records for %v, want a alone", rooms)
	}
	m.Observe(quiet("a", "b", "c"))
	m.Flush()
	got := records(t, &buf)
	if len(got) != 2 || got[1][metrics.DimensionRoom] != "a" || got[1][metrics.QueueDepth] != 0.0 || got[1][metrics.ActiveTokens] != 0.0 {
		t.Fatalf("room a fell quiet: %v, want the heartbeat and one record of zeros for a", got)
	}
	m.Observe(quiet("a", "b", "c"))
	m.Flush()
	if rooms, hb := roomRecords(); len(rooms) != 0 || hb != 1 {
		t.Fatalf("quiet again: records for %v, %d heartbeats; want the heartbeat alone", rooms, hb)
	}
}
