// Package browsertest drives Debian's chromium (headless, through chromedp)
// for the tests of the waiting page: the local runner's browser tests and
// the README's quick start.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ScreenshotsEnv names the directory where the browser tests save the
// README's screenshots (make screenshots sets it to docs/img).
const ScreenshotsEnv = "WAITROOM_SCREENSHOTS"

// Path is Debian's chromium, for a test that runs its command line as a
// user types it (skipped, or failed under CI=true, without it).
func Path(t *testing.T) string {
	t.Helper()
	return chromiumPath(t)
}

// UserAgent is the browser the tests stand for: a visitor's chromium. The
// headless one's own names "HeadlessChrome", which the page takes for a tool
// (it polls instead of streaming: web/static/waitroom/app.js).
const UserAgent = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"

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

// Start starts a fresh headless chromium with its own profile; each
// context from it is a separate browser context (its own cookies). The
// flags keep it off the network it cannot reach here.
func Start(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel, err := startBrowser(chromiumPath(t), t.TempDir())
	t.Cleanup(cancel)
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// shared is the package's one chromium (Shared), its profile's directory
// and what stops it (CloseShared).
var shared struct {
	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
	dir    string
	err    error
}

// Shared is Start for a package of many browser tests: one chromium,
// started by the first test that asks and stopped by CloseShared, which
// the package's TestMain calls after its tests. Starting chromium costs
// seconds of CPU on a 2-core machine; each Tab is a browser context of its
// own (cookies, storage, cache), so the tests stay apart as with Start.
func Shared(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.ctx == nil && shared.err == nil {
		shared.dir, shared.err = os.MkdirTemp("", "browsertest-")
		if shared.err == nil {
			shared.ctx, shared.cancel, shared.err = startBrowser(path, shared.dir)
		}
	}
	if shared.err != nil {
		t.Fatalf("start chromium: %v", shared.err)
	}
	return shared.ctx
}

// CloseShared stops the chromium of Shared, if started, and removes its
// profile.
func CloseShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.cancel != nil {
		shared.cancel()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	shared.ctx, shared.cancel, shared.dir, shared.err = nil, nil, "", nil
}

// startBrowser starts headless chromium at path with its profile in dir,
// and returns its context and what stops it.
func startBrowser(path, dir string) (context.Context, context.CancelFunc, error) {
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-quic", true),
		// The branding tests serve a logo over https from a test server
		// with a self-signed certificate (localrun/operators_browser_test.go).
		chromedp.Flag("ignore-certificate-errors", true),
		chromedp.UserDataDir(dir),
		chromedp.UserAgent(UserAgent),
		chromedp.WindowSize(480, 800),
	)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	cancel := func() { cancelCtx(); cancelAlloc() }
	return ctx, cancel, chromedp.Do(ctx) // start the browser now
}

// Tab opens a tab in a browser context of its own, closed after timeout.
func Tab(t *testing.T, parent context.Context, timeout time.Duration) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(parent, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, timeout)
	t.Cleanup(cancelT)
	return ctx
}

// Get runs one action and returns its value; what names it in a failure.
func Get[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// Do runs steps; what names them in a failure.
func Do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Screenshot saves the tab as name in ScreenshotsEnv's directory, when set.
func Screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv(ScreenshotsEnv)
	if dir == "" {
		return
	}
	png := Get(t, ctx, "screenshot", chromedp.CaptureScreenshot())
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("saved %s", filepath.Join(dir, name))
}

// Console collects what a page logs, until its context ends.
type Console struct {
	mu       sync.Mutex
	messages []chromedp.ConsoleMessage
}

// CollectConsole starts collecting what the tab logs.
func CollectConsole(ctx context.Context) *Console {
	c := &Console{}
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

// Check fails on any error the page logged (a script exception, a
// resource the Content-Security-Policy blocked) but the expected ones, whose
// text or URL contains one of expected.
func (c *Console) Check(t *testing.T, expected ...string) {
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
