// Package loadtable renders README.md's load table (between its "load"
// markers) from docs/bench/load-results.json, the file bench/load/run.sh
// writes: one source for the table's text, used by run.sh (through
// bench/load/table and cmd/fragment) and by the test that keeps the
// README's table current.
package loadtable

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Results is docs/bench/load-results.json.
type Results struct {
	When    string `json:"when"`
	Machine struct {
		Cores int    `json:"cores"`
		Redis string `json:"redis"`
	} `json:"machine"`
	UsersWaiting int `json:"usersWaiting"`
	Wrk          struct {
		Threads int `json:"threads"`
		Seconds int `json:"seconds"`
	} `json:"wrk"`
	Rows []Row `json:"rows"`
}

// Row is one route at one number of connections, the abuse limiter on or off.
type Row struct {
	Route          string  `json:"route"`
	Connections    int     `json:"connections"`
	Limiter        string  `json:"limiter"` // "on" (the identity's bucket at its defaults, the address's raised) or "off"
	RequestsPerSec float64 `json:"requestsPerSec"`
	P50Ms          float64 `json:"p50Ms"`
	P99Ms          float64 `json:"p99Ms"`
}

// Parse reads the results file's bytes.
func Parse(b []byte) (Results, error) {
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("load results: %w", err)
	}
	return r, nil
}

// Render is the README's table with its lead-in: requests/s to the
// nearest hundred, latencies to three significant digits; then each
// route's requests/s with the limiter on as a share of off, at each number
// of connections.
func Render(r Results) string {
	var b strings.Builder
	fmt.Fprintf(&b, "`make load` (`bench/load/run.sh`, %s; docs/bench/load-results.json): the local runner (HTTP → payload\n", r.When)
	fmt.Fprintf(&b, "2.0 event → handler → real `redis-server` %s) on a %d-core machine, %s users waiting, `wrk`\n", r.Machine.Redis, r.Machine.Cores, commas(int64(r.UsersWaiting)))
	fmt.Fprintf(&b, "with %d threads for %d s per row on loopback, every enter a new user; the abuse limiter off (every rate 0)\n", r.Wrk.Threads, r.Wrk.Seconds)
	b.WriteString("and on (the identity's bucket at its defaults, the address's raised: all of `wrk`'s requests come from one address), two runners on one store, in turns:\n\n")
	b.WriteString("| route | connections | limiter | requests/s | p50 | p99 |\n| --- | --- | --- | --- | --- | --- |\n")
	off := map[string]float64{}
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "| `%s` | %d | %s | %s | %.3g ms | %.3g ms |\n", row.Route, row.Connections, row.Limiter,
			commas(int64(math.Floor(row.RequestsPerSec/100+0.5))*100), row.P50Ms, row.P99Ms)
		if row.Limiter == "off" {
			off[row.Route+"@"+strconv.Itoa(row.Connections)] = row.RequestsPerSec
		}
	}
	var ratios []string
	for _, row := range r.Rows {
		if o := off[row.Route+"@"+strconv.Itoa(row.Connections)]; row.Limiter == "on" && o > 0 {
			ratios = append(ratios, fmt.Sprintf("`%s` %.2f× at %d connections", row.Route, row.RequestsPerSec/o, row.Connections))
		}
	}
	if len(ratios) > 0 {
		fmt.Fprintf(&b, "\nRequests/s with the limiter on, as a share of off: %s.\n", strings.Join(ratios, ", "))
	}
	return b.String()
}

// commas writes n with thousands separated: 22400 → "22,400".
func commas(n int64) string {
	d := strconv.FormatInt(n, 10)
	for i := len(d) - 3; i > 0; i -= 3 {
		d = d[:i] + "," + d[i:]
	}
	return d
}
