package sim

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"text/template"
)

// Machine is where the figures came from.
type Machine struct {
	NumCPU     int    `json:"numCPU"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	CPUModel   string `json:"cpuModel"`
	Kernel     string `json:"kernel"`
	Redis      string `json:"redis"`
	Go         string `json:"go"`
}

// DescribeMachine reads the CPU, kernel, Go and redis-server versions.
func DescribeMachine(ctx context.Context, env *Env) Machine {
	m := DescribeHost()
	m.Redis = "redis-server " + ServerVersion(ctx, env.Admin)
	if out, err := exec.Command("redis-server", "--version").Output(); err == nil && env.Redis.cmd != nil {
		m.Redis = strings.TrimSpace(string(out))
	}
	return m
}

// DescribeHost reads the CPU, kernel and Go version; Redis is left to the caller.
func DescribeHost() Machine {
	m := Machine{NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Go: runtime.Version(), CPUModel: "unknown", Kernel: "unknown"}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				m.CPUModel = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	return m
}

// Report is what spike full, longline and tiers write: the machine, when,
// and the runs.
type Report struct {
	Machine  Machine   `json:"machine"`
	Started  string    `json:"started"`
	Finished string    `json:"finished"`
	Runs     []*Result `json:"runs"`
	Parallel int       `json:"parallel,omitempty"` // runs that went at a time, each on its own redis-server (0: one)
}

// When is the span of the report's runs.
func (r *Report) When() string { return r.Started + " → " + r.Finished }

// MicroOp is one operation of the micro-benchmarks, beside redis-benchmark.
type MicroOp struct {
	Name             string    `json:"name"`
	Path             string    `json:"path"`   // what the Go side runs
	Script           string    `json:"script"` // what redis-benchmark runs
	Concurrency      int       `json:"concurrency"`
	GoOpsPerSec      float64   `json:"goOpsPerSec"`
	GoP50Us          float64   `json:"goP50Us"`
	GoP99Us          float64   `json:"goP99Us"`
	RedisBenchPerSec float64   `json:"redisBenchOpsPerSec"`
	Ratio            float64   `json:"ratio"`
	RatioRuns        []float64 `json:"ratioRuns,omitempty"` // every run's ratio; the figures above are the median run's
}

// MicroResults is what the bench package writes (BENCH_OUT).
type MicroResults struct {
	Redis             string      `json:"redis"`
	Mode              string      `json:"mode,omitempty"`       // "pinned" or "unpinned"
	RedisCPUs         string      `json:"redisCPUs,omitempty"`  // taskset -c list of redis-server; "" = any
	ClientCPUs        string      `json:"clientCPUs,omitempty"` // the benchmark process's affinity (Go side and redis-benchmark)
	GOMAXPROCS        int         `json:"gomaxprocs,omitempty"`
	Ops               []MicroOp   `json:"ops"`
	PositionSmallN    int         `json:"positionSmallN"`
	PositionLargeN    int         `json:"positionLargeN"`
	PositionSmallUs   float64     `json:"positionSmallUs"`
	PositionLargeUs   float64     `json:"positionLargeUs"`
	PositionRatio     float64     `json:"positionRatio"`
	PositionRatioRuns []float64   `json:"positionRatioRuns,omitempty"` // every run's; the figures are the median run's
	LookupSmallUs     float64     `json:"lookupSmallUs"`               // HGET of a place alone (redis-benchmark, one client)
	LookupLargeUs     float64     `json:"lookupLargeUs"`
	MemUsers          int         `json:"memUsers"`
	MemBefore         int64       `json:"memBefore"`
	MemAfter          int64       `json:"memAfter"`
	MemPerUser        float64     `json:"memPerUser"`
	MemLinePerUser    float64     `json:"memLinePerUser"`    // MEMORY USAGE of the line's keys (the draws, the accounts' buckets) / users
	MemBucketsPerUser float64     `json:"memBucketsPerUser"` // of which the accounts' buckets
	MemDrawsPerUser   float64     `json:"memDrawsPerUser"`   // and the pre-queue's draws
	MemBuckets        int         `json:"memBuckets"`        // account buckets in the keyspace
	MemBucketSizes    map[int]int `json:"memBucketSizes"`    // records in a bucket -> buckets holding that many
	MemFieldBytes     int         `json:"memFieldBytes"`     // an account's field
	MemKeyBytes       int         `json:"memKeyBytes"`       // a bucket's key name
	MemBorn           int64       `json:"memBorn"`           // a bucket's 'b' (the line's born, ms)
	MemKeys           int64       `json:"memKeys"`           // the keyspace's keys and keys with an expiry, after the fill
	MemExpires        int64       `json:"memExpires"`
	MemMarks          int64       `json:"memMarks"` // marks zset entries
	MemUserIDBytes    int         `json:"memUserIdBytes"`
	FillMethod        string      `json:"fillMethod"`
	FillSeconds       float64     `json:"fillSeconds"`
}

// Files are the report's inputs and outputs, as given on the command line;
// the Markdown names and links them as given, so give them relative to
// the Markdown file.
type Files struct {
	Spike, LongLine, Tiers, Micro, Pinned string // results read
	Notify                                string // bench/notify's results
	Intake                                string // bench/intake's results
	RedisCost                             string // bench/rediscost's results
	Challenge                             string // bench/challenge's results
	Failover                              string // bench/failover's results
	Close                                 string // bench/close's results
	Adaptive                              string // spike adaptive's results
	BigRoom                               string // bench/bigroom's results
	Markdown, Plots                       string // written: the report and its plots' directory
}

// DefaultFiles are the report's files in this repository, relative to its
// root: what `make bench-report` reads and writes.
func DefaultFiles() Files {
	const dir = "docs/bench/"
	f := Files{Spike: dir + "spike-results.json", LongLine: dir + "longline-results.json", Tiers: dir + "tiers-results.json",
		Micro: dir + "micro-results.json", Pinned: dir + "micro-pinned-results.json", Notify: dir + "notify-results.json",
		Intake: dir + "intake-results.json", RedisCost: dir + "redis-cost-results.json", Challenge: dir + "challenge-results.json", Failover: dir + "failover-results.json", Close: dir + "close-results.json",
		Adaptive: dir + "adaptive-results.json", Markdown: "BENCHMARKS.md", Plots: "docs/bench"}
	f.BigRoom = dir + "bigroom-results.json"
	return f
}

// Inputs are the results a report is made of; all but Spike are optional.
type Inputs struct {
	Spike, LongLine, Tiers *Report
	Micro, Pinned          *MicroResults
	Notify                 *NotifyResults
	Intake                 *IntakeResults
	RedisCost              *RedisCostResults
	Challenge              *ChallengeResults
	Failover               *FailoverResults
	Close                  *CloseResults
	Adaptive               *AdaptiveResults
	BigRoom                *BigRoomResults
	Missing                []string // optional files that were absent
}

// LoadInputs reads the results files; an absent optional file leaves its
// section out (and is listed in Missing).
func LoadInputs(f Files) (*Inputs, error) {
	in := &Inputs{}
	for _, x := range []struct {
		path     string
		dst      any
		required bool
	}{{f.Spike, &in.Spike, true}, {f.LongLine, &in.LongLine, false}, {f.Tiers, &in.Tiers, false}, {f.Micro, &in.Micro, false}, {f.Pinned, &in.Pinned, false},
		{f.Notify, &in.Notify, false}, {f.Intake, &in.Intake, false}, {f.RedisCost, &in.RedisCost, false}, {f.Challenge, &in.Challenge, false}, {f.Failover, &in.Failover, false}, {f.Close, &in.Close, false}, {f.Adaptive, &in.Adaptive, false},
		{f.BigRoom, &in.BigRoom, false}} {
		b, err := os.ReadFile(x.path)
		if os.IsNotExist(err) && !x.required {
			in.Missing = append(in.Missing, x.path)
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, x.dst); err != nil {
			return nil, fmt.Errorf("%s: %w", x.path, err)
		}
	}
	for _, rep := range []*Report{in.Spike, in.LongLine, in.Tiers} {
		if rep != nil {
			rep.restore()
		}
	}
	if in.Adaptive != nil {
		in.Adaptive.restore()
	}
	return in, nil
}

// restore rebuilds what a results file keeps only as text: the service
// time from its spec, and the poll tiers of runs written before scenarios
// recorded them (they ran with PreviousPollTiers, the default of then).
func (r *Report) restore() {
	for _, x := range r.Runs {
		if st, err := ParseServiceTime(x.Scenario.ServiceSpec); err == nil {
			x.Scenario.Service = st
		}
		if x.Scenario.PollTiers == "" {
			x.Scenario.PollTiers = PreviousPollTiers
		}
	}
}

//go:embed report.md.tmpl
var reportTemplate string

// WriteReport writes the plots into f.Plots and returns the Markdown
// rendered from the report template.
func WriteReport(in *Inputs, f Files) (string, error) {
	d, err := buildReport(in, f)
	if err != nil {
		return "", err
	}
	if err := writePlots(in, d, f.Plots); err != nil {
		return "", err
	}
	t, err := template.New("report").Funcs(reportFuncs).Parse(reportTemplate)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return "", err
	}
	return b.String(), nil
}

// link is a path as the Markdown file should name it: relative to the
// Markdown file's directory when possible.
func link(md, path string) string {
	if rel, err := filepath.Rel(filepath.Dir(md), path); err == nil {
		return filepath.ToSlash(rel)
	}
	return filepath.ToSlash(path)
}
