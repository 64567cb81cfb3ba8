package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/runnertest"

	"github.com/waitroom/waitroom/internal/openapitest"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/localrun"
)

const token = "ctl-test-admin-token-0123456789"

// startRunner runs the local runner on a real redis-server with rooms closed
// (OPEN_ROOMS=false), as the stack runs.
func startRunner(t *testing.T) *localrun.Runner {
	t.Helper()
	srv := redistest.Start(t)
	env := map[string]string{"REDIS_URL": srv.URL(), "ADDR": "127.0.0.1:0", "ADMIN_TOKEN": token, "OPEN_ROOMS": "false"}
	return runnertest.Start(t, runnertest.Config(t, env))
}

type result struct {
	code           int
	stdout, stderr string
}

// ctl runs one waitroomctl command line against url; every exchange is
// checked against docs/openapi.yaml.
func ctl(t *testing.T, ctx context.Context, url string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	vars := map[string]string{"WAITROOM_URL": url, "WAITROOM_ADMIN_TOKEN": token}
	code := run(ctx, args, env{stdout: &out, stderr: &errOut, getenv: func(k string) string { return vars[k] },
		http: openapitest.Client(t), every: 200 * time.Millisecond})
	return result{code, out.String(), errOut.String()}
}

func enter(t *testing.T, base, room, user string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/queue/enter?room="+room, nil)
	req.Header.Set("X-User-Id", user)
	resp, err := openapitest.Client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return m
}

func status(t *testing.T, ctx context.Context, url, room string) roomStatus {
	t.Helper()
	r := ctl(t, ctx, url, "--json", "get", room)
	var s roomStatus
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &s) != nil {
		t.Fatalf("get %s: %+v", room, r)
	}
	return s
}

// A whole sale from waitroomctl against a running local runner.
func TestSaleFromWaitroomctl(t *testing.T) {
	ctx := context.Background()
	r := startRunner(t)
	if res := ctl(t, ctx, r.URL, "rooms"); res.code != 0 || !strings.HasPrefix(res.stdout, "ROOM") {
		t.Fatalf("rooms: %+v", res)
	}
	if m := enter(t, r.URL, "sale", "early"); m["error"] != "room_not_found" {
		t.Fatalf("a room nobody created: %v", m)
	}
	res := ctl(t, ctx, r.URL, "set", "sale", "--rate", "2.5", "--max-active", "4")
	if res.code != 0 || !strings.Contains(res.stdout, "room sale: open") || !strings.Contains(res.stdout, "rate 2.5/s") {
		t.Fatalf("set creates: %+v", res)
	}
	for i := range 12 {
		enter(t, r.URL, "sale", fmt.Sprintf("u%02d", i))
	}
	time.Sleep(2 * time.Second) // admission runs in the runner
	s := status(t, ctx, r.URL, "sale")
	if s.ActiveTokens != 4 || s.Waiting != 8 {
		t.Fatalf("maxActive 4 holds admission at 4 live tokens: %+v", s)
	}
	if res := ctl(t, ctx, r.URL, "pause", "sale"); res.code != 0 || !strings.Contains(res.stdout, "room sale: paused") {
		t.Fatalf("pause: %+v", res)
	}
	if res := ctl(t, ctx, r.URL, "set", "sale", "--max-active", "0", "--rate", "100"); res.code != 0 || !strings.Contains(res.stdout, "max active no cap") {
		t.Fatalf("set changes only the given fields: %+v", res)
	}
	time.Sleep(300 * time.Millisecond)
	if s := status(t, ctx, r.URL, "sale"); s.Waiting != 8 || s.State != "paused" {
		t.Fatalf("a paused room admits nobody: %+v", s)
	}
	if res := ctl(t, ctx, r.URL, "resume", "sale"); res.code != 0 || !strings.Contains(res.stdout, "room sale: open") {
		t.Fatalf("resume: %+v", res)
	}
	time.Sleep(500 * time.Millisecond)
	if s := status(t, ctx, r.URL, "sale"); s.Waiting != 0 || s.ActiveTokens != 12 || s.AdmittedLastMinute != 12 {
		t.Fatalf("resumed at 100/s, no cap: %+v", s)
	}
	opens := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if res := ctl(t, ctx, r.URL, "set", "launch", "--opens-at", opens); res.code != 0 || !strings.Contains(res.stdout, "room launch: prequeue") {
		t.Fatalf("scheduled opening: %+v", res)
	}
	if m := enter(t, r.URL, "launch", "fan"); m["status"] != "PREQUEUE" || m["opensAt"] != opens {
		t.Fatalf("pre-queue: %v", m)
	}
	before := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	if res := ctl(t, ctx, r.URL, "set", "later", "--opens-at", "+2h"); res.code != 0 || !strings.Contains(res.stdout, "room later: prequeue") {
		t.Fatalf("opening in two hours: %+v", res)
	}
	if at := status(t, ctx, r.URL, "later").OpensAt; at == nil || at.Before(before) || at.After(time.Now().Add(2*time.Hour)) {
		t.Fatalf("--opens-at +2h stored %v, want two hours from now", at)
	}
	res = ctl(t, ctx, r.URL, "rooms")
	if res.code != 0 || !strings.Contains(res.stdout, "launch  prequeue") || !strings.Contains(res.stdout, "sale    open") {
		t.Fatalf("rooms:\n%s", res.stdout)
	}

	watchCtx, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
	defer cancel()
	res = ctl(t, watchCtx, r.URL, "watch")
	if res.code != 0 || strings.Count(res.stdout, "\x1b[2J") < 3 || !strings.Contains(res.stdout, "sale") || !strings.Contains(res.stdout, "launch") {
		t.Fatalf("watch draws a frame every tick: %+v", res)
	}
}

// Every failure is one line on stderr and a non-zero status.
func TestErrorsAreOneLine(t *testing.T) {
	ctx := context.Background()
	r := startRunner(t)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"get", "nope"}, exitFailed, "room_not_found, HTTP 404"},
		{[]string{"--token", "wrong-token-0123456789", "rooms"}, exitFailed, "unauthenticated, HTTP 401"},
		{[]string{"set", "sale", "--capacity", "0"}, exitFailed, "capacity must be"},
		{[]string{"set", "sale", "--rate", "-1"}, exitFailed, "ratePerSec must be"},
		{[]string{"set", "sale", "--opens-at", "midnight"}, exitUsage, "RFC 3339"},
		{[]string{"set", "sale", "--opens-at", "+-1h"}, exitUsage, "positive Go duration"},
		{[]string{"set", "sale"}, exitUsage, "at least one of"},
		{[]string{"pause", "sale", "--rate", "3"}, exitUsage, "--rate only goes with set"},
		{[]string{"explode"}, exitUsage, "unknown command"},
		{[]string{"get"}, exitUsage, "usage: waitroomctl get ROOM"},
		{[]string{"--url", "http://127.0.0.1:1", "rooms"}, exitFailed, "cannot reach http://127.0.0.1:1"},
		{[]string{"--url", "ftp://x", "rooms"}, exitFailed, "not an http(s) URL"},
		{[]string{"--bogus", "rooms"}, exitUsage, "flag provided but not defined: -bogus"},
		{[]string{"set", "sale", "--rate", "fast"}, exitUsage, "invalid value \"fast\" for flag -rate"},
	} {
		res := ctl(t, ctx, r.URL, c.args...)
		if res.code != c.code || !strings.Contains(res.stderr, c.want) || strings.Count(res.stderr, "\n") != 1 || res.stdout != "" {
			t.Errorf("%v: code %d, stderr %q, want %d and %q", c.args, res.code, res.stderr, c.code, c.want)
		}
	}
}

// --aws signs with SigV4 for execute-api from the default credential chain.
func TestAWSSigning(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	var mu sync.Mutex
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Clone(context.Background())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"rooms":[]}`))
	}))
	defer srv.Close()
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"--aws", "--url", srv.URL, "rooms"},
		env{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }, http: srv.Client()})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	mu.Lock()
	defer mu.Unlock()
	auth := got.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || !strings.Contains(auth, "/eu-west-1/execute-api/aws4_request") ||
		got.Header.Get("X-Amz-Date") == "" {
		t.Fatalf("not a SigV4 request: %q", auth)
	}
}

func TestFrame(t *testing.T) {
	rooms := []roomStatus{{Room: "sale", State: "open", RatePerSec: 40, Waiting: 4800, AdmittedPerSec: 20, ActiveTokens: 12, MaxActive: 50, OldestWaitSeconds: 125}}
	f := frame("http://x", time.Date(2026, 11, 27, 0, 0, 5, 0, time.UTC), rooms, map[string][]float64{"sale": {0, 20, 40}}, nil, nil)
	for _, want := range []string{"00:00:05", "sale", "20.0 of 40", "[#####.....]", "12/50", "2m05s", "2m00s", "▁▅█"} {
		if !strings.Contains(f, want) {
			t.Errorf("frame lacks %q:\n%s", want, f)
		}
	}
}

// An adaptive room's frame: admitted against the effective rate, and the
// effective rate moving within its bounds, with the order API's second.
func TestFrameAdaptive(t *testing.T) {
	p95, errs := int64(231), 0.025
	rooms := []roomStatus{{Room: "sale", State: "open", RatePerSec: 100, EffectiveRatePerSec: 50, Waiting: 600, AdmittedPerSec: 50,
		Adaptive: &adaptiveSetting{TargetP95Ms: 250, MinRatePerSec: 10, MaxRatePerSec: 200}, DownstreamP95Ms: &p95, DownstreamErrorRate: &errs},
		{Room: "fixed", State: "open", RatePerSec: 40, EffectiveRatePerSec: 40}}
	f := frame("http://x", time.Now(), rooms, nil, map[string][]float64{"sale": {200, 100, 50}}, nil)
	for _, want := range []string{"50.0 of 50", "[##########]", "ADAPTIVE", "50.0/s (10 to 200)", "[###.......]", "█▅▃", "p95 231ms errors 2.5%", "12s"} {
		if !strings.Contains(f, want) {
			t.Errorf("frame lacks %q:\n%s", want, f)
		}
	}
	if strings.Count(f, "fixed") != 1 {
		t.Errorf("a fixed-rate room has no adaptive row:\n%s", f)
	}
}

// Adaptive admission from waitroomctl: the three bounds turn it on, one
// alone changes that bound, --adaptive off turns it off; get shows it.
func TestAdaptiveFromWaitroomctl(t *testing.T) {
	ctx := context.Background()
	r := startRunner(t)
	if res := ctl(t, ctx, r.URL, "set", "sale", "--rate", "100", "--min-rate", "5"); res.code != 2 || !strings.Contains(res.stderr, "not adaptive") {
		t.Fatalf("one bound of a room that is not adaptive: %+v", res)
	}
	res := ctl(t, ctx, r.URL, "set", "sale", "--rate", "500", "--adaptive-target-p95", "250ms", "--min-rate", "10", "--max-rate", "200")
	if res.code != 0 || !strings.Contains(res.stdout, "adaptive  target p95 250ms  rate 10 to 200/s  effective rate 200/s") ||
		!strings.Contains(res.stdout, "order API no order in the last second") {
		t.Fatalf("on: %+v", res)
	}
	if s := status(t, ctx, r.URL, "sale"); s.Adaptive == nil || *s.Adaptive != (adaptiveSetting{250, 10, 200}) || s.EffectiveRatePerSec != 200 || s.RatePerSec != 500 {
		t.Fatalf("stored: %+v", s)
	}
	if res := ctl(t, ctx, r.URL, "set", "sale", "--max-rate", "50"); res.code != 0 || !strings.Contains(res.stdout, "rate 10 to 50/s  effective rate 50/s") {
		t.Fatalf("one bound: %+v", res)
	}
	if res := ctl(t, ctx, r.URL, "set", "sale", "--max-rate", "1"); res.code != 1 || !strings.Contains(res.stderr, "adaptive.minRatePerSec") {
		t.Fatalf("the server names the field: %+v", res)
	}
	for _, bad := range [][]string{{"--adaptive", "on"}, {"--adaptive", "off", "--min-rate", "3"}, {"--adaptive-target-p95", "fast"}} {
		if res := ctl(t, ctx, r.URL, append([]string{"set", "sale"}, bad...)...); res.code != 2 {
			t.Fatalf("%v: %+v", bad, res)
		}
	}
	if res := ctl(t, ctx, r.URL, "set", "sale", "--adaptive", "off"); res.code != 0 || !strings.Contains(res.stdout, "adaptive  off  effective rate 500/s") {
		t.Fatalf("off: %+v", res)
	}
	if res := ctl(t, ctx, r.URL, "get", "sale", "--min-rate", "3"); res.code != 2 {
		t.Fatalf("--min-rate with get: %+v", res)
	}
}

// Issue 22 from waitroomctl: a message to the line, close mid-sale with a
// message (the line is told CLOSED, newcomers refused), reopen.
func TestCloseFromWaitroomctl(t *testing.T) {
	ctx := context.Background()
	r := startRunner(t)
	if res := ctl(t, ctx, r.URL, "set", "drop", "--rate", "0.001", "--message", "Sizes 40-44 are gone", "--title", "Kim's Shoes", "--brand-color", "#aa3300"); res.code != 0 ||
		!strings.Contains(res.stdout, `message   "Sizes 40-44 are gone"`) || !strings.Contains(res.stdout, `title "Kim's Shoes"  colour #aa3300`) {
		t.Fatalf("set --message --title --brand-color: %+v", res)
	}
	enter(t, r.URL, "drop", "first") // admitted by the first batch
	if m := enter(t, r.URL, "drop", "second"); m["message"] != "Sizes 40-44 are gone" || m["title"] != "Kim's Shoes" {
		t.Fatalf("enter: %v", m)
	}
	if res := ctl(t, ctx, r.URL, "set", "drop", "--message", ""); res.code != 0 || strings.Contains(res.stdout, "message ") {
		t.Fatalf("--message '' clears it: %+v", res)
	}
	if res := ctl(t, ctx, r.URL, "close", "drop", "--message", "Sold out!"); res.code != 0 || !strings.Contains(res.stdout, "room drop: closed") {
		t.Fatalf("close: %+v", res)
	}
	if m := enter(t, r.URL, "drop", "late"); m["error"] != "room_closed" || m["message"] != "Sold out!" {
		t.Fatalf("a newcomer of a closed room: %v", m)
	}
	if res := ctl(t, ctx, r.URL, "close", "drop", "--rate", "3"); res.code != 2 {
		t.Fatalf("close --rate: %+v", res)
	}
	if res := ctl(t, ctx, r.URL, "close", "nowhere"); res.code != 1 || !strings.Contains(res.stderr, "room_not_found") {
		t.Fatalf("close of a room that does not exist: %+v", res)
	}
	if res := ctl(t, ctx, r.URL, "reopen", "drop", "--message", ""); res.code != 0 || !strings.Contains(res.stdout, "room drop: open") {
		t.Fatalf("reopen: %+v", res)
	}
	// The line released, the reopened room is idle: the enter is admitted at once.
	if m := enter(t, r.URL, "drop", "late"); m["status"] != "READY" {
		t.Fatalf("enter after reopening (a fresh, empty line): %v", m)
	}
}
