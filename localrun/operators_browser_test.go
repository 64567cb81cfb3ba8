package localrun_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/browsertest"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/localrun"
)

// adminCall sends one admin request to the runner and fails the test on
// anything but 200.
func adminCall(t *testing.T, r *localrun.Runner, method, room, body string) {
	t.Helper()
	req, _ := http.NewRequest(method, r.URL+"/admin/rooms/"+room, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+string(r.Config.AdminToken))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%s /admin/rooms/%s %s: %d", method, room, body, resp.StatusCode)
	}
}

// text is an element's textContent.
func text(t *testing.T, page context.Context, id string) string {
	t.Helper()
	return browsertest.Get(t, page, id, chromedp.Evaluate[string](fmt.Sprintf(`document.getElementById(%q).textContent`, id)))
}

// waitText waits until the element's textContent is want.
func waitText(t *testing.T, page context.Context, id, want string) {
	t.Helper()
	browsertest.Get(t, page, id+" = "+want, chromedp.Poll[bool](fmt.Sprintf(`document.getElementById(%q).textContent === %q`, id, want)))
}

// Issue 22: an operator closes a room mid-sale with a message. A waiting
// visitor's page (on the stream) turns to the sold-out state with the
// message within one admission interval, a polling one at its next poll,
// and a newcomer's page shows it at once (403 room_closed).
func TestBrowserClosedWithMessage(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := browsertest.Shared(t)
		r, _ := startRunner(t, engine, nil)
		adminCall(t, r, "PUT", "drop", `{"ratePerSec":0.001,"title":"Kim's Shoes","brandColor":"#b3261e"}`)
		for i := range 3 {
			enter(t, r, "drop", fmt.Sprintf("ahead-%d", i))
		}
		page := browsertest.Tab(t, ctx, 60*time.Second)
		console := browsertest.CollectConsole(page)
		browsertest.Do(t, page, "open", chromedp.EmulateViewport(480, 700), chromedp.Navigate(r.URL+"/?room=drop"), chromedp.WaitVisible(chromedp.ID("waiting")))
		browsertest.Get(t, page, "streaming", chromedp.Poll[bool](`document.getElementById("updated").textContent.startsWith("Live")`))

		const sold = "Sold out! <b>Thank you</b> for waiting."
		closedAt := time.Now()
		adminCall(t, r, "PATCH", "drop", `{"closed":true,"message":"Sold out! <b>Thank you</b> for waiting."}`)
		waitText(t, page, "title", "This sale has ended")
		took := time.Since(closedAt)
		if got := text(t, page, "message"); got != sold {
			t.Errorf("message %q, want %q (as text)", got, sold)
		}
		if n := browsertest.Get(t, page, "no HTML", chromedp.Evaluate[int](`document.querySelectorAll("#message b").length`)); n != 0 {
			t.Error("the operator's message was parsed as HTML")
		}
		if took > 2*time.Second {
			t.Errorf("the stream took %v to show CLOSED (one admission interval is %v)", took, r.Config.AdmitInterval)
		}
		if visible := browsertest.Get(t, page, "rejoin", chromedp.Evaluate[bool](`getComputedStyle(document.getElementById("rejoin")).display !== "none"`)); visible {
			t.Error("a sold-out page offers to join the line again")
		}

		// A newcomer after the operator reworded the message: refused, in the shop's colours.
		const thanks = "Sold out! Thank you for waiting: the next drop is on Friday."
		adminCall(t, r, "PATCH", "drop", fmt.Sprintf(`{"message":%q}`, thanks))
		newcomer := browsertest.Tab(t, ctx, 30*time.Second)
		newConsole := browsertest.CollectConsole(newcomer)
		browsertest.Do(t, newcomer, "a newcomer", chromedp.EmulateViewport(480, 560), chromedp.Navigate(r.URL+"/?room=drop"), chromedp.WaitVisible(chromedp.ID("problem")))
		waitText(t, newcomer, "title", "This sale has ended")
		if got, title := text(t, newcomer, "message"), text(t, newcomer, "brand-title"); got != thanks || title != "Kim's Shoes" {
			t.Errorf("newcomer: message %q, title %q", got, title)
		}
		browsertest.Screenshot(t, newcomer, "closed.png")
		console.Check(t)
		newConsole.Check(t, "403")
	})
}

// Issue 22: the operator's message reaches a waiting page live, changes,
// and goes when cleared; polling pages get it at their next poll.
func TestBrowserLiveMessage(t *testing.T) {
	redistest.EachParallel(t, func(t *testing.T, engine redistest.Engine) {
		ctx := browsertest.Shared(t)
		r, _ := startRunner(t, engine, map[string]string{"POLL_TIERS": "0:500"})
		adminCall(t, r, "PUT", "line", `{"ratePerSec":0.001}`)
		enter(t, r, "line", "ahead")
		streaming := browsertest.Tab(t, ctx, 60*time.Second)
		polling := browsertest.Tab(t, ctx, 60*time.Second)
		block(t, polling, "*://*:*/queue/events*")
		for _, page := range []context.Context{streaming, polling} {
			browsertest.Do(t, page, "open", chromedp.Navigate(r.URL+"/?room=line"), chromedp.WaitVisible(chromedp.ID("waiting")))
			if visible := browsertest.Get(t, page, "message hidden", chromedp.Evaluate[bool](`!document.getElementById("message").hidden`)); visible {
				t.Error("a message is shown before the operator set one")
			}
		}
		for _, msg := range []string{"Sizes 40–44 are sold out.", "Restock at 3 pm: stay in line!"} {
			adminCall(t, r, "PATCH", "line", fmt.Sprintf(`{"message":%q}`, msg))
			for _, page := range []context.Context{streaming, polling} {
				waitText(t, page, "message", msg)
			}
		}
		browsertest.Screenshot(t, streaming, "message.png")
		adminCall(t, r, "PATCH", "line", `{"message":""}`)
		for _, page := range []context.Context{streaming, polling} {
			browsertest.Get(t, page, "message gone", chromedp.Poll[bool](`document.getElementById("message").hidden`))
		}
	})
}

// Issue 22: the page in the shop's colours: title, colour and logo from the
// room's settings; Korean when the room's language is ko and the browser
// asks for neither English nor Korean; English when it asks for English.
func TestBrowserBranding(t *testing.T) {
	redistest.EachParallel(t, func(t *testing.T, engine redistest.Engine) {
		logo := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "image/svg+xml")
			fmt.Fprint(w, `<svg xmlns="http://www.w3.org/2000/svg" width="96" height="40" viewBox="0 0 96 40"><rect width="96" height="40" rx="8" fill="#0b6e4f"/><text x="48" y="27" font-family="sans-serif" font-size="18" font-weight="700" fill="#fff" text-anchor="middle">KIM</text></svg>`)
		}))
		t.Cleanup(logo.Close)
		ctx := browsertest.Shared(t)
		r, _ := startRunner(t, engine, map[string]string{"PAGE_IMAGE_ORIGINS": logo.URL, "ADMIT_RATE_PER_SEC": "0.01"})
		adminCall(t, r, "PUT", "shoes", fmt.Sprintf(`{"ratePerSec":0.01,"title":"Kim's Shoes · Spring drop","brandColor":"#0b6e4f","logoUrl":%q,"language":"ko"}`, logo.URL+"/logo.svg"))
		for i := range 5 {
			enter(t, r, "shoes", fmt.Sprintf("ahead-%d", i))
		}
		for _, c := range []struct{ accept, title, shot string }{
			{"fr-FR,fr", "대기 중입니다", "branded-ko.png"},
			{"en-US,en", "You are in line", "branded.png"},
		} {
			page := browsertest.Tab(t, ctx, 30*time.Second)
			console := browsertest.CollectConsole(page)
			if _, err := chromedp.Call(page, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: "Mozilla/5.0 (X11; Linux x86_64) waitroom-test", AcceptLanguage: c.accept}); err != nil {
				t.Fatal(err)
			}
			browsertest.Do(t, page, "open", chromedp.EmulateViewport(480, 760), chromedp.Navigate(r.URL+"/?room=shoes"), chromedp.WaitVisible(chromedp.ID("waiting")))
			waitText(t, page, "title", c.title)
			browsertest.Get(t, page, "logo loaded", chromedp.Poll[bool](`document.getElementById("logo").complete && document.getElementById("logo").naturalWidth > 0`))
			color := browsertest.Get(t, page, "button colour", chromedp.Evaluate[string](`getComputedStyle(document.documentElement).getPropertyValue("--brand").trim()`))
			if got := text(t, page, "brand-title"); got != "Kim's Shoes · Spring drop" || color != "#0b6e4f" {
				t.Errorf("%s: title %q, colour %q", c.accept, got, color)
			}
			if doc := browsertest.Get(t, page, "document title", chromedp.Evaluate[string](`document.title`)); !strings.HasSuffix(doc, "Kim's Shoes · Spring drop") {
				t.Errorf("%s: document title %q", c.accept, doc)
			}
			browsertest.Screenshot(t, page, c.shot)
			console.Check(t)
		}
	})
}

// Issue 37: the room's title and message as an operator sets them through
// the admin API, markup and all, reach the page through the real server
// and are shown as text (web's TestBrowserOperatorTextIsText covers every
// field against any answer; this is the operator's own path).
func TestBrowserOperatorMarkupIsText(t *testing.T) {
	redistest.EachParallel(t, func(t *testing.T, engine redistest.Engine) {
		ctx := browsertest.Shared(t)
		r, _ := startRunner(t, engine, nil)
		const title, message = `Kim's <a href="https://example.invalid" data-injected>Shoes</a> & co`, `Sizes <b data-injected>40</b> < 44 sold out`
		adminCall(t, r, "PUT", "drop", fmt.Sprintf(`{"ratePerSec":0.001,"title":%q,"message":%q}`, title, message))
		enter(t, r, "drop", "ahead")
		page := browsertest.Tab(t, ctx, 30*time.Second)
		console := browsertest.CollectConsole(page)
		browsertest.Do(t, page, "open", chromedp.Navigate(r.URL+"/?room=drop"), chromedp.WaitVisible(chromedp.ID("waiting")))
		// enter's answer brands the page before it shows the line.
		if got, msg := text(t, page, "brand-title"), text(t, page, "message"); got != title || msg != message {
			t.Errorf("title %q, message %q; want them as text", got, msg)
		}
		if n := browsertest.Get(t, page, "no HTML", chromedp.Evaluate[int](`document.querySelectorAll("[data-injected]").length`)); n != 0 {
			t.Errorf("the operator's title or message was parsed as HTML: %d elements", n)
		}
		console.Check(t)
	})
}
