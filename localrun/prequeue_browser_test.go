package localrun_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/browsertest"

	"github.com/waitroom/waitroom/internal/openapitest"
	"github.com/waitroom/waitroom/internal/redistest"
)

// A visitor who arrives before a scheduled opening sees when it opens,
// not "not in line", and the page follows the server back just after the
// opening into the line and to its turn.
func TestBrowserPreQueue(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		ctx := browsertest.Shared(t)
		const token = "browser-admin-token-0123456789"
		r, _ := startRunner(t, engine, map[string]string{"ADMIN_TOKEN": token})
		opens := time.Now().Add(3 * time.Second).UTC().Truncate(time.Second).Add(time.Second)
		req, _ := http.NewRequest("PUT", r.URL+"/admin/rooms/launch", strings.NewReader(fmt.Sprintf(`{"opensAt": %q}`, opens.Format(time.RFC3339))))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := openapitest.Client(t).Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("create the room: %v %v", resp, err)
		}
		_ = resp.Body.Close()

		page := browsertest.Tab(t, ctx, 60*time.Second)
		console := browsertest.CollectConsole(page)
		browsertest.Do(t, page, "open the page before the opening", chromedp.Navigate(r.URL+"/?room=launch"), chromedp.WaitVisible(chromedp.ID("problem")))
		if title := browsertest.Get(t, page, "title", chromedp.Text(chromedp.ID("title"))); title != "The sale opens soon" {
			t.Fatalf("title %q", title)
		}
		if text := browsertest.Get(t, page, "text", chromedp.Text(chromedp.ID("problem-text"))); !strings.Contains(text, "random place") {
			t.Fatalf("pre-queue text %q", text)
		}
		browsertest.Do(t, page, "after the opening, the turn", chromedp.WaitVisible(chromedp.ID("ready")))
		if !time.Now().After(opens) {
			t.Fatal("admitted before the opening")
		}
		console.Check(t)
	})
}
