package sim

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A short run of scenario (c), its moments scaled to 8 s, through the real
// handlers and a real redis-server: the fixed room admits at its rate, the
// pool refuses while down, and the seconds add up to the run's records.
// The adaptive strategy either runs, its status showing the effective rate,
// or fails loudly with the admin API's refusal: never a silent fallback.
func TestAdaptiveRunShort(t *testing.T) {
	if testing.Short() {
		t.Skip("real time: 8 s")
	}
	env, err := NewEnv("")
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	ctx := context.Background()
	as := AdaptiveScenarios()[2].WithDuration(8 * time.Second)
	run, err := RunAdaptive(ctx, env, as, AdaptiveFixed)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Seconds) != 8 || len(run.Phases) != 3 || run.Phases[1].FromS != 2 || run.Phases[1].ToS != 2.7 || !run.Phases[1].Down {
		t.Fatalf("seconds %d, phases %+v", len(run.Seconds), run.Phases)
	}
	admitted, refused, served := 0, 0, 0
	for _, s := range run.Seconds {
		admitted, refused, served = admitted+s.Admitted, refused+s.Refused, served+s.Served
		if s.EffectiveRatePerSec != as.Base.Rate() {
			t.Errorf("second %d: effective rate %g, want the fixed %g", s.T, s.EffectiveRatePerSec, as.Base.Rate())
		}
	}
	// The first batch spends a whole batch's budget at once; the Admitter
	// jitters intervals by up to 10%: at most rate × 8 s × 1.1 + one batch.
	if admitted != run.Admitted || admitted < int(as.Base.Rate()*6) || float64(admitted) > as.Base.Rate()*8*1.1+as.Base.Rate()/10+1 {
		t.Errorf("admitted %d in the seconds, %d in all, at %g/s for 8 s", admitted, run.Admitted, as.Base.Rate())
	}
	if refused == 0 || served == 0 || run.Ordered == 0 || run.FewestWaiting <= 0 {
		t.Errorf("refused %d, served %d, ordered %d, fewest waiting %d", refused, served, run.Ordered, run.FewestWaiting)
	}
	if err := CheckAdaptive(ctx, env); err != nil {
		if !strings.Contains(err.Error(), "invalid_settings") {
			t.Fatalf("adaptive refused, but not by the admin API: %v", err)
		}
		return
	}
	if run, err := RunAdaptive(ctx, env, as, AdaptiveOn); err != nil || !run.EffectiveShown {
		t.Errorf("adaptive: %v", err)
	}
}
