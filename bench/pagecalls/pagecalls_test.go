// Package pagecalls measures what a visitor's waiting page asks of the API
// for its whole wait (issue 36): function calls (enter, position, order:
// each one an API Gateway request and a Lambda invocation in AWS) and the
// requests for the room's public line (GET /queue/line, which CloudFront
// answers from its cache: its origin sees about one a second per room and
// edge, whatever the number of visitors). The page runs in chromium against
// the local runner on a real redis-server, behind a front that serves it as
// S3 does in AWS (no live stream) and counts each visitor's requests. Run it
// with `make bench-page-calls`; it is a measurement, not a check, and is
// skipped unless WAITROOM_PAGE_BENCH is set.
package pagecalls

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/bench/spike/sim"
	"github.com/waitroom/waitroom/internal/browsertest"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/runnertest"
	"github.com/waitroom/waitroom/localrun"
	"github.com/waitroom/waitroom/localrun/checkout"
)

// The scenario: pages visitors come through the page, each behind between
// visitors entered by HTTP, so that their waits spread from about
// between/rate to pages·between/rate seconds (20 s to 4 min).
const (
	rate    = 10
	pages   = 12
	between = 200
	room    = localrun.DemoRoom // the demo order API sells in it
	near    = 2.0               // app.js's NEAR: within it of its turn the page asks position
	tier    = 60.0              // the default POLL_TIERS (0:60000), in seconds: the page's pace far from its turn
	wait30  = 30 * 60.0         // the wait, in seconds
)

// The routes a page calls: function calls, and the line.
const (
	enterRoute    = "POST /queue/enter"
	positionRoute = "GET /queue/position"
	orderRoute    = "POST /orders"
	lineRoute     = "GET /queue/line"
)

// Visitor is one page's wait and what it asked.
type Visitor struct {
	WaitSeconds   float64 `json:"waitSeconds"` // enter's answer to READY shown
	Enter         int     `json:"enter"`
	Position      int     `json:"position"`
	Order         int     `json:"order"`
	FunctionCalls int     `json:"functionCalls"`
	Line          int     `json:"line"`         // GET /queue/line that reached the CDN (the browser's cache took the rest)
	LineModelled  int     `json:"lineModelled"` // what the page's schedule gives for this wait, without jitter
}

// Results is docs/bench/page-calls-results.json.
type Results struct {
	Machine  sim.Machine `json:"machine"`
	Started  string      `json:"started"`
	Finished string      `json:"finished"`
	Scenario struct {
		AdmitRatePerSec float64 `json:"admitRatePerSec"`
		Pages           int     `json:"pages"`
		AheadOfEach     int     `json:"aheadOfEach"`
	} `json:"scenario"`
	Visitors []Visitor `json:"visitors"`
	Summary  struct {
		FunctionCallsMean float64 `json:"functionCallsMean"`
		FunctionCallsMax  int     `json:"functionCallsMax"`
		LongestWaitSecs   float64 `json:"longestWaitSeconds"`
	} `json:"summary"`
	Wait30Min struct {
		FunctionCalls int    `json:"functionCalls"` // the most measured: they do not grow with the wait
		Line          int    `json:"lineRequests"`  // the page's schedule for a 1800 s wait, without jitter
		Model         string `json:"model"`
	} `json:"wait30min"`
}

func TestPageCallsRedisServer(t *testing.T) {
	if os.Getenv("WAITROOM_PAGE_BENCH") == "" {
		t.Skip("a measurement: run `make bench-page-calls` (WAITROOM_PAGE_BENCH=1)")
	}
	var out Results
	out.Machine, out.Started = sim.DescribeHost(), time.Now().UTC().Format(time.RFC3339)
	out.Scenario.AdmitRatePerSec, out.Scenario.Pages, out.Scenario.AheadOfEach = rate, pages, between
	srv := redistest.Start(t)
	out.Machine.Redis = "redis-server " + sim.ServerVersion(context.Background(), srv.Client())
	r := runnertest.Start(t, runnertest.Config(t, map[string]string{"REDIS_URL": srv.URL(), "ADMIT_RATE_PER_SEC": strconv.Itoa(rate),
		"ENTRY_TOKEN_TTL_SECONDS": "600", "IP_RATE_PER_SEC": "0", "VISITOR_RATE_PER_SEC": "0"}))
	browser := browsertest.Start(t)

	out.Visitors = make([]Visitor, pages)
	var wg sync.WaitGroup
	for i := range pages {
		for j := range between {
			enter(t, r.URL, fmt.Sprintf("ahead-%02d-%03d", i, j))
		}
		front := browsertest.NewFront(t, r.URL, checkout.ContinueURL)
		page := browsertest.Tab(t, browser, 10*time.Minute)
		browsertest.Do(t, page, "open", chromedp.Navigate(front.URL+"/?room="+room), chromedp.WaitVisible(chromedp.ID("waiting")))
		entered := time.Now()
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if out.Visitors[i], err = visit(page, front, entered); err != nil {
				t.Errorf("page %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	summarize(&out)
	out.Finished = time.Now().UTC().Format(time.RFC3339)
	t.Logf("function calls per visitor: mean %.2f, max %d over %d pages (waits up to %.0f s); a 30-minute wait: %d function calls, %d line requests",
		out.Summary.FunctionCallsMean, out.Summary.FunctionCallsMax, pages, out.Summary.LongestWaitSecs, out.Wait30Min.FunctionCalls, out.Wait30Min.Line)
	if path := os.Getenv("PAGE_CALLS_OUT"); path != "" {
		b, _ := json.MarshalIndent(out, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// visit waits for the page's turn, continues to the demo checkout, places
// the order and reads what the page asked. (It runs beside the others: no
// t.Fatal.)
func visit(page context.Context, front *browsertest.Front, entered time.Time) (Visitor, error) {
	if err := chromedp.Do(page, chromedp.WaitVisible(chromedp.ID("ready"))); err != nil {
		return Visitor{}, fmt.Errorf("READY: %w", err)
	}
	v := Visitor{WaitSeconds: math.Round(time.Since(entered).Seconds()*10) / 10}
	if err := chromedp.Do(page, chromedp.Click(chromedp.ID("continue")), chromedp.WaitVisible(chromedp.ID("place")), chromedp.Click(chromedp.ID("place"))); err != nil {
		return v, fmt.Errorf("order: %w", err)
	}
	if _, err := chromedp.Run(page, chromedp.Poll[bool](`document.getElementById("main").dataset.state === "placed"`)); err != nil {
		return v, fmt.Errorf("order placed: %w", err)
	}
	v.Enter, v.Position, v.Order, v.Line = front.Count(enterRoute), front.Count(positionRoute), front.Count(orderRoute), front.Count(lineRoute)
	v.FunctionCalls = v.Enter + v.Position + v.Order
	v.LineModelled = lineLooks(v.WaitSeconds)
	return v, nil
}

func summarize(out *Results) {
	sum := 0
	for _, v := range out.Visitors {
		sum += v.FunctionCalls
		out.Summary.FunctionCallsMax = max(out.Summary.FunctionCallsMax, v.FunctionCalls)
		out.Summary.LongestWaitSecs = max(out.Summary.LongestWaitSecs, v.WaitSeconds)
	}
	out.Summary.FunctionCallsMean = math.Round(100*float64(sum)/float64(len(out.Visitors))) / 100
	out.Wait30Min.FunctionCalls = out.Summary.FunctionCallsMax
	out.Wait30Min.Line = lineLooks(wait30)
	out.Wait30Min.Model = fmt.Sprintf("Function calls do not grow with the wait: enter 1, position 1 or 2 near the turn (the line seen "+
		"within %g s of it, or past it: position answers READY, or WAITING with a pollAfterMs just after the turn), order 1; the most "+
		"measured here (waits of %.0f s to %.0f s) stands for a 30-minute wait. The page looks at the line at the server's pace, the tier "+
		"of its wait (default POLL_TIERS: %g s, ±20 %%) and at its turn at the latest: %d looks for 1800 s (lineModelled beside each "+
		"measured wait checks the schedule). CloudFront answers them from its cache: its origin (the position function) sees about one "+
		"a second per room and edge location, whatever the number of visitors.",
		near, minWait(out.Visitors), out.Summary.LongestWaitSecs, tier, out.Wait30Min.Line)
}

func minWait(vs []Visitor) float64 {
	m := math.Inf(1)
	for _, v := range vs {
		m = min(m, v.WaitSeconds)
	}
	return m
}

// lineLooks is how many times the page reads the line over a wait of w
// seconds: app.js's schedule (next, follow, pace) without its jitter.
func lineLooks(w float64) int {
	n := 0
	for eta := w; eta > near; n++ {
		eta -= min(tier, eta)
	}
	return n
}

func enter(t *testing.T, base, user string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/queue/enter?room="+room, nil)
	req.Header.Set("X-User-Id", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("enter %s: %d %s", user, resp.StatusCode, b)
	}
}
