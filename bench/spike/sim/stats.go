package sim

import (
	"math"
	"sort"
	"time"
)

// Percentiles returns the p-quantiles (0..100) of xs by the nearest-rank method.
func Percentiles(xs []float64, ps ...float64) []float64 {
	out := make([]float64, len(ps))
	if len(xs) == 0 {
		return out
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	for i, p := range ps {
		rank := int(math.Ceil(p / 100 * float64(len(s))))
		if rank < 1 {
			rank = 1
		}
		if rank > len(s) {
			rank = len(s)
		}
		out[i] = s[rank-1]
	}
	return out
}

// Median of xs (0 for none).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Arrival is when a user's arrival was registered: an interval when it is
// only known from the client's side (the request was in flight between From
// and To), a point when the system recorded it in a serialized order.
type Arrival struct {
	From, To  float64
	Admission int64 // 1-based position in admission order; 0 = never admitted
}

// Inversions counts pairs where one user surely arrived first (its interval
// ended before the other's began) yet was admitted after the other, and how
// many users were overtaken by at least one later arrival. Pairs whose
// arrival requests overlapped in time have no defined order and are not
// counted.
func Inversions(as []Arrival) (pairs int64, overtaken int) {
	idx := make([]int, 0, len(as))
	for i, a := range as {
		if a.Admission > 0 {
			idx = append(idx, i)
		}
	}
	// Sort by arrival end so that the inner loop can stop early.
	sort.Slice(idx, func(x, y int) bool { return as[idx[x]].From < as[idx[y]].From })
	for xi, i := range idx {
		a := as[i]
		lost := false
		for _, j := range idx[xi+1:] {
			b := as[j]
			if a.To < b.From && b.Admission < a.Admission {
				pairs++
				lost = true
			}
		}
		if lost {
			overtaken++
		}
	}
	return pairs, overtaken
}

// Timeline samples, every step, the largest number of open intervals
// [start, end) within that step.
func Timeline(starts, ends []time.Duration, step, horizon time.Duration) []int {
	type edge struct {
		t time.Duration
		d int
	}
	edges := make([]edge, 0, 2*len(starts))
	for i := range starts {
		if ends[i] <= starts[i] {
			continue
		}
		edges = append(edges, edge{starts[i], 1}, edge{ends[i], -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].t != edges[j].t {
			return edges[i].t < edges[j].t
		}
		return edges[i].d < edges[j].d // close before open at the same instant
	})
	n := int(horizon/step) + 1
	out := make([]int, n)
	cur, e := 0, 0
	for b := 0; b < n; b++ {
		end := time.Duration(b+1) * step
		peak := cur
		for e < len(edges) && edges[e].t < end {
			cur += edges[e].d
			if cur > peak {
				peak = cur
			}
			e++
		}
		out[b] = peak
	}
	return out
}

// Occupancy is, for every step up to horizon, the mean number of open
// intervals [start, end) during that step (interval-time / step).
func Occupancy(starts, ends []time.Duration, step, horizon time.Duration) []float64 {
	n := int(horizon/step) + 1
	out := make([]float64, n)
	for i := range starts {
		s, e := starts[i], ends[i]
		if e > horizon {
			e = horizon
		}
		for s < e {
			b := int(s / step)
			if b >= n {
				break
			}
			be := time.Duration(b+1) * step
			seg := min(e, be) - s
			out[b] += float64(seg) / float64(step)
			s = be
		}
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func round1(x float64) float64 { return math.Round(x*10) / 10 }
func round2(x float64) float64 { return math.Round(x*100) / 100 }
