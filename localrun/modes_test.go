package localrun_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/runnertest"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/openapitest"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/sqstest"
	"github.com/waitroom/waitroom/localrun"
)

// The modes a user can choose, each run the way users run it: every store
// (the runner's own embedded store with REDIS_URL unset, a redis-server, a
// 3-master cluster) × every intake (direct, broker, fallback) × every
// identity (an account's X-User-Id behind the proxy secret, an anonymous
// visitor's ticket cookie) × both admissions (instant, the default: an idle
// room admits the enter at once; queued, INSTANT_ADMIT=false: the enter
// waits for a batch). All 36 combinations exist: the intake and the
// identity are the handlers' business and work on any store, and the
// broker's consumer applies to whichever store the runner uses. In each:
// enter, READY, one order, the same token refused, NOT_IN_QUEUE, and the
// abuse limiter, at its default settings, answering 429 only past its burst.
func TestModes(t *testing.T) {
	// One cluster serves every cluster mode (each in rooms of its own): a
	// cluster takes two seconds to form, the journeys a fraction of that.
	cluster := redistest.StartCluster(t, 3)
	stores := []struct {
		name string
		env  func(t *testing.T) map[string]string
	}{
		{"embedded", func(*testing.T) map[string]string { return map[string]string{} }},
		{"redis-server", func(t *testing.T) map[string]string {
			return map[string]string{"REDIS_URL": redistest.Start(t).URL()}
		}},
		{"cluster", func(*testing.T) map[string]string {
			return map[string]string{"REDIS_URL": "redis://" + cluster.Addrs[0] + "?addr=" + strings.Join(cluster.Addrs[1:], "&addr="), "REDIS_CLUSTER": "true"}
		}},
	}
	for _, store := range stores {
		for _, intake := range []waitroom.Intake{waitroom.IntakeDirect, waitroom.IntakeBroker, waitroom.IntakeFallback} {
			for _, mode := range modeSets {
				identity, queued := mode.identity, mode.queued
				name := fmt.Sprintf("store=%s/intake=%s/identity=%s/admission=%s", store.name, intake, identity, map[bool]string{false: "instant", true: "queued"}[queued])
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					env := store.env(t)
					env["INTAKE"] = string(intake)
					if intake != waitroom.IntakeDirect {
						env["INTAKE_QUEUE_URL"] = sqstest.Queue(t, t.Name(), 30)
					}
					if identity == "account" {
						env["PROXY_SECRET"] = modeProxySecret
					}
					if queued {
						env["INSTANT_ADMIT"] = "false"
					}
					// A room of its own, which no operator created: ORDER_ROOMS names it.
					room := fmt.Sprintf("%s-%s-%s-%t", store.name, intake, identity, queued)
					env["ORDER_ROOMS"] = room
					modeJourney(t, startModeRunner(t, env), identity, queued, room)
				})
			}
		}
	}
}

// modeSets are the identity and admission combinations of every store and intake.
var modeSets = []struct {
	identity string
	queued   bool
}{{"account", false}, {"account", true}, {"anonymous", false}, {"anonymous", true}}

const modeProxySecret = "a-proxy-secret-of-the-operator-0123"

// startModeRunner starts the runner with env and the local runner's
// defaults for everything else, as `make run` does (but on a free port).
func startModeRunner(t *testing.T, env map[string]string) *localrun.Runner {
	t.Helper()
	env["ADDR"] = "127.0.0.1:0"
	return runnertest.Start(t, runnertest.Config(t, env))
}

// modeVisitor is one person using the runner over HTTP: an account behind
// the operator's proxy, or an anonymous visitor keeping its ticket cookie
// as a browser does. Every exchange is checked against docs/openapi.yaml.
type modeVisitor struct {
	t       *testing.T
	base    string
	client  *http.Client
	header  http.Header
	cookie  string // the wr_ticket cookie, as the browser keeps it
	receipt string // the broker's receipt, sent to position until applied
}

func newModeVisitor(t *testing.T, r *localrun.Runner, identity, user string) *modeVisitor {
	v := &modeVisitor{t: t, base: r.URL, client: openapitest.Client(t), header: http.Header{}}
	if identity == "account" {
		v.header.Set("X-User-Id", user)
		v.header.Set("X-Proxy-Secret", modeProxySecret)
	}
	return v
}

// do sends a request and returns the status, the decoded JSON body and the headers.
func (v *modeVisitor) do(method, path string, header map[string]string, body string) (int, map[string]any, http.Header) {
	v.t.Helper()
	req, _ := http.NewRequest(method, v.base+path, strings.NewReader(body))
	for k, vals := range v.header {
		req.Header[k] = vals
	}
	for k, val := range header {
		req.Header.Set(k, val)
	}
	if v.cookie != "" {
		req.Header.Set("Cookie", v.cookie)
	}
	if v.receipt != "" && strings.HasPrefix(path, "/queue/position") {
		req.Header.Set("X-Queue-Receipt", v.receipt)
	}
	resp, err := v.client.Do(req)
	if err != nil {
		v.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		v.t.Fatalf("%s %s: %d %q is not a JSON object", method, path, resp.StatusCode, raw)
	}
	for _, c := range resp.Cookies() {
		if c.Name == waitroom.TicketCookie && c.Value != "" {
			v.cookie = c.Name + "=" + c.Value
		}
	}
	return resp.StatusCode, m, resp.Header
}

// modeJourney walks one user through a room of its own: the room is idle,
// so the enter answers READY at once unless admission is queued.
func modeJourney(t *testing.T, r *localrun.Runner, identity string, queued bool, room string) {
	v := newModeVisitor(t, r, identity, "shopper")
	status, m, _ := v.do("POST", "/queue/enter?room="+room, nil, "")
	want := map[bool]string{false: "READY", true: "WAITING"}[queued]
	switch {
	case status == http.StatusAccepted && m["status"] == "ACCEPTED":
		v.receipt, _ = m["receipt"].(string)
	case status != http.StatusOK || m["status"] != want:
		t.Fatalf("enter: %d %v, want %s", status, m, want)
	}
	token := v.waitReady(room)
	order := func(key string) (int, map[string]any) {
		status, m, _ := v.do("POST", "/orders", map[string]string{"X-Entry-Token": token, "Idempotency-Key": key, "Content-Type": "application/json"}, `{"sku":"tv-55"}`)
		return status, m
	}
	if status, m := order("first"); status != http.StatusCreated {
		t.Fatalf("the order: %d %v", status, m)
	}
	if status, m := order("second"); status != http.StatusForbidden || m["error"] != "entry_token_invalid" {
		t.Fatalf("a second order with the same token: %d %v", status, m)
	}
	v.receipt = ""
	if status, m, _ := v.do("GET", "/queue/position?room="+room, nil, ""); status != http.StatusOK || m["status"] != "NOT_IN_QUEUE" {
		t.Fatalf("after the order: %d %v", status, m)
	}
	limiterBitesPastItsBurst(t, newModeVisitor(t, r, identity, "another"), room)
}

// waitReady polls position as pollAfterMs says until READY and returns the token.
func (v *modeVisitor) waitReady(room string) string {
	v.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		status, m, _ := v.do("GET", "/queue/position?room="+room, nil, "")
		if status != http.StatusOK {
			v.t.Fatalf("position: %d %v", status, m)
		}
		if m["status"] == "READY" {
			token, _ := m["entryToken"].(string)
			return token
		}
		if m["status"] != "WAITING" && m["status"] != "PROCESSING" {
			v.t.Fatalf("position: %v", m)
		}
		poll, _ := m["pollAfterMs"].(float64)
		time.Sleep(time.Duration(min(poll, 500)) * time.Millisecond)
	}
	v.t.Fatal("not READY within 20 s")
	return ""
}

// limiterBitesPastItsBurst: a fresh identity's requests in a quick row are
// all answered until its bucket (CLIENT_BURST, default 20) is spent, then
// 429 rate_limited with Retry-After; the refill at CLIENT_RATE_PER_SEC
// (default 5) lets at most a few more through meanwhile.
func limiterBitesPastItsBurst(t *testing.T, v *modeVisitor, room string) {
	t.Helper()
	start := time.Now()
	allowed := 0
	if status, m, _ := v.do("POST", "/queue/enter?room="+room, nil, ""); status/100 != 2 {
		t.Fatalf("enter: %d %v", status, m)
	}
	allowed++
	v.receipt = "" // position by identity: the receipt would be a second way in
	// Polls of a room where the caller holds no place: the store answers
	// them (NOT_IN_QUEUE), and the limiter guards the store. A waiting
	// caller's polls carry its place and are answered from the room's
	// view, which costs the store nothing and takes no tokens (API.md).
	elsewhere := room + "-elsewhere"
	for i := 0; i < waitroom.DefaultClientBurst+10; i++ {
		status, m, h := v.do("GET", "/queue/position?room="+elsewhere, nil, "")
		if status == http.StatusTooManyRequests {
			if m["error"] != "rate_limited" || h.Get("Retry-After") == "" {
				t.Fatalf("429 %v, Retry-After %q", m, h.Get("Retry-After"))
			}
			break
		}
		if status != http.StatusOK {
			t.Fatalf("position %d: %d %v", i, status, m)
		}
		allowed++
	}
	refill := int(waitroom.DefaultClientRatePerSec*time.Since(start).Seconds()) + 1
	if allowed < waitroom.DefaultClientBurst || allowed > waitroom.DefaultClientBurst+refill {
		t.Fatalf("%d requests answered before the first 429; want the burst of %d (plus at most %d refilled)", allowed, waitroom.DefaultClientBurst, refill)
	}
}
