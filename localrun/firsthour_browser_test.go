package localrun_test

// Issue 34: the first hour of a shopper, screen by screen: a reopened room,
// a branded page on a small phone with a logo that fails, Korean line
// breaking, and the page as the usual screenshot tools see it.

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/browsertest"
	"github.com/waitroom/waitroom/internal/redistest"
)

// A sold-out room reopened without a new message (waitroomctl reopen ROOM
// sends PATCH {"closed":false}) greets its fresh line without the sold-out
// text: an admitted shopper sees "It's your turn" alone.
func TestBrowserReopenClearsTheSoldOutMessage(t *testing.T) {
	redistest.EachParallel(t, func(t *testing.T, engine redistest.Engine) {
		ctx := browsertest.Shared(t)
		r, _ := startRunner(t, engine, nil)
		adminCall(t, r, "PUT", "tv", `{"ratePerSec":100}`)
		adminCall(t, r, "PATCH", "tv", `{"closed":true,"message":"Sold out — all 500 TVs are gone."}`)
		adminCall(t, r, "PATCH", "tv", `{"closed":false}`)
		page := browsertest.Tab(t, ctx, 60*time.Second)
		console := browsertest.CollectConsole(page)
		browsertest.Do(t, page, "open", chromedp.EmulateViewport(480, 700), chromedp.Navigate(r.URL+"/?room=tv"), chromedp.WaitVisible(chromedp.ID("ready")))
		waitText(t, page, "title", "It's your turn")
		shown := browsertest.Get(t, page, "message", chromedp.Evaluate[bool](`!document.getElementById("message").hidden`))
		if msg := text(t, page, "message"); shown || msg != "" {
			t.Errorf("the reopened room's page shows the message %q (shown %v)", msg, shown)
		}
		console.Check(t)
	})
}

// overflow is how far the page reaches beyond the viewport's width (0: no
// sideways scrolling).
const overflow = `document.documentElement.scrollWidth - document.documentElement.clientWidth`

// The branded page on a 320 px phone: no sideways scrolling, the shop's
// title in place of the room's internal name, and a logo that fails to load
// (404, a server that is gone) hidden, not a broken image with the title
// clipped inside it. The page's layout, not the store: the embedded store
// alone.
func TestBrowserBrandedSmallScreenEmbedded(t *testing.T) {
	t.Parallel() // asserts no timing: beside the other browser tests (redistest.EachParallel)
	logos := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/logo.svg" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "image/svg+xml")
		fmt.Fprint(w, `<svg xmlns="http://www.w3.org/2000/svg" width="96" height="40" viewBox="0 0 96 40"><rect width="96" height="40" rx="8" fill="#0b6e4f"/></svg>`)
	}))
	t.Cleanup(logos.Close)
	gone := httptest.NewTLSServer(http.NotFoundHandler())
	gone.Close()
	ctx := browsertest.Shared(t)
	r, _ := startRunner(t, redistest.EmbeddedEngine, map[string]string{"PAGE_IMAGE_ORIGINS": logos.URL + "," + gone.URL})
	const title = "Kim's Shoes · Spring drop"
	for _, c := range []struct{ room, logo string }{{"good", logos.URL + "/logo.svg"}, {"missing", logos.URL + "/missing.svg"}, {"gone", gone.URL + "/logo.svg"}} {
		room, logo := c.room, c.logo
		adminCall(t, r, "PUT", room, fmt.Sprintf(`{"ratePerSec":0.001,"title":%q,"brandColor":"#0b6e4f","logoUrl":%q}`, title, logo))
		enter(t, r, room, "ahead")
		page := browsertest.Tab(t, ctx, 30*time.Second)
		console := browsertest.CollectConsole(page)
		browsertest.Do(t, page, room, chromedp.EmulateViewport(320, 640), chromedp.Navigate(r.URL+"/?room="+room), chromedp.WaitVisible(chromedp.ID("waiting")))
		waitText(t, page, "brand-title", title)
		// complete: loaded, or failed (then a broken image, or hidden).
		browsertest.Get(t, page, "logo settled", chromedp.Poll[bool](`document.getElementById("logo").complete && (document.getElementById("logo").naturalWidth > 0 || !document.getElementById("logo").hasAttribute("src") || performance.now() > 3000)`))
		shown := browsertest.Get(t, page, "logo shown", chromedp.Evaluate[bool](`getComputedStyle(document.getElementById("logo")).display !== "none"`))
		if want := room == "good"; shown != want {
			t.Errorf("%s: logo shown %v, want %v (a logo that fails is hidden, not a broken image)", room, shown, want)
		}
		if px := browsertest.Get(t, page, "overflow", chromedp.Evaluate[int](overflow)); px > 0 {
			t.Errorf("%s: at 320 px the page is %d px too wide: it scrolls sideways", room, px)
		}
		if room := browsertest.Get(t, page, "room name", chromedp.Evaluate[bool](`getComputedStyle(document.querySelector("#main .room")).display !== "none"`)); room {
			t.Errorf("the room's internal name (%q) is shown beside the shop's title", browsertest.Get(t, page, "room", chromedp.Evaluate[string](`document.querySelector("#main .room").textContent`)))
		}
		// The title is readable: laid out at its full width, nothing clipped.
		clipped := browsertest.Get(t, page, "title box", chromedp.Evaluate[string](`(function () {
			var e = document.getElementById("brand-title"), b = e.getBoundingClientRect();
			if (b.width < 100 || b.height < 10) return "the title is " + b.width + "×" + b.height + " px";
			if (e.scrollWidth > e.clientWidth + 1 || b.right > document.documentElement.clientWidth) return "the title is clipped";
			return "";
		})()`))
		if clipped != "" {
			t.Errorf("%s: %s", room, clipped)
		}
		console.Check(t, "404", gone.URL)
	}
}

// Korean at 320 px: the style sheet names the common Korean fonts (a
// system without one shows boxes otherwise) and keeps words whole
// (word-break: keep-all): "유지됩니다." never breaks as "유지됩니/다.".
func TestBrowserKoreanLineBreakingEmbedded(t *testing.T) {
	t.Parallel() // asserts no timing: beside the other browser tests (redistest.EachParallel)
	ctx := browsertest.Shared(t)
	r, _ := startRunner(t, redistest.EmbeddedEngine, map[string]string{"ADMIT_RATE_PER_SEC": "0.001"})
	enter(t, r, "tv", "ahead")
	page := browsertest.Tab(t, ctx, 30*time.Second)
	console := browsertest.CollectConsole(page)
	browsertest.Do(t, page, "open", chromedp.EmulateViewport(320, 640), chromedp.Navigate(r.URL+"/?room=tv&lang=ko"), chromedp.WaitVisible(chromedp.ID("waiting")))
	fonts := browsertest.Get(t, page, "fonts", chromedp.Evaluate[string](`getComputedStyle(document.querySelector("[data-t='keep.open']")).fontFamily`))
	for _, font := range []string{"Noto Sans CJK KR", "Apple SD Gothic Neo", "Malgun Gothic", "NanumGothic"} {
		if !strings.Contains(fonts, font) {
			t.Errorf("the Korean page's fonts %q do not name %q", fonts, font)
		}
	}
	// Every word of every Korean paragraph on one line; and the sentence
	// wraps at all at 320 px, or this could not fail.
	broken := browsertest.Get(t, page, "words", chromedp.Evaluate[[]string](`(function () {
		var out = [], lines = 0;
		document.querySelectorAll("#main p, #main h1").forEach(function (p) {
			if (p.offsetParent === null || !/[가-힣]/.test(p.textContent)) return;
			var walk = document.createTreeWalker(p, NodeFilter.SHOW_TEXT), n;
			while ((n = walk.nextNode())) {
				var re = /\S+/g, m;
				while ((m = re.exec(n.data))) {
					var range = document.createRange();
					range.setStart(n, m.index);
					range.setEnd(n, m.index + m[0].length);
					var tops = {};
					Array.prototype.forEach.call(range.getClientRects(), function (rc) { if (rc.width > 0) tops[Math.round(rc.top)] = true; });
					if (Object.keys(tops).length > 1) out.push(m[0]);
				}
			}
			lines = Math.max(lines, Math.round(p.getBoundingClientRect().height / parseFloat(getComputedStyle(p).lineHeight)));
		});
		if (lines < 2) out.push("(no Korean paragraph wraps at this width)");
		return out;
	})()`))
	if len(broken) > 0 {
		t.Errorf("Korean words broken across lines at 320 px: %q", broken)
	}
	if px := browsertest.Get(t, page, "overflow", chromedp.Evaluate[int](overflow)); px > 0 {
		t.Errorf("the Korean page is %d px too wide at 320 px", px)
	}
	console.Check(t)
}

// The page as the usual tools see it: chromium's own command line, as a
// user types it, with a fresh profile. A capture at the page's load shows
// the visitor's standing (not "Joining the line…"), and
// --virtual-time-budget returns (an open event stream would hold it
// forever). The page's behaviour, not the store's: the embedded store alone.
func TestBrowserScreenshotToolEmbedded(t *testing.T) {
	t.Parallel() // asserts no timing: beside the other browser tests (redistest.EachParallel)
	chromium := browsertest.Path(t)
	r, _ := startRunner(t, redistest.EmbeddedEngine, map[string]string{"ADMIT_RATE_PER_SEC": "0.001"})
	for i := range 3 {
		enter(t, r, "tv", fmt.Sprintf("ahead-%d", i))
	}
	url := r.URL + "/?room=tv"
	cli := func(args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		args = append([]string{"--headless", "--no-sandbox", "--user-data-dir=" + t.TempDir(), "--window-size=480,800"}, append(args, url)...)
		cmd := exec.CommandContext(ctx, chromium, args...)
		var out, errs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errs
		start := time.Now()
		err := cmd.Run()
		if ctx.Err() != nil {
			t.Fatalf("chromium %s did not return in %v", strings.Join(args, " "), time.Since(start).Round(time.Second))
		}
		if err != nil {
			t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, errs.Bytes())
		}
		return out.Bytes()
	}

	shot := filepath.Join(t.TempDir(), "page.png")
	cli("--screenshot=" + shot)
	rows := cardRows(t, shot)
	t.Logf("the screenshot's card: %d px tall", rows)
	if rows < 250 {
		t.Errorf("the screenshot's card is %d px tall: the page was captured before its first state (\"Joining the line…\" is about 120)", rows)
	}
	for _, flags := range [][]string{{"--dump-dom"}, {"--virtual-time-budget=5000", "--dump-dom"}} {
		dom := string(cli(flags...))
		if !strings.Contains(dom, `data-state="waiting"`) || !strings.Contains(dom, "You are in line") || !strings.Contains(dom, "Estimated wait") {
			t.Errorf("chromium %s: the page is not in its waiting state:\n%.600s", strings.Join(flags, " "), dom[max(0, strings.Index(dom, "<main")):])
		}
	}
}

// cardRows counts the rows of the PNG whose middle pixel is the card's
// white: how tall the page's card was drawn.
func cardRows(t *testing.T, file string) int {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	b, rows := img.Bounds(), 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		if r, g, bl, _ := img.At((b.Min.X+b.Max.X)/2, y).RGBA(); r>>8 == 0xff && g>>8 == 0xff && bl>>8 == 0xff {
			rows++
		}
	}
	return rows
}
