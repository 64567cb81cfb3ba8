package localrun_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/browsertest"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/localrun"
	"github.com/waitroom/waitroom/localrun/checkout"
)

// linePage opens the page of room through a front that stands for AWS (no
// live stream: the page follows GET /queue/line) with ahead visitors in
// line before it, the room created with settings; it waits for the
// waiting state.
func linePage(t *testing.T, engine redistest.Engine, room, settings string, ahead int) (*localrun.Runner, *browsertest.Front, context.Context, *browsertest.Console) {
	t.Helper()
	// Looks every second (±20 %) whatever the wait, paused or not.
	return linePageTiers(t, engine, "0:1000", room, settings, ahead)
}

// linePageTiers is linePage with the runner's POLL_TIERS.
func linePageTiers(t *testing.T, engine redistest.Engine, tiers, room, settings string, ahead int) (*localrun.Runner, *browsertest.Front, context.Context, *browsertest.Console) {
	t.Helper()
	ctx := browsertest.Shared(t)
	r, _ := startRunner(t, engine, map[string]string{"POLL_TIERS": tiers})
	adminCall(t, r, "PUT", room, settings)
	for i := range ahead {
		enter(t, r, room, fmt.Sprintf("ahead-%02d", i))
	}
	front := browsertest.NewFront(t, r.URL, checkout.ContinueURL)
	page := browsertest.Tab(t, ctx, 30*time.Second)
	console := browsertest.CollectConsole(page)
	browsertest.Do(t, page, "open", chromedp.Navigate(front.URL+"/?room="+room), chromedp.WaitVisible(chromedp.ID("waiting")))
	return r, front, page, console
}

// waitCount waits (at most 10 s) until the front has seen at least n
// requests to route.
func waitCount(t *testing.T, front *browsertest.Front, route string, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); front.Count(route) < n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests to %s in 10 s, want %d (%v)", front.Count(route), route, n, front.Counts())
		}
	}
}

// Issue 36: a waiting page follows the room's public line and asks the
// per-visitor routes nothing while its turn is far. Paused, it shows its
// exact place (its number − the front + 1) from the line alone; resumed, it
// shows the line moving, still without a position call, and reaches READY
// with one enter and a few position calls near its turn.
func TestBrowserFollowsTheLine(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		const ahead, rate = 80, 20 // 4 s of line: 2 s followed on the line alone, then the turn is near
		r, front, page, console := linePage(t, engine, "line", fmt.Sprintf(`{"ratePerSec":%d,"paused":true}`, rate), ahead)
		waitCount(t, front, "GET /queue/line", 2)
		if got := text(t, page, "position"); got != strconv.Itoa(ahead+1) {
			t.Errorf("paused: position %q, want %d", got, ahead+1)
		}
		if got := text(t, page, "wait"); got != "Admission is paused for a moment; you keep your place." {
			t.Errorf("paused: wait %q", got)
		}
		if n := front.Count("GET /queue/position"); n != 0 || front.Count("POST /queue/enter") != 1 {
			t.Errorf("paused and far from its turn: %v; want one enter, no position", front.Counts())
		}

		// From here on the page's places are recorded as shown, with the time.
		browsertest.Get(t, page, "watch", chromedp.Evaluate[bool](watchPlaces))
		adminCall(t, r, "PATCH", "line", `{"paused":false}`)
		browsertest.Do(t, page, "READY", chromedp.WaitVisible(chromedp.ID("ready")))
		var shown [][2]int64 // [ms since the epoch, place]
		if err := json.Unmarshal([]byte(browsertest.Get(t, page, "places", chromedp.Evaluate[string](`JSON.stringify(window.shownPlaces)`))), &shown); err != nil {
			t.Fatal(err)
		}
		// A place over NEAR (2 s) of admissions from the turn comes from the
		// line alone: shown before any position call.
		first, far := front.First("GET /queue/position"), 0
		for _, s := range shown {
			if s[1] > 2*rate && s[1] <= ahead {
				far++
				if !first.IsZero() && first.UnixMilli() < s[0] {
					t.Errorf("a position call (%v) before the line's place %d was shown (%v): %v", first, s[1], time.UnixMilli(s[0]), shown)
				}
			}
		}
		if far == 0 {
			t.Errorf("the page never showed the line moving far from its turn: %v", shown)
		}
		// Position: near the turn, then just after it (pollAfterMs); a third
		// when admission runs behind the turn the server foresaw.
		if enters, positions := front.Count("POST /queue/enter"), front.Count("GET /queue/position"); enters != 1 || positions < 1 || positions > 3 {
			t.Errorf("to READY: %d enter, %d position calls; want 1 and 1 to 3 (%v)", enters, positions, front.Counts())
		}
		console.Check(t)
	})
}

// watchPlaces makes the page record each place it shows, with the time.
const watchPlaces = `(function () {
  var el = document.getElementById("position");
  window.shownPlaces = [];
  new MutationObserver(function () { window.shownPlaces.push([Date.now(), +el.textContent]); })
    .observe(el, { childList: true, characterData: true, subtree: true });
  return true;
})()`

// A page that follows the line of a paused room whose tokens live 4 s
// looks again within 2 s (half the claim window, the line's
// claimWindowMs), not at the far tier (60 s here): a number admitted
// meanwhile is still claimed when it comes back.
func TestBrowserLineKeepsTheClaimWindow(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		_, front, _, console := linePageTiers(t, engine, "0:60000", "brief", `{"ratePerSec":10,"paused":true,"entryTokenTtlSeconds":4}`, 30)
		waitCount(t, front, "GET /queue/line", 3)
		if front.Count("GET /queue/position") != 0 || front.Count("POST /queue/enter") != 1 {
			t.Errorf("paused, far from its turn: %v; want one enter, no position", front.Counts())
		}
		console.Check(t)
	})
}

// Issue 36: the line's CLOSED shows the sold-out state and the operator's
// message at the page's next look at the line, with no per-visitor call.
func TestBrowserLineTellsClosed(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		r, front, page, console := linePage(t, engine, "drop", `{"ratePerSec":10,"paused":true}`, 30)
		waitCount(t, front, "GET /queue/line", 1)
		closedAt := time.Now()
		adminCall(t, r, "PATCH", "drop", `{"closed":true,"message":"Sold out. Thank you!"}`)
		waitText(t, page, "title", "This sale has ended")
		if took := time.Since(closedAt); took > 3*time.Second {
			t.Errorf("CLOSED shown %v after the close; the page looks at the line about once a second", took)
		}
		if got := text(t, page, "message"); got != "Sold out. Thank you!" {
			t.Errorf("message %q", got)
		}
		if front.Count("GET /queue/position") != 0 || front.Count("POST /queue/enter") != 1 {
			t.Errorf("CLOSED from the line: %v; want one enter, no position", front.Counts())
		}
		console.Check(t)
	})
}
