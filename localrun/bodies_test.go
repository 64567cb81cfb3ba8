package localrun_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/redistest"
)

// Issue 12, defect 5: enter and position never read a body, so a small one
// costs nothing. Issue 19: the runner refuses a body over 64 KB before it
// routes or authenticates the request, whatever the path, without reading it.
func TestLargeBodiesRefusedBeforeRouting(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		r, _ := startRunner(t, engine, nil)
		send := func(path, user string, size int, chunked bool) (int, string) {
			t.Helper()
			var body io.Reader = bytes.NewReader(make([]byte, size))
			if chunked {
				body = io.MultiReader(body) // no length: sent chunked
			}
			req, _ := http.NewRequest("POST", r.URL+path, body)
			if user != "" {
				req.Header.Set("X-User-Id", user)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		if code, body := send("/queue/enter", "small", 1<<10, false); code != 200 {
			t.Fatalf("enter with an unused 1 KB body: %d %s", code, body)
		}
		for _, c := range []struct {
			path, user string
			chunked    bool
		}{{"/queue/enter", "big", false}, {"/orders", "", false}, {"/orders", "", true}, {"/nope", "", false}, {"/admin/rooms/x", "", false}} {
			if code, body := send(c.path, c.user, 64<<10+1, c.chunked); code != http.StatusRequestEntityTooLarge || !strings.Contains(body, `"payload_too_large"`) {
				t.Errorf("POST %s with 64 KB + 1 (chunked %v): %d %s", c.path, c.chunked, code, body)
			}
		}
	})
}
