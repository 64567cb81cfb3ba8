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
// The bounds are the limit's over the flood's measured time, whatever the
// machine's speed (issue 38): on a busy one the calls reach the store out
// of their stamps' order, and it used to let 9 through (a refusal is now
// decided again on the store's clock, ratelimit.lua); and calls the store
// did not answer in time (503) may or may not have taken their tokens.
func TestLimiterAcrossTwoRunners(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		srv := engine.Start(t)
		env := map[string]string{"REDIS_URL": srv.URL(), "ADDR": "127.0.0.1:0",
			"CLIENT_RATE_PER_SEC": "0.001", "CLIENT_BURST": "10", "IP_RATE_PER_SEC": "100000", "IP_BURST": "100000"}
		cfg := runnertest.Config(t, env)
		runners := []*localrun.Runner{runnertest.Start(t, cfg), runnertest.Start(t, cfg)}
		// A run with unanswered calls checks only what holds whatever they
		// did; one where every call was answered pins the count exactly,
		// so a run that had some is made again in a fresh room (the buckets
		// are the room's).
		for attempt := range 3 {
			start := time.Now()
			c := flood(t, runners, fmt.Sprint("drop", attempt))
			refill := int64(time.Since(start).Seconds() * 0.001) // CLIENT_RATE_PER_SEC
			a, l, u := c.allowed.Load(), c.limited.Load(), c.unanswered.Load()
			// At most the burst and the refill; and a refusal means the
			// burst was spent, by calls allowed or, unanswered, maybe.
			if a > 10+refill || l > 0 && a+u < 10 || c.calmRefused.Load() != 0 {
				t.Fatalf("flood: %d allowed, %d limited, %d unanswered (want 10 to %d allowed of those answered); calm refused %d times",
					a, l, u, 10+refill, c.calmRefused.Load())
			}
			if u+c.calmUnanswered.Load() == 0 {
				return // then a = 10 exactly: a > 10 fails above, and so does a < 10 (l > 0)
			}
			t.Logf("drop%d: %d calls unanswered by the store (%d allowed, %d limited); again in a fresh room", attempt, u+c.calmUnanswered.Load(), a, l)
		}
		t.Log("no run without unanswered calls on this busy machine: only the bounds were checked")
	})
}

// floodCounts are one flood's answers: the flooding caller's, where a call
// the store did not answer in time (503) may or may not have taken its
// token, and the calm caller's refusals.
type floodCounts struct {
	allowed, limited, unanswered, calmRefused, calmUnanswered atomic.Int64
}

// flood makes 40 concurrent enters of one caller in room, half through each
// runner, and meanwhile 8 of another caller, within its own burst.
func flood(t *testing.T, runners []*localrun.Runner, room string) *floodCounts {
	client := openapitest.Client(t)
	poll := func(r *localrun.Runner, user string) int {
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
	var c floodCounts
	var wg sync.WaitGroup
	for i := range 48 {
		wg.Go(func() {
			user, allowed, limited, unanswered := "flood", &c.allowed, &c.limited, &c.unanswered
			if i >= 40 {
				user, allowed, limited, unanswered = "calm", new(atomic.Int64), &c.calmRefused, &c.calmUnanswered
			}
			switch poll(runners[i%2], user) {
			case 200:
				allowed.Add(1)
			case 429:
				limited.Add(1)
			default:
				unanswered.Add(1)
			}
		})
	}
	wg.Wait()
	return &c
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
