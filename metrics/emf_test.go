package metrics_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/waitroom/waitroom/metrics"
)

func TestRecordWritesEMF(t *testing.T) {
	var buf bytes.Buffer
	metrics.NewRecorder(&buf).Record("shoes",
		metrics.Of(metrics.Admitted, metrics.Count, 10),
		metrics.Value{Name: metrics.WaitSeconds, Unit: metrics.Seconds, Values: []float64{3, 4}},
		metrics.Value{Name: metrics.QueueDepth, Unit: metrics.Count}, // no samples: left out
	)
	var rec struct {
		AWS struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		} `json:"_aws"`
		Room        string
		Admitted    float64
		WaitSeconds []float64
	}
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("%v: %s", err, buf.String())
	}
	cw := rec.AWS.CloudWatchMetrics
	if len(cw) != 1 || cw[0].Namespace != metrics.Namespace || len(cw[0].Metrics) != 2 || rec.AWS.Timestamp == 0 {
		t.Fatalf("metadata: %s", buf.String())
	}
	if len(cw[0].Dimensions) != 2 || cw[0].Dimensions[0][0] != metrics.DimensionRoom || len(cw[0].Dimensions[1]) != 0 {
		t.Fatalf("per-room and aggregate dimension sets: %v", cw[0].Dimensions)
	}
	if rec.Room != "shoes" || rec.Admitted != 10 || len(rec.WaitSeconds) != 2 {
		t.Fatalf("values: %s", buf.String())
	}
}

func TestNilRecorderIsSilent(t *testing.T) {
	var r *metrics.Recorder
	r.Record("x", metrics.Of(metrics.Entered, metrics.Count, 1))
}
