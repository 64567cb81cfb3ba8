package localrun_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/browsertest"
	"github.com/waitroom/waitroom/internal/linetest"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/sqstest"
)

// spoilFirstReceipt replaces the receipt of the page's first enter answer
// with a forged one, as if it had expired: the position poll with it
// answers 401 invalid_receipt.
const spoilFirstReceipt = `(() => {
  const real = window.fetch;
  let spoiled = false;
  window.fetch = (url, opts) => real(url, opts).then(resp => {
    if (spoiled || !String(url).startsWith("/queue/enter") || resp.status !== 202) return resp;
    spoiled = true;
    return resp.json().then(b => { b.receipt = "forged.v-x.9999999999.AAAA"; return new Response(JSON.stringify(b), {status: 202, headers: resp.headers}); });
  });
})();`

// With INTAKE=broker the page is told ACCEPTED: it shows the visitor in line
// without a number, polls with the receipt until the runner's consumer has
// applied the entry, then shows the position; a receipt the server refuses
// makes it enter again by itself.
func TestBrowserBrokerIntake(t *testing.T) {
	redistest.EachParallel(t, func(t *testing.T, engine redistest.Engine) {
		ctx := browsertest.Shared(t)
		r, srv := startRunner(t, engine, map[string]string{"INTAKE": "broker", "INTAKE_QUEUE_URL": sqstest.Queue(t, t.Name(), 1), // goaws may hold a message back until its visibility timeout (internal/sqstest)
			"ADMIT_RATE_PER_SEC": "0.001"})
		for i := range 3 {
			if code, body := do(t, "POST", r.URL+"/queue/enter?room=tv", fmt.Sprintf("early-%d", i), nil); code != 202 {
				t.Fatalf("enter: %d %s, want 202 ACCEPTED", code, body)
			}
		}
		// The first is admitted at once (admission starts with one batch's budget).
		for deadline := time.Now().Add(20 * time.Second); linetest.Length(t, srv.Client(), "tv") < 2; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the consumer applied %d of 3 entries", linetest.Length(t, srv.Client(), "tv"))
			}
		}

		tabA := browsertest.Tab(t, ctx, 30*time.Second)
		console := browsertest.CollectConsole(tabA)
		browsertest.Do(t, tabA, "open", chromedp.Navigate(r.URL+"/?room=tv"))
		// ACCEPTED is shown at once; the first poll comes a second later.
		browsertest.Get(t, tabA, "processing", chromedp.Poll[bool](`document.getElementById("wait").textContent === "You're in; finding your place…"`))
		if title := browsertest.Get(t, tabA, "title", chromedp.Text(chromedp.ID("title"))); title != "You are in line" {
			t.Errorf("processing: title %q", title)
		}
		browsertest.Get(t, tabA, "position shown", chromedp.Poll[bool](`document.getElementById("position").textContent !== "" && !document.getElementById("position").parentNode.hidden`))
		if n := shownPosition(t, tabA); n != 3 {
			t.Errorf("position %d, want 3: behind the 2 still waiting", n)
		}
		if wait := browsertest.Get(t, tabA, "wait", chromedp.Text(chromedp.ID("wait"))); !strings.Contains(wait, "Estimated wait") {
			t.Errorf("after PROCESSING: wait %q", wait)
		}
		console.Check(t)

		tabB := browsertest.Tab(t, ctx, 30*time.Second)
		consoleB := browsertest.CollectConsole(tabB)
		if _, err := chromedp.Call(tabB, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: spoilFirstReceipt}); err != nil {
			t.Fatal(err)
		}
		browsertest.Do(t, tabB, "open with a forged receipt", chromedp.Navigate(r.URL+"/?room=tv"), chromedp.WaitVisible(chromedp.ID("problem")))
		if text := browsertest.Get(t, tabB, "problem", chromedp.Text(chromedp.ID("problem-text"))); !strings.Contains(text, "Joining the line again") {
			t.Errorf("invalid receipt: %q", text)
		}
		browsertest.Get(t, tabB, "rejoined", chromedp.Poll[bool](`document.getElementById("main").dataset.state === "waiting" && !document.getElementById("position").parentNode.hidden`))
		if n := linetest.Length(t, srv.Client(), "tv"); n != 4 {
			t.Errorf("%d in line, want the 2 still ahead and the two visitors, once each", n)
		}
		consoleB.Check(t, "401")
	})
}
