package localrun_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/waitroom/waitroom/internal/redistest"
)

// Issue 12, defect 5: enter and position never read a body, so a large one
// costs the runner nothing and is not refused on their behalf.
func TestEnterIgnoresItsBody(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		r, _ := startRunner(t, engine, nil)
		req, _ := http.NewRequest("POST", r.URL+"/queue/enter", bytes.NewReader(make([]byte, 11<<20)))
		req.Header.Set("X-User-Id", "big")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("enter with an unused 11 MB body: %d", resp.StatusCode)
		}
	})
}
