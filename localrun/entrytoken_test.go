package localrun_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/httpapi"
	"github.com/waitroom/waitroom/internal/redistest"
)

// A separate program (cmd/entrytoken-verify, as a shop's server would)
// verifies the token a visitor of the local runner was given, with nothing
// but the runner's JWKS over HTTP; a token of another room is refused.
func TestEntryTokenVerifiedByASeparateProgram(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		r, _ := startRunner(t, engine, map[string]string{"ENTRY_TOKEN_ISSUER": "https://queue.test", "ADMIT_RATE_PER_SEC": "50"})
		bin := filepath.Join(t.TempDir(), "entrytoken-verify")
		if out, err := exec.Command("go", "build", "-o", bin, "../cmd/entrytoken-verify").CombinedOutput(); err != nil {
			t.Fatalf("build: %v\n%s", err, out)
		}
		token := ""
		for deadline := time.Now().Add(10 * time.Second); token == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			req, _ := http.NewRequest("POST", r.URL+"/queue/enter?room=tv", nil)
			req.Header.Set("X-User-Id", "shopper-1")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var body struct{ EntryToken string }
			_ = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			token = body.EntryToken
		}
		if token == "" {
			t.Fatal("never admitted")
		}
		verify := func(room string) (string, error) {
			var out bytes.Buffer
			cmd := exec.Command(bin, "-jwks", r.URL+httpapi.JWKSPath, "-issuer", "https://queue.test", "-room", room, token)
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			return out.String(), err
		}
		out, err := verify("tv")
		if err != nil || !strings.Contains(out, `"sub":"shopper-1"`) || !strings.Contains(out, `"room":"tv"`) {
			t.Fatalf("verification: %v\n%s", err, out)
		}
		if out, err := verify("shoes"); err == nil || !strings.Contains(out, "wrong room") {
			t.Fatalf("another room's checkout accepted it: %v\n%s", err, out)
		}
	})
}
