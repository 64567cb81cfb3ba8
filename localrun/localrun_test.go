package localrun_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/envconfig"
	"github.com/waitroom/waitroom/internal/runnertest"

	"github.com/waitroom/waitroom/internal/openapitest"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/localrun"
)

type answer struct {
	Status      string `json:"status"`
	Position    int64  `json:"position"`
	EntryToken  string `json:"entryToken"`
	PollAfterMs *int64 `json:"pollAfterMs"`
	Error       string `json:"error"`
}

func do(t *testing.T, method, url, user string, headers map[string]string) (int, string) {
	req, _ := http.NewRequest(method, url, strings.NewReader(`{"sku":"tv-55"}`))
	req.Header.Set("X-User-Id", user)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := openapitest.Client(t).Do(req) // every exchange is checked against docs/openapi.yaml
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func startRunner(t *testing.T, engine redistest.Engine, env map[string]string) (*localrun.Runner, *redistest.Instance) {
	t.Helper()
	srv := engine.Start(t)
	vars := map[string]string{"REDIS_URL": srv.URL(), "ADDR": "127.0.0.1:0"}
	for k, v := range env {
		if k != "REDIS_URL" && k != "ADDR" {
			vars[k] = v
		}
	}
	return runnertest.Start(t, runnertest.Config(t, vars)), srv
}

// What the runner answers besides the journey, over HTTP, each answer
// checked against docs/openapi.yaml by the client.
func TestRunnerRefusals(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		r, srv := startRunner(t, engine, nil)
		client := openapitest.Client(t)
		send := func(method, path string, body io.Reader, header ...string) *http.Response {
			t.Helper()
			req, _ := http.NewRequest(method, r.URL+path, body)
			for i := 0; i+1 < len(header); i += 2 {
				req.Header.Set(header[i], header[i+1])
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			return resp
		}
		cases := []struct {
			method, path string
			body         io.Reader
			header       []string
			status       int
		}{
			{"GET", "/nope", nil, nil, http.StatusNotFound},
			{"GET", "/queue/enter", nil, []string{"X-User-Id", "u"}, http.StatusMethodNotAllowed},
			{"POST", "/queue/position", nil, []string{"X-User-Id", "u"}, http.StatusMethodNotAllowed},
			{"POST", "/queue/enter?room=Shoes", nil, []string{"X-User-Id", "u"}, http.StatusBadRequest},
			{"GET", "/queue/position", nil, nil, http.StatusUnauthorized},
			{"POST", "/orders", strings.NewReader("{}"), []string{"X-User-Id", "u"}, http.StatusForbidden},
			{"POST", "/orders", strings.NewReader(strings.Repeat("x", 64<<10+1)), []string{"X-User-Id", "u", "X-Entry-Token", "t"}, http.StatusRequestEntityTooLarge},
		}
		for _, c := range cases {
			if resp := send(c.method, c.path, c.body, c.header...); resp.StatusCode != c.status {
				t.Errorf("%s %s: %d, want %d", c.method, c.path, resp.StatusCode, c.status)
			}
		}
		srv.Stop()
		resp := send("GET", "/healthz", nil)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("healthz with the store down: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	})
}

// Real users' journeys over HTTP against a real redis-server: enter, poll
// as told by pollAfterMs, get READY, order, retry with the same key.
func TestUserJourneys(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		r, _ := startRunner(t, engine, map[string]string{"ADMIT_RATE_PER_SEC": "20"})

		if code, body := do(t, "GET", r.URL+"/healthz", "", nil); code != 200 {
			t.Fatalf("healthz %d %s", code, body)
		}

		const users = 40
		var wg sync.WaitGroup
		polls := make([]int, users)
		for i := 0; i < users; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				user := fmt.Sprintf("shopper-%02d", i)
				code, body := do(t, "POST", r.URL+"/queue/enter?room=tv", user, nil)
				var a answer
				for deadline := time.Now().Add(20 * time.Second); ; {
					if code != 200 || json.Unmarshal([]byte(body), &a) != nil {
						t.Errorf("%s: %d %s", user, code, body)
						return
					}
					if a.Status == "READY" {
						break
					}
					if a.Status != "WAITING" || a.PollAfterMs == nil || time.Now().After(deadline) {
						t.Errorf("%s: unexpected %s", user, body)
						return
					}
					// As told, but at most 2 s: on a machine loaded enough to
					// delay five batches in a row, admission counts as stalled
					// and the answer says 60 s, which a test need not sit out.
					time.Sleep(min(time.Duration(*a.PollAfterMs)*time.Millisecond, 2*time.Second))
					polls[i]++
					code, body = do(t, "GET", r.URL+"/queue/position?room=tv", user, nil)
				}
				hdr := map[string]string{"X-Entry-Token": a.EntryToken, "Idempotency-Key": "order-" + user}
				// A shopper retries a 503 with the same key, as the answer
				// asks: a store call past its 1 s timeout on a loaded machine
				// is that answer, and the key makes the retry a replay.
				order := func() (code int, body string) {
					for try := 0; try < 20; try++ {
						if code, body = do(t, "POST", r.URL+"/orders", user, hdr); code != http.StatusServiceUnavailable {
							break
						}
						time.Sleep(250 * time.Millisecond)
					}
					return code, body
				}
				code1, first := order()
				code2, again := order()
				if code1 != 201 || code2 != 201 || first != again || !strings.Contains(first, user) {
					t.Errorf("%s: order %d %s, retry %d %s", user, code1, first, code2, again)
				}
				if code, body := do(t, "GET", r.URL+"/queue/position?room=tv", user, nil); code != 200 || !strings.Contains(body, "NOT_IN_QUEUE") {
					t.Errorf("%s after ordering: %d %s", user, code, body)
				}
			}(i)
		}
		wg.Wait()
		if got := r.Demo.Stats().Orders; got != users {
			t.Fatalf("demo order API took %d orders, want exactly %d (retries are replays)", got, users)
		}
		total := 0
		for _, p := range polls {
			total += p
		}
		t.Logf("%d users, %d polls in all", users, total)
	})
}

// batchesRun counts admission batches: each reads the room list once.
func batchesRun(t *testing.T, srv *redistest.Server) int64 {
	t.Helper()
	info, err := srv.Client().Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_smembers:calls="); ok {
			n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			return n
		}
	}
	return 0
}

// Idle admission returns after one batch; the local runner then paces its
// invocations one interval apart instead of looping, and a newcomer in the
// idle room is still admitted by the next batch or the one after.
func TestIdleAdmissionPacingOnRedisServer(t *testing.T) {
	srv := redistest.Start(t)
	const interval = 100 * time.Millisecond
	cfg, err := envconfig.Load(func(k string) (string, bool) {
		v, ok := map[string]string{"REDIS_URL": srv.URL(), "ADDR": "127.0.0.1:0", "ADMIT_INTERVAL_MS": "100"}[k]
		return v, ok
	}, envconfig.Local)
	if err != nil {
		t.Fatal(err)
	}
	r, err := localrun.Start(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	time.Sleep(interval) // the first invocation is under way
	before, start := batchesRun(t, srv), time.Now()
	time.Sleep(10 * interval)
	n, took := batchesRun(t, srv)-before, time.Since(start)
	// About one batch per interval: a busy loop would run thousands.
	if max := int64(took/interval) + 2; n < 3 || n > max {
		t.Fatalf("idle: %d batches in %v, want 3..%d", n, took, max)
	}
	t.Logf("idle: %d batches in %v", n, took.Round(time.Millisecond))

	code, body := do(t, "POST", r.URL+"/queue/enter?room=quiet", "newcomer", nil)
	entered, at := time.Now(), batchesRun(t, srv)
	for !strings.Contains(body, `"READY"`) {
		if code != 200 || time.Since(entered) > 5*time.Second {
			t.Fatalf("newcomer: %d %s", code, body)
		}
		time.Sleep(5 * time.Millisecond)
		code, body = do(t, "GET", r.URL+"/queue/position?room=quiet", "newcomer", nil)
	}
	waited, batches := time.Since(entered), batchesRun(t, srv)-at
	// The batch under way may have read the rooms before the newcomer's;
	// the next one admits. One more may have started before READY was seen.
	if batches > 3 {
		t.Fatalf("newcomer READY after %d batches (%v)", batches, waited)
	}
	t.Logf("newcomer in an idle room: READY after %v, %d batches", waited.Round(time.Millisecond), batches)
}
