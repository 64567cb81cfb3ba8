package sim

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
)

// Summary is the one-line JSON of make bench-quick (field names of the issue).
type Summary struct {
	Strategy              string  `json:"strategy"`
	Users                 int     `json:"users"`
	OrderP50Ms            float64 `json:"orderP50Ms"`
	OrderP95Ms            float64 `json:"orderP95Ms"`
	OrderP99Ms            float64 `json:"orderP99Ms"`
	DownstreamMaxInFlight int     `json:"downstreamMaxInFlight"`
	AdmittedPerSec        float64 `json:"admittedPerSec"`
	ConfiguredPerSec      float64 `json:"configuredPerSec"`
	FIFOInversions        int64   `json:"fifoInversions"`
	PollsPerUserMinute    float64 `json:"pollsPerUserMinute"`
}

// Summarize picks the headline figures of a result.
func Summarize(r *Result) Summary {
	return Summary{
		Strategy: r.Strategy.Name, Users: r.Users,
		OrderP50Ms: r.OrderP50Ms, OrderP95Ms: r.OrderP95Ms, OrderP99Ms: r.OrderP99Ms,
		DownstreamMaxInFlight: r.DownstreamMaxInFlight,
		AdmittedPerSec:        r.AdmittedPerSec, ConfiguredPerSec: r.ConfiguredPerSec,
		FIFOInversions: r.FIFOInversions, PollsPerUserMinute: r.PollsPerUserMinute,
	}
}

// TextTable is a terminal table of results, one row per run.
func TextTable(rs []*Result) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "strategy\tusers\tordered\tdown p50\tp95\tp99\tmax in flight\tmax queued\te2e p50\te2e p95\tadmitted/s\tconfigured/s\tinversions\tovertaken\tpolls/user-min\tredis cmds/user\tseconds\t")
	for _, r := range rs {
		fmt.Fprintf(w, "%s\t%d\t%d\t%.0f\t%.0f\t%.0f\t%d\t%d\t%.0f\t%.0f\t%.1f\t%.1f\t%d\t%d\t%.1f\t%.1f\t%.1f\t\n",
			r.Strategy.Name, r.Users, r.Ordered, r.OrderP50Ms, r.OrderP95Ms, r.OrderP99Ms, r.DownstreamMaxInFlight, r.DownstreamMaxQueued,
			r.E2EP50Ms, r.E2EP95Ms, r.AdmittedPerSec, r.ConfiguredPerSec, r.FIFOInversions, r.UsersOvertaken,
			r.PollsPerUserMinute, r.RedisCmdPerUser, r.Seconds)
	}
	_ = w.Flush()
	for _, r := range rs {
		keys := make([]string, 0, len(r.Status))
		for k := range r.Status {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s: %d", k, r.Status[k])
		}
		fmt.Fprintf(&b, "%s statuses: %s\n", r.Strategy.Name, strings.Join(parts, ", "))
	}
	return b.String()
}
