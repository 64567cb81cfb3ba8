package localrun_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/redistest"
)

// screenshotsEnv names the directory where the browser test saves the
// README's screenshots (make screenshots sets it to docs/img).
const screenshotsEnv = "WAITROOM_SCREENSHOTS"

// chromiumPath finds Debian's chromium. Under CI (CI=true, where `make
// test` installs it) a missing browser fails the test; elsewhere it skips.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found: `make test` installs it (apt-get install chromium)")
	}
	t.Skip("chromium not found: skipping the browser test (`make test` installs it; under CI=true this fails)")
	return ""
}

// browser starts a fresh headless chromium with its own profile; each
// context from it is a separate browser context (its own cookies).
func browser(t *testing.T) context.Context {
	t.Helper()
	alloc, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(480, 800),
	)
	t.Cleanup(cancel)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	t.Cleanup(cancelCtx)
	if err := chromedp.Do(ctx); err != nil { // start the browser now
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

func tab(t *testing.T, parent context.Context, timeout time.Duration) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(parent, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, timeout)
	t.Cleanup(cancelT)
	return ctx
}

func get[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

func browse(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv(screenshotsEnv)
	if dir == "" {
		return
	}
	png := get(t, ctx, "screenshot", chromedp.CaptureScreenshot())
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("saved %s", filepath.Join(dir, name))
}

// A visitor's whole journey in a real browser: the page joins the line,
// shows the position, keeps the place over a reload, turns READY, and the
// Continue button leads to the demo checkout where the order is placed.
func TestBrowserJourney(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := browser(t)
		r, srv := startRunner(t, engine, map[string]string{"ADMIT_RATE_PER_SEC": "4", "ENTRY_TOKEN_TTL_SECONDS": "300"})
		const ahead = 24
		for i := range ahead {
			enter(t, r, "tv", fmt.Sprintf("early-%02d", i))
		}
		page := tab(t, ctx, 90*time.Second)
		console := collectConsole(page)
		browse(t, page, "open the page", chromedp.EmulateViewport(480, 760), chromedp.Navigate(r.URL+"/?room=tv"), chromedp.WaitVisible(chromedp.ID("waiting")))

		first := shownPosition(t, page)
		if first < 2 || first > ahead+1 {
			t.Fatalf("position %d; want behind some of the %d ahead", first, ahead)
		}
		wait := get(t, page, "wait", chromedp.Text(chromedp.ID("wait")))
		updated := get(t, page, "updated", chromedp.Text(chromedp.ID("updated")))
		if !strings.Contains(wait, "Estimated wait") || !strings.Contains(updated, "update") || get(t, page, "room", chromedp.Text(chromedp.ID("room-name"))) != "tv" {
			t.Errorf("waiting page: wait %q, updated %q", wait, updated)
		}
		if live := get(t, page, "aria-live", chromedp.AttributeValue(chromedp.ID("standing"), "aria-live")); live.Value != "polite" {
			t.Errorf("the position is not in a polite aria-live region: %+v", live)
		}
		// The page follows the line without being reloaded.
		get(t, page, "the position moves", chromedp.Poll[bool](fmt.Sprintf(`+document.getElementById("position").textContent <= %d`, first-4)))
		first = shownPosition(t, page)
		screenshot(t, page, "waiting.png")

		// Reload: the ticket cookie keeps the place; no second place is taken.
		lineBefore := srv.Client().ZCard(context.Background(), "wr:{tv}:line").Val()
		browse(t, page, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("waiting")))
		if again := shownPosition(t, page); again > first {
			t.Errorf("after a reload the position is %d, was %d", again, first)
		}
		if after := srv.Client().ZCard(context.Background(), "wr:{tv}:line").Val(); after > lineBefore {
			t.Errorf("the reload took another place: line %d → %d", lineBefore, after)
		}

		// The stream (or the polls) bring the turn.
		browse(t, page, "READY", chromedp.WaitVisible(chromedp.ID("ready")))
		countdown := get(t, page, "countdown", chromedp.Text(chromedp.ID("countdown")))
		href := get(t, page, "continue", chromedp.AttributeValue(chromedp.ID("continue"), "href"))
		focused := get(t, page, "focus", chromedp.Evaluate[string](`document.activeElement.id`))
		if !regexp.MustCompile(`^[0-5]:\d\d$`).MatchString(countdown) || !strings.Contains(href.Value, "/checkout?room=tv#entryToken=eyJ") || focused != "continue" {
			t.Errorf("READY: countdown %q, continue %q, focus on %q", countdown, href.Value, focused)
		}
		screenshot(t, page, "ready.png")
		browse(t, page, "reload when READY", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("ready")))
		if again := get(t, page, "continue", chromedp.AttributeValue(chromedp.ID("continue"), "href")); again.Value != href.Value {
			t.Errorf("after a reload the entry token changed: %q → %q", href.Value, again.Value)
		}

		// Continue with the keyboard, then order on the demo checkout.
		browse(t, page, "continue", chromedp.Focus(chromedp.ID("continue")), chromedp.KeyEvent("\r"), chromedp.WaitVisible(chromedp.ID("place")))
		browse(t, page, "place the order", chromedp.Click(chromedp.ID("place")))
		get(t, page, "order placed", placed)
		result := get(t, page, "result", chromedp.Text(chromedp.ID("result")))
		if !strings.HasPrefix(result, "Order placed: ord-") || r.Demo.Stats().Orders != 1 {
			t.Errorf("checkout: %q, %d orders taken", result, r.Demo.Stats().Orders)
		}
		// A second click after a reload replays the same order (same Idempotency-Key).
		browse(t, page, "reload checkout", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("place")), chromedp.Click(chromedp.ID("place")))
		get(t, page, "order placed again", placed)
		if replay := get(t, page, "result", chromedp.Text(chromedp.ID("result"))); replay != result || r.Demo.Stats().Orders != 1 {
			t.Errorf("order again after a reload: %q (first %q), %d orders taken", replay, result, r.Demo.Stats().Orders)
		}
		checkConsole(t, console)
	})
}

// Korean from Accept-Language (and ?lang=), readable at 320 px.
func TestBrowserKoreanNarrow(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := browser(t)
		r, _ := startRunner(t, engine, map[string]string{"ADMIT_RATE_PER_SEC": "0.01"})
		for i := range 4 {
			enter(t, r, "default", fmt.Sprintf("ahead-%d", i))
		}
		page := tab(t, ctx, 30*time.Second)
		console := collectConsole(page)
		if _, err := chromedp.Call(page, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Accept-Language": "ko-KR,ko;q=0.9"}}); err != nil {
			t.Fatalf("Accept-Language: %v", err)
		}
		browse(t, page, "open", chromedp.EmulateViewport(320, 640), chromedp.Navigate(r.URL+"/"), chromedp.WaitVisible(chromedp.ID("waiting")))
		title := get(t, page, "title", chromedp.Text(chromedp.ID("title")))
		wait := get(t, page, "wait", chromedp.Text(chromedp.ID("wait")))
		lang := get(t, page, "lang", chromedp.Evaluate[string](`document.documentElement.lang`))
		if title != "대기 중입니다" || !strings.Contains(wait, "예상 대기 시간") || lang != "ko" {
			t.Errorf("Korean page: title %q, wait %q, lang %q", title, wait, lang)
		}
		overflow := get(t, page, "width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		if overflow > 320 {
			t.Errorf("at 320 px the page is %d px wide: it scrolls sideways", overflow)
		}
		screenshot(t, page, "waiting-ko.png")
		browse(t, page, "?lang=en", chromedp.Navigate(r.URL+"/?lang=en"), chromedp.WaitVisible(chromedp.ID("waiting")))
		if title := get(t, page, "title", chromedp.Text(chromedp.ID("title"))); title != "You are in line" {
			t.Errorf("?lang=en: title %q", title)
		}
		checkConsole(t, console)
	})
}

// placed waits for the checkout to show a placed order.
var placed = chromedp.Poll[bool](`document.getElementById("main").dataset.state === "placed"`)

// Without the live stream (as in AWS, where HTTP APIs do not stream) the
// page polls as pollAfterMs says, rides out a network loss, and reaches READY.
func TestBrowserPollsWithoutStream(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := browser(t)
		r, _ := startRunner(t, engine, map[string]string{"ADMIT_RATE_PER_SEC": "4"})
		for i := range 8 {
			enter(t, r, "tv", fmt.Sprintf("early-%d", i))
		}
		page := tab(t, ctx, 60*time.Second)
		console := collectConsole(page)
		block(t, page, "*://*:*/queue/events*")
		browse(t, page, "open", chromedp.Navigate(r.URL+"/?room=tv"), chromedp.WaitVisible(chromedp.ID("waiting")))
		get(t, page, "polling", chromedp.Poll[bool](`document.getElementById("updated").textContent.startsWith("Last updated")`))

		// The network goes: the page says so and retries; it comes back: the page carries on.
		block(t, page, "*://*:*/queue/*")
		browse(t, page, "offline", chromedp.WaitVisible(chromedp.ID("problem")))
		if text := get(t, page, "offline", chromedp.Text(chromedp.ID("problem-text"))); !strings.Contains(text, "offline") {
			t.Errorf("network loss: %q", text)
		}
		block(t, page, "*://*:*/queue/events*")
		browse(t, page, "READY by polling", chromedp.WaitVisible(chromedp.ID("ready")))
		checkConsole(t, console, "/queue/")
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
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := browser(t)
		r, srv := startRunner(t, engine, map[string]string{"ADMIT_RATE_PER_SEC": "0.001", "QUEUE_CAPACITY": "2"})
		// The first user is admitted at once (the budget starts with one batch);
		// then nobody else for 1000 s, and two more fill the line.
		enter(t, r, "full", "first")
		for srv.Client().Exists(context.Background(), "wr:{full}:u:first").Val() == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		for i := 0; ; i++ {
			if code, _ := do(t, "POST", r.URL+"/queue/enter?room=full", fmt.Sprintf("f-%d", i), nil); code == 429 {
				break
			}
		}
		page := tab(t, ctx, 30*time.Second)
		console := collectConsole(page)
		browse(t, page, "full line", chromedp.Navigate(r.URL+"/?room=full"), chromedp.WaitVisible(chromedp.ID("problem")))
		text := get(t, page, "problem", chromedp.Text(chromedp.ID("problem-text")))
		retry := get(t, page, "retry", chromedp.Text(chromedp.ID("retry-in")))
		if !strings.Contains(text, "full") || !regexp.MustCompile(`^Retrying in \d+ s`).MatchString(retry) {
			t.Errorf("full line: %q / %q", text, retry)
		}

		other := tab(t, ctx, 30*time.Second)
		otherConsole := collectConsole(other)
		if _, err := chromedp.Call(other, network.SetCookie, network.SetCookieParams{Name: "wr_ticket", Value: "forged.v-x.9999999999.AAAA", URL: r.URL + "/"}); err != nil {
			t.Fatal(err)
		}
		browse(t, other, "invalid ticket", chromedp.Navigate(r.URL+"/?room=fresh"), chromedp.WaitVisible(chromedp.ID("rejoin")))
		if text := get(t, other, "problem", chromedp.Text(chromedp.ID("problem-text"))); !strings.Contains(text, "Join again") {
			t.Errorf("invalid ticket: %q", text)
		}
		browse(t, other, "rejoin", chromedp.Click(chromedp.ID("rejoin")))
		get(t, other, "rejoined", chromedp.Poll[bool](`["waiting","ready"].includes(document.getElementById("main").dataset.state)`))
		if n := srv.Client().Exists(context.Background(), "wr:{fresh}:line", "wr:{fresh}:tokens").Val(); n == 0 {
			t.Error("the rejoin took no place")
		}
		checkConsole(t, console, "429")
		checkConsole(t, otherConsole, "401")
	})
}

func shownPosition(t *testing.T, ctx context.Context) int {
	t.Helper()
	text := get(t, ctx, "position", chromedp.Text(chromedp.ID("position")))
	var n int
	if _, err := fmt.Sscan(strings.ReplaceAll(text, ",", ""), &n); err != nil {
		t.Fatalf("position %q: %v", text, err)
	}
	return n
}

// console collects what a page logs, until its context ends.
type console struct {
	mu       sync.Mutex
	messages []chromedp.ConsoleMessage
}

func collectConsole(ctx context.Context) *console {
	c := &console{}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			c.mu.Lock()
			c.messages = append(c.messages, m)
			c.mu.Unlock()
		}
	}()
	return c
}

// checkConsole fails on any error the page logged (a script exception, a
// resource the Content-Security-Policy blocked) but the expected ones, whose
// text or URL contains one of expected.
func checkConsole(t *testing.T, c *console, expected ...string) {
	t.Helper()
	time.Sleep(100 * time.Millisecond) // let the last messages arrive
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.messages {
		if !m.IsException() && m.Type != "error" {
			continue
		}
		known := false
		for _, e := range expected {
			known = known || strings.Contains(m.String(), e) || strings.Contains(m.URL, e)
		}
		if !known {
			t.Errorf("console: %s (%s:%d)", m, m.URL, m.Line+1)
		}
	}
}
