package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/waitroom/waitroom/bench/internal/callgrind"
	"github.com/waitroom/waitroom/bench/spike/sim"
)

// Functions kept for the report: the costliest by inclusive and by self
// cost of position with the limiter on.
const (
	topInclusive = 25
	topSelf      = 15
)

// functions is where position's instructions go, per call: the costliest
// functions with the limiter on, beside the same functions with it off.
func functions(on, off *callgrind.Profile, calls int) []sim.RedisCostFunc {
	if on == nil || off == nil {
		return nil
	}
	per := func(x int64) float64 { return float64(x) / float64(calls) }
	selfRank := map[string]int{}
	for i, name := range on.Top(topSelf, true) {
		selfRank[name] = i + 1
	}
	names := on.Top(topInclusive, false)
	for name := range selfRank {
		if !contains(names, name) {
			names = append(names, name)
		}
	}
	sort.SliceStable(names, func(i, j int) bool { return on.Funcs[names[i]].Inclusive > on.Funcs[names[j]].Inclusive })
	var out []sim.RedisCostFunc
	for _, name := range names {
		c := on.Funcs[name]
		f := sim.RedisCostFunc{Name: name, Object: objectName(c.Object), InclusiveOn: per(c.Inclusive), SelfOn: per(c.Self), CallsOn: per(c.Calls), TopBySelfOrder: selfRank[name]}
		if d := off.Funcs[name]; d != nil {
			f.InclusiveOff, f.CallsOff = per(d.Inclusive), per(d.Calls)
		}
		out = append(out, f)
	}
	return out
}

// objectName is an object file as the report names it: redis-server for
// the server's binary (Debian's is redis-check-rdb, redis-server a link to it).
func objectName(path string) string {
	if bin, err := exec.LookPath("redis-server"); err == nil {
		if real, err := filepath.EvalSymlinks(bin); err == nil && real == path {
			return "redis-server"
		}
	}
	return filepath.Base(path)
}

// writeProfile writes where an operation's instructions went, per call:
// the costliest functions by inclusive and by self cost (-profiles).
func writeProfile(path string, p *callgrind.Profile, calls int) error {
	var b strings.Builder
	per := func(x int64) float64 { return float64(x) / float64(calls) }
	fmt.Fprintf(&b, "%d calls; per call: %.0f instructions counted, %.0f in serverCron (left out)\n", calls, per(p.Counted()), per(p.Timer()))
	for _, bySelf := range []bool{false, true} {
		fmt.Fprintf(&b, "\n%14s %12s %10s  %s\n", map[bool]string{false: "INCLUSIVE", true: "inclusive"}[bySelf], map[bool]string{false: "self", true: "SELF"}[bySelf], "calls", "function (object)")
		for _, name := range p.Top(40, bySelf) {
			c := p.Funcs[name]
			fmt.Fprintf(&b, "%14.0f %12.0f %10.2f  %s (%s)\n", per(c.Inclusive), per(c.Self), per(c.Calls), name, objectName(c.Object))
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// table is the run as text: instructions per call, limiter on and off,
// then memory.
func table(r *sim.RedisCostResults) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Redis instructions per call (callgrind Ir, serverCron excluded), %d waiting, %d calls each, one connection\n", r.Method.Waiting, r.Method.Calls)
	fmt.Fprintf(&b, "%-44s %12s %12s %8s\n", "call", "limiter on", "limiter off", "on/off")
	for _, row := range sim.RedisCostRows(r) {
		on, off, ratio := "", "", ""
		if row.On != nil {
			on = fmt.Sprintf("%.0f", row.On.PerCall())
		}
		if row.Off != nil {
			off = fmt.Sprintf("%.0f", row.Off.PerCall())
		}
		if row.Ratio > 0 {
			ratio = fmt.Sprintf("%.2f×", row.Ratio)
		}
		fmt.Fprintf(&b, "%-44s %12s %12s %8s\n", row.Name, on, off, ratio)
	}
	m := r.Memory
	fmt.Fprintf(&b, "memory: %.1f B per waiting user at %d waiting; %.1f B per caller with live buckets (%d callers)\n", m.PerUser(), m.Users, m.PerCaller(), m.Callers)
	return b.String()
}
