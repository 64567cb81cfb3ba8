package main

import "testing"

// The admit invocations must chain without gaps: each one covers at least
// the schedule period plus the overlap (the core's Admitter covers exactly
// ADMIT_BATCHES × ADMIT_INTERVAL_MS, jitter or not), and finishes before its
// timeout.
func TestAdmitBatchesCoverTheMinute(t *testing.T) {
	for _, interval := range []int{10, 50, 100, 200, 250, 1000, 3000, 10000} {
		p := WaitroomProps{AdmitIntervalMs: interval}
		covered := float64(p.AdmitBatches()) * float64(interval)
		if covered < (ScheduleSeconds+admitOverlapSeconds)*1000 {
			t.Errorf("interval %d ms: %d batches cover only %.1f s, leaving a gap", interval, p.AdmitBatches(), covered/1000)
		}
		if covered > (ScheduleSeconds+admitOverlapSeconds)*1000+float64(interval) {
			t.Errorf("interval %d ms: %d batches cover %.1f s, a longer overlap than needed", interval, p.AdmitBatches(), covered/1000)
		}
		if timeout := float64(p.AdmitTimeoutSeconds()) * 1000; covered+5000 > timeout {
			t.Errorf("interval %d ms: run of %.1f s too close to the timeout %.0f s", interval, covered/1000, timeout/1000)
		}
	}
	p := WaitroomProps{AdmitIntervalMs: 100}
	if p.AdmitBatches() != 700 || p.AdmitTimeoutSeconds() != 80 {
		t.Errorf("100 ms: %d batches, timeout %d s; want 700 and 80", p.AdmitBatches(), p.AdmitTimeoutSeconds())
	}
}
