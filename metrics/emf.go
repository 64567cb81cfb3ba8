package metrics

import (
	"context"
	"io"
	"log/slog"
	"time"
)

// Unit is a CloudWatch metric unit.
type Unit string

const (
	Count   Unit = "Count"
	Seconds Unit = "Seconds"
	// PerSecond is a rate: admissions per second.
	PerSecond Unit = "Count/Second"
)

// Value is one metric of an EMF record. Values holds several samples of a
// metric (e.g. one wait time per admitted user) in one record.
type Value struct {
	Name   string
	Unit   Unit
	Values []float64
}

// InstantAdmission is what an enter admitted at once counts (enter, or the
// intake consumer applying one): a place taken and an admission that
// waited 0 s.
func InstantAdmission() []Value {
	return []Value{Of(Entered, Count, 1), Of(Admitted, Count, 1), {Name: WaitSeconds, Unit: Seconds, Values: []float64{0}}}
}

// Of returns a single-sample value.
func Of(name string, unit Unit, v float64) Value {
	return Value{Name: name, Unit: unit, Values: []float64{v}}
}

// Recorder writes EMF records as JSON log lines. CloudWatch Logs turns each
// into metrics with no API call on the request path. A nil *Recorder records
// nothing, so tests and the local runner may leave it out.
type Recorder struct {
	log *slog.Logger
	now func() time.Time
}

// NewRecorder writes records to w (os.Stdout in Lambda).
func NewRecorder(w io.Writer) *Recorder {
	return &Recorder{log: slog.New(slog.NewJSONHandler(w, nil)), now: time.Now}
}

// Record emits values for room; room "" emits them with no dimension only.
// With a room they are emitted both per room and as the all-rooms aggregate.
func (r *Recorder) Record(room string, values ...Value) {
	if r == nil || len(values) == 0 {
		return
	}
	defs := make([]map[string]string, 0, len(values))
	attrs := make([]slog.Attr, 0, len(values)+2)
	for _, v := range values {
		if len(v.Values) == 0 {
			continue
		}
		defs = append(defs, map[string]string{"Name": v.Name, "Unit": string(v.Unit)})
		if len(v.Values) == 1 {
			attrs = append(attrs, slog.Float64(v.Name, v.Values[0]))
		} else {
			attrs = append(attrs, slog.Any(v.Name, v.Values))
		}
	}
	if len(defs) == 0 {
		return
	}
	dims := [][]string{{}}
	if room != "" {
		dims = [][]string{{DimensionRoom}, {}}
		attrs = append(attrs, slog.String(DimensionRoom, room))
	}
	meta := map[string]any{
		"Timestamp": r.now().UnixMilli(),
		"CloudWatchMetrics": []map[string]any{{
			"Namespace":  Namespace,
			"Dimensions": dims,
			"Metrics":    defs,
		}},
	}
	attrs = append(attrs, slog.Any("_aws", meta))
	r.log.LogAttrs(context.Background(), slog.LevelInfo, "metrics", attrs...)
}
