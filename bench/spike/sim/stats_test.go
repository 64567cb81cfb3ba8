package sim

import (
	"math"
	"testing"
	"time"
)

func TestInversions(t *testing.T) {
	as := []Arrival{
		{From: 0, To: 1, Admission: 2},
		{From: 2, To: 3, Admission: 1}, // overtook the first
		{From: 2.5, To: 4, Admission: 3},
		{From: 3.5, To: 5, Admission: 4}, // overlaps the third: no order between them
	}
	pairs, over := Inversions(as)
	if pairs != 1 || over != 1 {
		t.Fatalf("pairs=%d overtaken=%d, want 1 1", pairs, over)
	}
	as[3].Admission = 0 // never admitted: ignored
	if p, _ := Inversions(as); p != 1 {
		t.Fatalf("pairs=%d", p)
	}
}

func TestPercentilesAndTimeline(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	got := Percentiles(xs, 50, 100, 0)
	if got[0] != 3 || got[1] != 5 || got[2] != 1 {
		t.Fatalf("percentiles %v", got)
	}
	ms := time.Millisecond
	tl := Timeline([]time.Duration{0, 10 * ms, 120 * ms}, []time.Duration{50 * ms, 150 * ms, 130 * ms}, 100*ms, 200*ms)
	if len(tl) != 3 || tl[0] != 2 || tl[1] != 2 || tl[2] != 0 {
		t.Fatalf("timeline %v", tl)
	}
}

func TestArrivalCurves(t *testing.T) {
	for _, c := range []string{"flat", "midnight", "ramp"} {
		ts, err := ArrivalTimes(c, 1000, 10*time.Second, 1)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(ts); i++ {
			if ts[i] < 0 || ts[i] > 10*time.Second {
				t.Fatalf("%s: arrival %v out of the spike", c, ts[i])
			}
		}
	}
	if _, err := ArrivalTimes("nope", 1, time.Second, 1); err == nil {
		t.Fatal("unknown curve accepted")
	}
}

// Each curve has its shape, not only its range: the share of arrivals in
// the first and the last tenth of the spike, from the densities
// (midnight ∝ e^{-3t/T}: 27.2% and 1.8%; ramp: 2% and 2%; flat: 10%).
func TestArrivalCurveShapes(t *testing.T) {
	const n, d = 10000, 10 * time.Second
	for _, c := range []struct {
		curve       string
		first, last float64
	}{{"flat", 0.100, 0.100}, {"midnight", 0.272, 0.018}, {"ramp", 0.020, 0.020}} {
		ts, err := ArrivalTimes(c.curve, n, d, 1)
		if err != nil {
			t.Fatal(err)
		}
		first, last := 0, 0
		for _, at := range ts {
			switch {
			case at < d/10:
				first++
			case at >= d-d/10:
				last++
			}
		}
		for _, share := range []struct {
			name      string
			got, want float64
		}{{"first", float64(first) / n, c.first}, {"last", float64(last) / n, c.last}} {
			if math.Abs(share.got-share.want) > 0.01 {
				t.Errorf("%s: %.3f of arrivals in the %s tenth, want %.3f", c.curve, share.got, share.name, share.want)
			}
		}
	}
}

func TestOccupancy(t *testing.T) {
	s := time.Second
	got := Occupancy([]time.Duration{0, s / 2, 2 * s}, []time.Duration{2 * s, s, 5 * s}, s, 3*s)
	want := []float64{1.5, 1, 1, 0}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-9 {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}
