package sim

import (
	"strings"
	"testing"
	"time"
)

func TestPollingFactor(t *testing.T) {
	if got := pollingFactor(15); got != 2 {
		t.Errorf("pollingFactor(15) = %v, want 2", got)
	}
	if got := pollingFactor(0); got != 0 {
		t.Errorf("pollingFactor(0) = %v, want 0", got)
	}
}

func TestLongLineSection(t *testing.T) {
	sc := DefaultScenario()
	sc.Users, sc.Spike = 100, 2*time.Second
	r := &Result{Group: "longline", Strategy: BatchedJitter, Scenario: sc, Users: 100, ConfiguredPerSec: 70, AdmittedPerSec: 70,
		Polls: 300, PollsPerUser: 3, WaitingUserMinutes: 10, PollsPerUserMinute: 30, OrderP95Ms: 237, Seconds: 3,
		PollsPerStep: []int{0, 200, 100}, WaitingPerStep: []float64{50, 100, 40}, PeakPollsPerSec: 200, PeakPollsAtSec: 1,
		Fixed2sAtPeakPerSec: 50, PeakWaiting: 100, Fixed2sPeakPerSec: 50, MaxWaitSeconds: 2.5}
	rep := &Report{LongLine: []*Result{r}}
	var b strings.Builder
	if err := longLineSection(&b, rep, t.TempDir(), "docs/bench"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"A long line", "1.00× fewer", "200/s at 1 s", "fixed 2 s polling: 50/s (0.2× the measured rate)", "3.0 / 6 s / 2 s"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("long-line section lacks %q:\n%s", want, b.String())
		}
	}
}
