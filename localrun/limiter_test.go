package localrun_test

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/runnertest"

	"github.com/waitroom/waitroom/internal/openapitest"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/localrun"
)

// Two runners on one Redis, as two Lambda instances would be: together
// they let one caller through CLIENT_BURST times, whichever runner it
// reaches, and a flooding caller does not take another caller's budget.
// The bound is what the limit allows over the flood's measured time (the
// burst, and one more per step elapsed: none, a step is 1,000 s), not what
// a fast machine happens to do. On a busy one the calls reach the store out
// of their stamps' order, and it used to let 9 through (issue 38: a refusal
// is now decided again on the store's clock, ratelimit.lua).
func TestLimiterAcrossTwoRunners(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		srv := engine.Start(t)
		env := map[string]string{"REDIS_URL": srv.URL(), "ADDR": "127.0.0.1:0",
			"CLIENT_RATE_PER_SEC": "0.001", "CLIENT_BURST": "10", "IP_RATE_PER_SEC": "100000", "IP_BURST": "100000"}
		cfg := runnertest.Config(t, env)
		runners := []*localrun.Runner{runnertest.Start(t, cfg), runnertest.Start(t, cfg)}
		client := openapitest.Client(t)
		poll := func(r *localrun.Runner, room, user string) int {
			req, _ := http.NewRequest("POST", r.URL+"/queue/enter?room="+room, nil)
			req.Header.Set("X-User-Id", user)
			resp, err := client.Do(req)
			if err != nil {
				t.Error(err)
				return 0
			}
			resp.Body.Close()
			if resp.StatusCode == 429 && resp.Header.Get("Retry-After") == "" {
				t.Error("429 without Retry-After")
			}
			return resp.StatusCode
		}
		// A call the store could not answer in time (503 on a loaded
		// machine) may or may not have taken its token: such a run says
		// nothing of the limit, and is run again in a fresh room (the
		// buckets are the room's).
		for attempt := range 3 {
			room := fmt.Sprint("drop", attempt)
			var allowed, limited, other, calmFailed atomic.Int64
			var wg sync.WaitGroup
			start := time.Now()
			for i := 0; i < 40; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					switch poll(runners[i%2], room, "flood") {
					case 200:
						allowed.Add(1)
					case 429:
						limited.Add(1)
					default:
						other.Add(1)
					}
				}(i)
			}
			for i := 0; i < 8; i++ { // meanwhile, within its own burst
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					switch poll(runners[i%2], room, "calm") {
					case 200:
					case 429:
						calmFailed.Add(1)
					default:
						other.Add(1)
					}
				}(i)
			}
			wg.Wait()
			refill := int64(time.Since(start).Seconds() * 0.001) // CLIENT_RATE_PER_SEC
			if other.Load() > 0 {
				t.Logf("%s: %d calls unanswered by the store; again in a fresh room", room, other.Load())
				continue
			}
			if a := allowed.Load(); a < 10 || a > 10+refill || a+limited.Load() != 40 || calmFailed.Load() != 0 {
				t.Fatalf("flood: %d allowed, %d limited (want 10 to %d of 40); calm refused %d times", a, limited.Load(), 10+refill, calmFailed.Load())
			}
			return
		}
		t.Fatal("three runs in a row had calls the store did not answer")
	})
}

// Connecting the event stream takes a token like a poll: a client that
// reconnects in a loop is refused with 429 and Retry-After.
func TestEventStreamConnectsAreLimited(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		r, _ := startRunner(t, engine, map[string]string{"CLIENT_RATE_PER_SEC": "0.001", "CLIENT_BURST": "1"})
		connect := func() *http.Response {
			req, _ := http.NewRequest("GET", r.URL+"/queue/events?room=live", nil)
			req.Header.Set("X-User-Id", "reconnector")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		first := connect() // READY/WAITING/NOT_IN_QUEUE: the stream's first answer
		first.Body.Close()
		if first.StatusCode != 200 {
			t.Fatalf("first connect: %d", first.StatusCode)
		}
		second := connect()
		second.Body.Close()
		if second.StatusCode != 429 || second.Header.Get("Retry-After") == "" {
			t.Fatalf("second connect: %d, Retry-After %q", second.StatusCode, second.Header.Get("Retry-After"))
		}
	})
}
