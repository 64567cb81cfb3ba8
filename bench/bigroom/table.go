package main

import (
	"fmt"
	"strings"

	"github.com/waitroom/waitroom/bench/spike/sim"
)

// table is the run's figures for a terminal.
func table(r *sim.BigRoomResults) string {
	var b strings.Builder
	m := r.Memory
	fmt.Fprintf(&b, "%d visitors in one room (%d accounts, %d anonymous), filled in %.0f s\n", r.Visitors, r.Fill.Accounts, r.Fill.Anonymous, r.Fill.Seconds)
	fmt.Fprintf(&b, "fill vs enter (%d users): same %v; enter only %v; fill only %v; differ %v; by presence %v\n", r.Fill.CheckUsers, r.Fill.Same, r.Fill.EnterOnly, r.Fill.AppendOnly, r.Fill.Differ, r.Fill.ByPresence)
	fmt.Fprintf(&b, "memory per account: %.1f B after DEBUG RELOAD (%.1f B right after the accounts' records); MEMORY USAGE of the %d buckets (%d listpacks) %d B (%.1f B an account)\n",
		m.PerAccount(), m.PerAccountAsFilled(), m.Buckets, m.Listpacks, m.BucketBytes, float64(m.BucketBytes)/float64(max(1, r.Fill.Accounts)))
	fmt.Fprintf(&b, "memory per anonymous visitor: %.3f B (%d B over %d); per visitor of either kind %.1f B\n", m.PerAnonymous(), m.AfterFill-m.AfterAccounts, m.Anonymous, m.PerVisitor())
	fmt.Fprintf(&b, "  %s\n", m.Layout)
	for _, o := range r.Ops {
		lim := o.Limiter
		if lim == "" {
			lim = "-"
		}
		fmt.Fprintf(&b, "%-60s limiter %-3s %6d calls %10.0f instructions per call\n", o.Name, lim, o.Calls, o.PerCall())
	}
	w := r.Wait
	fmt.Fprintf(&b, "last visitor's wait at %g/s: %d / %g = %.0f s", w.RatePerSec, w.LastPosition, w.RatePerSec, w.ComputedSeconds)
	if w.WindowBatches > 0 {
		fmt.Fprintf(&b, "; measured %.1f/s over %.1f s (%d batches, %d admitted): %.0f s", w.MeasuredRatePerSec, w.WindowSeconds,
			w.WindowBatches, w.WindowAdmitted, w.MeasuredSeconds)
	}
	fmt.Fprintf(&b, "\nstore commands per waiting poll through HTTP: %s\nfunction calls per visitor through the page: %s\n", fig(r.PollStoreCommands), fig(r.FunctionCallsPerVisitor))
	return b.String()
}

func fig(f sim.BigRoomFigure) string {
	if !f.Measured {
		return f.Note
	}
	return fmt.Sprintf("%g (%s)", f.Value, f.Source)
}
