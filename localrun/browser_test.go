package localrun_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/browsertest"
	"github.com/waitroom/waitroom/internal/linetest"
	"github.com/waitroom/waitroom/internal/redistest"
)

// TestMain stops the browser the tests share (browsertest.Shared) after them.
func TestMain(m *testing.M) {
	code := m.Run()
	browsertest.CloseShared()
	os.Exit(code)
}

// A visitor's whole journey in a real browser: the page joins the line,
// shows the position, keeps the place over a reload, turns READY, and the
// Continue button leads to the demo checkout where the order is placed.
//
// Sequential: its order goes through the gate's store and order deadlines,
// which failed it once (the order never placed) beside another browser test
// on a machine at load average 16.
func TestBrowserJourney(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := browsertest.Shared(t)
		r, srv := startRunner(t, engine, map[string]string{"ADMIT_RATE_PER_SEC": "4", "ENTRY_TOKEN_TTL_SECONDS": "300"})
		// 15 s of line at 4/s: on a loaded machine the browser can take
		// seconds to open its tab, and the page must find the line not yet
		// admitted.
		const ahead = 60
		for i := range ahead {
			enter(t, r, "tv", fmt.Sprintf("early-%02d", i))
		}
		page := browsertest.Tab(t, ctx, 90*time.Second)
		console := browsertest.CollectConsole(page)
		browsertest.Do(t, page, "open the page", chromedp.EmulateViewport(480, 760), chromedp.Navigate(r.URL+"/?room=tv"), chromedp.WaitVisible(chromedp.ID("waiting")))

		first := shownPosition(t, page)
		if first < 2 || first > ahead+1 {
			t.Fatalf("position %d; want behind some of the %d ahead", first, ahead)
		}
		wait := browsertest.Get(t, page, "wait", chromedp.Text(chromedp.ID("wait")))
		updated := browsertest.Get(t, page, "updated", chromedp.Text(chromedp.ID("updated")))
		if !strings.Contains(wait, "Estimated wait") || !strings.Contains(updated, "update") || browsertest.Get(t, page, "room", chromedp.Text(chromedp.ID("room-name"))) != "tv" {
			t.Errorf("waiting page: wait %q, updated %q", wait, updated)
		}
		if live := browsertest.Get(t, page, "aria-live", chromedp.AttributeValue(chromedp.ID("standing"), "aria-live")); live.Value != "polite" {
			t.Errorf("the position is not in a polite aria-live region: %+v", live)
		}
		// The page follows the line without being reloaded.
		browsertest.Get(t, page, "the position moves", chromedp.Poll[bool](fmt.Sprintf(`+document.getElementById("position").textContent <= %d`, first-4)))
		first = shownPosition(t, page)
		browsertest.Screenshot(t, page, "waiting.png")

		// Reload: the ticket cookie keeps the place; no second place is taken.
		lineBefore := linetest.Length(t, srv.Client(), "tv")
		browsertest.Do(t, page, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("waiting")))
		if again := shownPosition(t, page); again > first {
			t.Errorf("after a reload the position is %d, was %d", again, first)
		}
		if after := linetest.Length(t, srv.Client(), "tv"); after > lineBefore {
			t.Errorf("the reload took another place: line %d → %d", lineBefore, after)
		}

		// The stream (or the polls) bring the turn.
		browsertest.Do(t, page, "READY", chromedp.WaitVisible(chromedp.ID("ready")))
		countdown := browsertest.Get(t, page, "countdown", chromedp.Text(chromedp.ID("countdown")))
		href := browsertest.Get(t, page, "continue", chromedp.AttributeValue(chromedp.ID("continue"), "href"))
		focused := browsertest.Get(t, page, "focus", chromedp.Evaluate[string](`document.activeElement.id`))
		if !regexp.MustCompile(`^[0-5]:\d\d$`).MatchString(countdown) || !strings.Contains(href.Value, "/checkout?room=tv#entryToken=eyJ") || focused != "continue" {
			t.Errorf("READY: countdown %q, continue %q, focus on %q", countdown, href.Value, focused)
		}
		browsertest.Screenshot(t, page, "ready.png")
		browsertest.Do(t, page, "reload when READY", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("ready")))
		if again := browsertest.Get(t, page, "continue", chromedp.AttributeValue(chromedp.ID("continue"), "href")); again.Value != href.Value {
			t.Errorf("after a reload the entry token changed: %q → %q", href.Value, again.Value)
		}

		// Continue with the keyboard, then order on the demo checkout.
		browsertest.Do(t, page, "continue", chromedp.Focus(chromedp.ID("continue")), chromedp.KeyEvent("\r"), chromedp.WaitVisible(chromedp.ID("place")))
		browsertest.Do(t, page, "place the order", chromedp.Click(chromedp.ID("place")))
		browsertest.Get(t, page, "order placed", placed)
		result := browsertest.Get(t, page, "result", chromedp.Text(chromedp.ID("result")))
		if !strings.HasPrefix(result, "Order placed: ord-") || r.Demo.Stats().Orders != 1 {
			t.Errorf("checkout: %q, %d orders taken", result, r.Demo.Stats().Orders)
		}
		// A second click after a reload replays the same order (same Idempotency-Key).
		browsertest.Do(t, page, "reload checkout", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("place")), chromedp.Click(chromedp.ID("place")))
		browsertest.Get(t, page, "order placed again", placed)
		if replay := browsertest.Get(t, page, "result", chromedp.Text(chromedp.ID("result"))); replay != result || r.Demo.Stats().Orders != 1 {
			t.Errorf("order again after a reload: %q (first %q), %d orders taken", replay, result, r.Demo.Stats().Orders)
		}
		console.Check(t)
	})
}

// Korean from Accept-Language (and ?lang=), readable at 320 px.
func TestBrowserKoreanNarrow(t *testing.T) {
	redistest.EachParallel(t, func(t *testing.T, engine redistest.Engine) {
		ctx := browsertest.Shared(t)
		r, _ := startRunner(t, engine, map[string]string{"ADMIT_RATE_PER_SEC": "0.01"})
		for i := range 4 {
			enter(t, r, "default", fmt.Sprintf("ahead-%d", i))
		}
		page := browsertest.Tab(t, ctx, 30*time.Second)
		console := browsertest.CollectConsole(page)
		if _, err := chromedp.Call(page, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Accept-Language": "ko-KR,ko;q=0.9"}}); err != nil {
			t.Fatalf("Accept-Language: %v", err)
		}
		browsertest.Do(t, page, "open", chromedp.EmulateViewport(320, 640), chromedp.Navigate(r.URL+"/"), chromedp.WaitVisible(chromedp.ID("waiting")))
		title := browsertest.Get(t, page, "title", chromedp.Text(chromedp.ID("title")))
		wait := browsertest.Get(t, page, "wait", chromedp.Text(chromedp.ID("wait")))
		lang := browsertest.Get(t, page, "lang", chromedp.Evaluate[string](`document.documentElement.lang`))
		if title != "대기 중입니다" || !strings.Contains(wait, "예상 대기 시간") || lang != "ko" {
			t.Errorf("Korean page: title %q, wait %q, lang %q", title, wait, lang)
		}
		overflow := browsertest.Get(t, page, "width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		if overflow > 320 {
			t.Errorf("at 320 px the page is %d px wide: it scrolls sideways", overflow)
		}
		browsertest.Screenshot(t, page, "waiting-ko.png")
		browsertest.Do(t, page, "?lang=en", chromedp.Navigate(r.URL+"/?lang=en"), chromedp.WaitVisible(chromedp.ID("waiting")))
		if title := browsertest.Get(t, page, "title", chromedp.Text(chromedp.ID("title"))); title != "You are in line" {
			t.Errorf("?lang=en: title %q", title)
		}
		console.Check(t)
	})
}

// placed waits for the checkout to show a placed order.
var placed = chromedp.Poll[bool](`document.getElementById("main").dataset.state === "placed"`)

// Without the live stream (as in AWS, where HTTP APIs do not stream) the
// page polls as pollAfterMs says, rides out a network loss, and reaches READY.
func TestBrowserPollsWithoutStream(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := browsertest.Shared(t)
		r, _ := startRunner(t, engine, map[string]string{"ADMIT_RATE_PER_SEC": "4"})
		// 5 s of line at 4/s: the page must open, poll and lose the network
		// before its turn; with 2 s (8 ahead) a loaded machine's page was
		// admitted first, and never showed the loss (issue 38's flake).
		for i := range 20 {
			enter(t, r, "tv", fmt.Sprintf("early-%d", i))
		}
		page := browsertest.Tab(t, ctx, 60*time.Second)
		console := browsertest.CollectConsole(page)
		block(t, page, "*://*:*/queue/events*")
		browsertest.Do(t, page, "open", chromedp.Navigate(r.URL+"/?room=tv"), chromedp.WaitVisible(chromedp.ID("waiting")))
		browsertest.Get(t, page, "polling", chromedp.Poll[bool](`document.getElementById("updated").textContent.startsWith("Last updated")`))

		// The network goes: the page says so and retries; it comes back: the page carries on.
		block(t, page, "*://*:*/queue/*")
		browsertest.Do(t, page, "offline", chromedp.WaitVisible(chromedp.ID("problem")))
		if text := browsertest.Get(t, page, "offline", chromedp.Text(chromedp.ID("problem-text"))); !strings.Contains(text, "offline") {
			t.Errorf("network loss: %q", text)
		}
		block(t, page, "*://*:*/queue/events*")
		browsertest.Do(t, page, "READY by polling", chromedp.WaitVisible(chromedp.ID("ready")))
		console.Check(t, "/queue/")
	})
}

// block makes the browser fail requests to URLs matching pattern (and only those).
func block(t *testing.T, ctx context.Context, pattern string) {
	t.Helper()
	if _, err := chromedp.Call(ctx, network.SetBlockedURLs, network.SetBlockedURLsParams{
		URLPatterns: []*network.BlockPattern{{URLPattern: pattern, Block: true}}}); err != nil {
		t.Fatal(err)
	}
}

// Errors have human states: a full line counts down Retry-After and
// retries; an invalid ticket offers to rejoin, which takes a new place.
func TestBrowserHumanStates(t *testing.T) {
	redistest.EachParallel(t, func(t *testing.T, engine redistest.Engine) {
		ctx := browsertest.Shared(t)
		r, srv := startRunner(t, engine, map[string]string{"ADMIT_RATE_PER_SEC": "0.001", "QUEUE_CAPACITY": "2"})
		// The first user is admitted at once (the budget starts with one batch);
		// then nobody else for 1000 s, and two more fill the line.
		enter(t, r, "full", "first")
		for srv.Client().Exists(context.Background(), "wr:{full}:u:h:first").Val() == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		for i := 0; ; i++ {
			if code, _ := do(t, "POST", r.URL+"/queue/enter?room=full", fmt.Sprintf("f-%d", i), nil); code == 429 {
				break
			}
		}
		page := browsertest.Tab(t, ctx, 30*time.Second)
		console := browsertest.CollectConsole(page)
		browsertest.Do(t, page, "full line", chromedp.Navigate(r.URL+"/?room=full"), chromedp.WaitVisible(chromedp.ID("problem")))
		text := browsertest.Get(t, page, "problem", chromedp.Text(chromedp.ID("problem-text")))
		retry := browsertest.Get(t, page, "retry", chromedp.Text(chromedp.ID("retry-in")))
		if !strings.Contains(text, "full") || !regexp.MustCompile(`^Retrying in \d+ s`).MatchString(retry) {
			t.Errorf("full line: %q / %q", text, retry)
		}

		other := browsertest.Tab(t, ctx, 30*time.Second)
		otherConsole := browsertest.CollectConsole(other)
		if _, err := chromedp.Call(other, network.SetCookie, network.SetCookieParams{Name: "wr_ticket", Value: "forged.v-x.9999999999.AAAA", URL: r.URL + "/"}); err != nil {
			t.Fatal(err)
		}
		browsertest.Do(t, other, "invalid ticket", chromedp.Navigate(r.URL+"/?room=fresh"), chromedp.WaitVisible(chromedp.ID("rejoin")))
		if text := browsertest.Get(t, other, "problem", chromedp.Text(chromedp.ID("problem-text"))); !strings.Contains(text, "Join again") {
			t.Errorf("invalid ticket: %q", text)
		}
		browsertest.Do(t, other, "rejoin", chromedp.Click(chromedp.ID("rejoin")))
		browsertest.Get(t, other, "rejoined", chromedp.Poll[bool](`["waiting","ready"].includes(document.getElementById("main").dataset.state)`))
		if n := srv.Client().Exists(context.Background(), "wr:{fresh}:queue", "wr:{fresh}:tokens").Val(); n == 0 {
			t.Error("the rejoin took no place")
		}
		console.Check(t, "429")
		otherConsole.Check(t, "401")
	})
}

func shownPosition(t *testing.T, ctx context.Context) int {
	t.Helper()
	text := browsertest.Get(t, ctx, "position", chromedp.Text(chromedp.ID("position")))
	var n int
	if _, err := fmt.Sscan(strings.ReplaceAll(text, ",", ""), &n); err != nil {
		t.Fatalf("position %q: %v", text, err)
	}
	return n
}
