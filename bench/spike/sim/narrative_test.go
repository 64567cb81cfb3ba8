package sim

import "testing"

func TestSizeClass(t *testing.T) {
	for n, want := range map[int]int{1: 8, 16: 16, 17: 24, 40: 40, 64: 64, 65: 80, 72: 80} {
		if got := sizeClass(n); got != want {
			t.Errorf("sizeClass(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestPolling(t *testing.T) {
	sc := DefaultScenario()
	if got := Polling(sc); got != "pollAfterMs" {
		t.Errorf("default: %q", got)
	}
	sc.TierOnly = true
	if got := Polling(sc); got != "tier only" {
		t.Errorf("tier-only: %q", got)
	}
	sc.Notify = "push"
	if got := Polling(sc); got != "push" {
		t.Errorf("push: %q", got)
	}
}
