package readme

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/browsertest"
)

// pageJourney opens the page the README says to open, as a visitor
// without an account: it joins the line, turns READY, and Continue leads to
// the demo checkout, where the order is placed.
func pageJourney(t *testing.T, url string) {
	page := browsertest.Tab(t, browsertest.Start(t), 60*time.Second)
	console := browsertest.CollectConsole(page)
	browsertest.Do(t, page, "open "+url, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.ID("ready")))
	browsertest.Do(t, page, "continue", chromedp.Click(chromedp.ID("continue")), chromedp.WaitVisible(chromedp.ID("place")))
	browsertest.Do(t, page, "place the order", chromedp.Click(chromedp.ID("place")))
	browsertest.Get(t, page, "order placed", chromedp.Poll[bool](`document.getElementById("main").dataset.state === "placed"`))
	if result := browsertest.Get(t, page, "result", chromedp.Text(chromedp.ID("result"))); !strings.HasPrefix(result, "Order placed: ord-") {
		t.Errorf("the checkout says %q", result)
	}
	console.Check(t)
}
