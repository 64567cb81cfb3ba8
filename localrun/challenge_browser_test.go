package localrun_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/browsertest"
	"github.com/waitroom/waitroom/internal/linetest"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// recordStates keeps, in window.seen, every state the page shows and the
// solving percentage with it ("solving:37%"), from before the page's own
// script runs: the solve is over in a blink at the tests' difficulty.
const recordStates = `window.seen = [];
new MutationObserver(function () {
  var main = document.getElementById("main"), pct = document.getElementById("solving-pct");
  var s = main ? main.dataset.state + ":" + (pct ? pct.textContent : "") : "";
  if (s && window.seen[window.seen.length - 1] !== s) window.seen.push(s);
}).observe(document, {subtree: true, childList: true, attributes: true, characterData: true});`

// Issue 19 with CHALLENGE=pow: the page asked for a proof of work (428)
// solves it in its Worker under the page's CSP, shows its progress, and
// joins the line with the solution; a reload keeps the place by the ticket
// and solves nothing.
func TestBrowserSolvesTheChallenge(t *testing.T) {
	redistest.EachParallel(t, func(t *testing.T, engine redistest.Engine) {
		ctx := browsertest.Shared(t)
		r, srv := startRunner(t, engine, map[string]string{"CHALLENGE": "pow", "CHALLENGE_BITS": "12", "ADMIT_RATE_PER_SEC": "0.01"})
		enter(t, r, "tv", "ahead") // admitted by the first batch
		enter(t, r, "tv", "second")
		page := browsertest.Tab(t, ctx, 30*time.Second)
		console := browsertest.CollectConsole(page)
		if _, err := chromedp.Call(page, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: recordStates}); err != nil {
			t.Fatal(err)
		}
		browsertest.Do(t, page, "open the page", chromedp.Navigate(r.URL+"/?room=tv"), chromedp.WaitVisible(chromedp.ID("waiting")))
		seen := browsertest.Get(t, page, "states", chromedp.Evaluate[[]string](`window.seen`))
		if !solvedInSteps(seen) {
			t.Errorf("states %v: want solving from 0%% to 100%%, then waiting", seen)
		}
		if pos := shownPosition(t, page); pos < 1 || pos > 2 {
			t.Errorf("position %d, want behind the one still waiting", pos)
		}
		// The visitor is anonymous: h:second's place is recorded, and the
		// line counts the visitor's number behind it.
		line, _ := redisstore.Waiting(context.Background(), srv.Client(), "tv", []string{"h:second"})
		n, _ := redisstore.LineLength(context.Background(), srv.Client(), "tv")
		if len(line) != 1 || n != 2 || len(srv.Client().Keys(context.Background(), "wr:{tv}:pow:*").Val()) != 1 {
			t.Errorf("line %v of %d: want the visitor behind h:second, with its challenge spent", line, n)
		}

		browsertest.Do(t, page, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("waiting")))
		if again := browsertest.Get(t, page, "states", chromedp.Evaluate[[]string](`window.seen`)); strings.Contains(strings.Join(again, " "), "solving") {
			t.Errorf("a reload solved again: %v", again)
		}
		if n := linetest.Length(t, srv.Client(), "tv"); n != 2 {
			t.Errorf("the reload took another place: %d in line", n)
		}
		console.Check(t, "428")
	})
}

// solvedInSteps: the states went from solving at 0% up to solving at 100%
// (never down), then to waiting.
func solvedInSteps(seen []string) bool {
	last, solving := -1, false
	for _, s := range seen {
		state, pct, _ := strings.Cut(s, ":")
		switch {
		case state == "solving":
			var p int
			if _, err := fmt.Sscanf(pct, "%d%%", &p); pct != "" && (err != nil || p < last) {
				return false
			}
			last, solving = max(last, p), true
		case state == "waiting":
			return solving && last == 100
		}
	}
	return false
}
