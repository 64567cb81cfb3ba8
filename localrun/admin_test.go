package localrun_test

import (
	"net/http"
	"testing"

	"github.com/waitroom/waitroom/internal/openapitest"
	"github.com/waitroom/waitroom/internal/redistest"
)

// Without ADMIN_TOKEN the runner makes one up (for the command to print):
// the admin API takes it and nothing else.
func TestRunnerGeneratesAnAdminToken(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		r, _ := startRunner(t, engine, nil)
		if !r.GeneratedAdminToken || len(r.Config.AdminToken) < 43 {
			t.Fatalf("generated %t, %d characters", r.GeneratedAdminToken, len(r.Config.AdminToken))
		}
		other, _ := startRunner(t, engine, nil)
		if other.Config.AdminToken == r.Config.AdminToken {
			t.Fatal("two runs made up the same token")
		}
		for token, want := range map[string]int{string(r.Config.AdminToken): 200, string(other.Config.AdminToken): 401, "": 401} {
			req, _ := http.NewRequest("GET", r.URL+"/admin/rooms", nil)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := openapitest.Client(t).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("token %.6s…: %d, want %d", token, resp.StatusCode, want)
			}
		}
		set, _ := startRunner(t, engine, map[string]string{"ADMIN_TOKEN": "chosen-by-the-operator"})
		if set.GeneratedAdminToken || set.Config.AdminToken != "chosen-by-the-operator" {
			t.Fatalf("ADMIN_TOKEN set: %+v", set.Config.AdminToken)
		}
	})
}
