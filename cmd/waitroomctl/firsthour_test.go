package main

import (
	"context"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/runnertest"
)

// Issue 34: the usage text puts each description under its command, and
// asking for it (-h, --help, help) prints it on stdout and succeeds; no
// command at all is a usage error (2) with the text on stderr.
func TestUsageAndHelp(t *testing.T) {
	ctx := context.Background()
	set := strings.Index(usage, "  set ROOM")
	created := strings.Index(usage, "create the room, or change only the given settings")
	closing := strings.Index(usage, "  close ROOM")
	if set < 0 || created < set || created > closing {
		t.Errorf("set's description is not under set:\n%s", usage)
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"set", "tv", "--help"}} {
		res := ctl(t, ctx, "http://127.0.0.1:1", args...)
		if res.code != 0 || res.stdout != usage || res.stderr != "" {
			t.Errorf("%v: code %d, stdout %.40q, stderr %q; want 0 and the usage on stdout", args, res.code, res.stdout, res.stderr)
		}
	}
	if res := ctl(t, ctx, "http://127.0.0.1:1"); res.code != exitUsage || res.stderr != usage || res.stdout != "" {
		t.Errorf("no command: code %d, stderr %.40q", res.code, res.stderr)
	}
}

// Issue 34: with OPEN_ROOMS=true (make run) visitors use rooms nobody
// created, which are gone once nobody waits or holds a token there; close
// (and get, pause, resume, reopen) on such a room name the command that
// creates it, not the API's PUT. And reopen without --message drops the
// sold-out message; with --message it sets the new one.
func TestCloseAVisitorsRoomAndReopen(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	r := runnertest.Start(t, runnertest.Config(t, map[string]string{"REDIS_URL": srv.URL(), "ADDR": "127.0.0.1:0", "ADMIN_TOKEN": token, "OPEN_ROOMS": "true"}))
	for _, cmd := range []string{"close", "get", "pause", "resume", "reopen"} {
		res := ctl(t, ctx, r.URL, cmd, "tv")
		if res.code != exitFailed || !strings.Contains(res.stderr, "waitroomctl set tv") || strings.Contains(res.stderr, "PUT") || !strings.Contains(res.stderr, "room_not_found") {
			t.Errorf("%s of a visitors' room: code %d, stderr %q; want it to name waitroomctl set tv", cmd, res.code, res.stderr)
		}
	}
	if res := ctl(t, ctx, r.URL, "set", "tv", "--rate", "100"); res.code != 0 {
		t.Fatalf("set: %+v", res)
	}
	if res := ctl(t, ctx, r.URL, "close", "tv", "--message", "Sold out — all 500 TVs are gone."); res.code != 0 {
		t.Fatalf("close: %+v", res)
	}
	if res := ctl(t, ctx, r.URL, "reopen", "tv"); res.code != 0 || strings.Contains(res.stdout, "Sold out") {
		t.Fatalf("reopen without --message keeps the sold-out message: %+v", res)
	}
	if m := enter(t, r.URL, "tv", "bob"); m["status"] != "READY" || m["message"] != nil {
		t.Errorf("enter after reopening: %v; want READY without a message", m)
	}
	ctl(t, ctx, r.URL, "close", "tv", "--message", "Sold out.")
	if res := ctl(t, ctx, r.URL, "reopen", "tv", "--message", "Restocked: 200 more."); res.code != 0 || !strings.Contains(res.stdout, "Restocked: 200 more.") {
		t.Errorf("reopen --message: %+v", res)
	}
}
