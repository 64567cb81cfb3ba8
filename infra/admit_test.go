package main

import "testing"

// The admit invocations must chain without gaps: each one lasts at least the
// schedule period even when the core's jitter shortens every interval fully,
// about ScheduleSeconds + admitOverlapSeconds on average, and always finishes
// before its timeout.
func TestAdmitBatchesCoverTheMinute(t *testing.T) {
	for _, interval := range []int{10, 50, 100, 200, 250, 1000, 3000, 10000} {
		p := WaitroomProps{AdmitIntervalMs: interval}
		n := float64(p.AdmitBatches())
		ms := float64(interval)
		shortest := (n - 1) * ms * (1 - coreBatchJitter)
		average := (n - 1) * ms * (1 - coreBatchJitter/2)
		longest := (n - 1) * ms
		if shortest < ScheduleSeconds*1000 {
			t.Errorf("interval %d ms: %v batches may last only %.1f s, leaving a gap", interval, n, shortest/1000)
		}
		if average > (ScheduleSeconds+admitOverlapSeconds+1)*1000+ms {
			t.Errorf("interval %d ms: %v batches last %.1f s on average, a longer overlap than needed", interval, n, average/1000)
		}
		if timeout := float64(p.AdmitTimeoutSeconds()) * 1000; longest+5000 > timeout {
			t.Errorf("interval %d ms: longest run %.1f s too close to the timeout %.0f s", interval, longest/1000, timeout/1000)
		}
	}
	p := WaitroomProps{AdmitIntervalMs: 100}
	if p.AdmitBatches() != 778 || p.AdmitTimeoutSeconds() != 88 {
		t.Errorf("100 ms: %d batches, timeout %d s; want 778 and 88", p.AdmitBatches(), p.AdmitTimeoutSeconds())
	}
}
