package localrun_test

import (
	"bytes"
	"net/http"
	"testing"
)

// Issue 12, defect 5: enter and position never read a body, so a large one
// costs the runner nothing and is not refused on their behalf.
func TestEnterIgnoresItsBody(t *testing.T) {
	r, _ := startRunner(t, nil)
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
}
