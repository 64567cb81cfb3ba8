package web_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/browsertest"
	"github.com/waitroom/waitroom/web"
)

// The page against an API that answers what a test says: the real page
// (web.Handler) and a fake /queue/enter and /queue/position that answer
// status and body, whatever the page sends. What a real server may send
// is what these tests send: the operator's settings are free text (the
// title and message may hold "<"; docs/API.md), and a page must not trust
// the server's other fields to be harmless either.
func fakeAPI(t *testing.T, s web.Settings, status int, body string) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/", web.Handler(s))
	answer := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}
	mux.HandleFunc("/queue/enter", answer)
	mux.HandleFunc("/queue/position", answer)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// shown is what a page shows of what it was told, read in one go.
type shown struct {
	State, Title, Lang, DocTitle, Brand string
	BrandTitle, Message, Room, TurnText string
	Children                            int    // elements inside the text-only elements
	Injected                            int    // elements the tests' markup would create
	Pwned                               string // what the tests' markup would run
	LogoHidden                          bool
	LogoSrc, LogoAlt, LogoAttrs, Href   string
}

const readShown = `(function () {
  var $ = function (id) { return document.getElementById(id); };
  var text = ["brand-title", "message", "room-name", "turn-text", "title", "problem-text"];
  var logo = $("logo");
  return JSON.stringify({
    State: $("main").dataset.state, Title: $("title").textContent, Lang: document.documentElement.lang,
    DocTitle: document.title, Brand: getComputedStyle(document.documentElement).getPropertyValue("--brand").trim(),
    BrandTitle: $("brand-title").textContent, Message: $("message").textContent,
    Room: $("room-name").textContent, TurnText: $("turn-text").textContent,
    Children: text.reduce(function (n, id) { return n + $(id).children.length; }, 0),
    Injected: document.querySelectorAll("[data-injected]").length, Pwned: document.body.dataset.pwned || "",
    LogoHidden: logo.hidden, LogoSrc: logo.getAttribute("src") || "", LogoAlt: logo.alt,
    LogoAttrs: Array.prototype.map.call(logo.attributes, function (a) { return a.name; }).sort().join(" "),
    Href: $("continue").getAttribute("href") || ""
  });
})()`

// open loads the page at path on base, waits for state, and reads it. The
// browser asks for French: neither of the page's languages, so that the
// room's language would decide.
func open(t *testing.T, browser context.Context, base, path, state string) shown {
	t.Helper()
	return openUntil(t, browser, base, path, fmt.Sprintf(`document.getElementById("main").dataset.state === %q`, state))
}

// openUntil is open waiting for a condition of its own (a script's value).
func openUntil(t *testing.T, browser context.Context, base, path, until string) shown {
	t.Helper()
	page := browsertest.Tab(t, browser, 20*time.Second)
	if _, err := chromedp.Call(page, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: "Mozilla/5.0 (X11; Linux x86_64) waitroom-test", AcceptLanguage: "fr-FR,fr"}); err != nil {
		t.Fatal(err)
	}
	browsertest.Do(t, page, "open "+path, chromedp.Navigate(base+path))
	browsertest.Get(t, page, until, chromedp.Poll[bool](until))
	var s shown
	if err := json.Unmarshal([]byte(browsertest.Get(t, page, "read", chromedp.Evaluate[string](readShown))), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// Markup in the tests' texts: elements marked data-injected, and script
// that would mark the body pwned. A page that shows them as text creates
// neither.
const (
	markupTitle   = `Kim's <b data-injected>Shoes</b> <img data-injected src=x onerror="document.body.dataset.pwned='title'"> & "co"`
	markupMessage = `<script data-injected>document.body.dataset.pwned='message'</script><i data-injected>Restock</i> at 3 & 4 pm`
	markupRoom    = `<b data-injected>tv</b>`
	markupToken   = `<b data-injected>t</b>&r=x#y "z"`
)

func answer(t *testing.T, fields map[string]any) string {
	t.Helper()
	b, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Issue 37: every text the page shows from the operator (the room's
// title, message, language, brand colour, logo), from the server (the
// entry token) or from the link (the room, the language) is shown as
// text: no element is created, no attribute escaped from, no script run;
// a colour or logo URL that is not one is ignored, and so is a language
// the page does not have.
func TestBrowserOperatorTextIsText(t *testing.T) {
	browser := browsertest.Start(t)
	room := "/?room=" + url.QueryEscape(markupRoom)

	t.Run("waiting", func(t *testing.T) {
		base := fakeAPI(t, web.Settings{}, 200, answer(t, map[string]any{
			"status": "WAITING", "position": 3, "estimatedWaitSeconds": 5, "pollAfterMs": 60000,
			"title": markupTitle, "message": markupMessage,
			"brandColor": "#0b6e4f url(https://img.invalid/track.png)",
			"logoUrl":    "javascript:document.body.dataset.pwned='logo'//https://img.invalid/",
			"language":   `ko"><b data-injected>`,
		}))
		s := open(t, browser, base, room, "waiting")
		if s.BrandTitle != markupTitle || s.Message != markupMessage || s.Room != markupRoom || s.DocTitle != "You are in line · "+markupTitle {
			t.Errorf("not shown as text: title %q, message %q, room %q, document title %q", s.BrandTitle, s.Message, s.Room, s.DocTitle)
		}
		if s.Children != 0 || s.Injected != 0 || s.Pwned != "" {
			t.Errorf("markup became elements (%d in the texts, %d marked) or ran (%q)", s.Children, s.Injected, s.Pwned)
		}
		if s.Lang != "en" || s.Title != "You are in line" {
			t.Errorf("a language the page does not have: lang %q, title %q; want English", s.Lang, s.Title)
		}
		if s.Brand != "#2456c7" || !s.LogoHidden || s.LogoSrc != "" {
			t.Errorf("a colour or logo that is not one was used: --brand %q, logo hidden %v, src %q", s.Brand, s.LogoHidden, s.LogoSrc)
		}
	})

	// A logo that loads (a failing one is hidden and loses its src, issue
	// 34): the URL is the value of src alone, and the logo is decorative
	// (alt="", the title beside it names the shop).
	t.Run("logo", func(t *testing.T) {
		logos := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "image/svg+xml")
			fmt.Fprint(w, `<svg xmlns="http://www.w3.org/2000/svg" width="96" height="40"><rect width="96" height="40" fill="#0b6e4f"/></svg>`)
		}))
		t.Cleanup(logos.Close)
		logo := logos.URL + `/logo.svg?" onerror="document.body.dataset.pwned='logo'`
		title := `"><img data-injected src=x onerror="document.body.dataset.pwned='alt'">`
		base := fakeAPI(t, web.Settings{ImageOrigins: []string{logos.URL}}, 200, answer(t, map[string]any{
			"status": "WAITING", "position": 3, "estimatedWaitSeconds": 5, "pollAfterMs": 60000,
			"title": title, "logoUrl": logo, "brandColor": "red #0b6e4f",
		}))
		s := openUntil(t, browser, base, "/", `document.getElementById("main").dataset.state === "waiting" && document.getElementById("logo").complete && document.getElementById("logo").naturalWidth > 0`)
		if s.LogoHidden || s.LogoSrc != logo || s.LogoAlt != "" || s.LogoAttrs != "alt id src" || s.BrandTitle != title {
			t.Errorf("logo: hidden %v, src %q, alt %q, attributes %q, title %q; want the URL as the value of src alone, alt empty, the title as text", s.LogoHidden, s.LogoSrc, s.LogoAlt, s.LogoAttrs, s.BrandTitle)
		}
		if s.Injected != 0 || s.Pwned != "" || s.Brand != "#2456c7" {
			t.Errorf("%d elements injected, script ran %q, --brand %q", s.Injected, s.Pwned, s.Brand)
		}
	})

	ready := answer(t, map[string]any{"status": "READY", "entryToken": markupToken, "expiresAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	t.Run("token shown", func(t *testing.T) {
		s := open(t, browser, fakeAPI(t, web.Settings{}, 200, ready), "/", "ready")
		if s.TurnText != "Your entry token: "+markupToken || s.Children != 0 || s.Injected != 0 {
			t.Errorf("entry token shown as %q (%d elements, %d marked)", s.TurnText, s.Children, s.Injected)
		}
	})

	t.Run("continue link", func(t *testing.T) {
		base := fakeAPI(t, web.Settings{ContinueURL: "/checkout?room={room}#entryToken={entryToken}"}, 200, ready)
		s := open(t, browser, base, room, "ready")
		// encodeURIComponent of each: the link carries them, it does not parse them.
		want := "/checkout?room=%3Cb%20data-injected%3Etv%3C%2Fb%3E#entryToken=%3Cb%20data-injected%3Et%3C%2Fb%3E%26r%3Dx%23y%20%22z%22"
		if s.Href != want {
			t.Errorf("continue link %q, want %q", s.Href, want)
		}
	})

	t.Run("closed", func(t *testing.T) {
		base := fakeAPI(t, web.Settings{}, 403, answer(t, map[string]any{
			"error": "room_closed", "message": markupMessage, "title": markupTitle,
		}))
		// The language asked for in the link, with markup after it.
		s := open(t, browser, base, "/?lang="+url.QueryEscape(`ko-"><b data-injected>x</b>`), "problem")
		if s.Message != markupMessage || s.BrandTitle != markupTitle || s.Children != 0 || s.Injected != 0 || s.Pwned != "" {
			t.Errorf("closed: message %q, title %q (%d elements, %d marked, ran %q)", s.Message, s.BrandTitle, s.Children, s.Injected, s.Pwned)
		}
		if s.Lang != "ko" || s.Title != "판매가 종료되었습니다" {
			t.Errorf("?lang=ko-…: lang %q, title %q; want Korean", s.Lang, s.Title)
		}
	})
}

// Issue 37: the page's solver (pow.js) stops at the first counter whose
// hash has at least the challenge's bits zero bits, to the bit: it
// answers what waitroom.SolveChallenge answers. The challenge is one whose
// answer has exactly bits zero bits and comes after the first counter of
// one bit fewer, so that a solver off by one bit either way answers
// differently (one bit short, the server would refuse it).
func TestBrowserPowWorkerToTheBit(t *testing.T) {
	const bits = 12
	value, want := "", ""
	for i := 0; want == ""; i++ { // deterministic: the first such value
		value = fmt.Sprintf("c1.test.tv.nonce%d.%d.1800000000.sig", i, bits)
		sol := waitroom.SolveChallenge(value, bits)
		// Exactly bits (a solver asking one bit more skips it), and one of
		// bits-1 earlier (a solver asking one bit less stops there).
		if sum := sha256.Sum256([]byte(sol)); waitroom.LeadingZeroBits(sum[:]) == bits && sol != waitroom.SolveChallenge(value, bits-1) {
			want = sol
		}
	}
	browser := browsertest.Start(t)
	page := browsertest.Tab(t, browser, 30*time.Second)
	base := fakeAPI(t, web.Settings{}, 200, `{"status":"WAITING","position":1,"estimatedWaitSeconds":0,"pollAfterMs":60000}`)
	browsertest.Do(t, page, "open", chromedp.Navigate(base+"/"))
	got := browsertest.Get(t, page, "solve", chromedp.Evaluate[string](fmt.Sprintf(`new Promise(function (resolve) {
  var w = new Worker("/waitroom/pow.js");
  w.onmessage = function (e) { if (e.data.solution || e.data.error) { w.terminate(); resolve(e.data.solution || e.data.error); } };
  w.postMessage({value: %q, bits: %d});
})`, value, bits), chromedp.EvalAwaitPromise))
	if got != want {
		t.Errorf("pow.js solved %q with %q; want %q (the first counter of at least %d zero bits)", value, got, want, bits)
	}
}
