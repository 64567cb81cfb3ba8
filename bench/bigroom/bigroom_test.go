package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/bench/internal/fnstore"
	"github.com/waitroom/waitroom/bench/spike/sim"
)

func TestCompareSortsWhatEachRoomHolds(t *testing.T) {
	entered := map[string]string{bucketRecords: "a:0 f=1,a:1 g=2", bucketLine: "2: the room's counter's birth", "marks": "x", "settings front": "1"}
	appended := map[string]string{bucketRecords: "a:0 f=1,a:1 g=3", bucketLine: "2: the room's counter's birth", "extra": "y", "settings front": "1"}
	same, onlyEnter, onlyAppend, differ := compare(entered, appended)
	for name, got := range map[string][]string{"same": same, "enter only": onlyEnter, "append only": onlyAppend, "differ": differ} {
		want := map[string][]string{"same": {bucketLine, "settings front"}, "enter only": {"marks"}, "append only": {"extra"},
			"differ": {bucketRecords}}[name]
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

// A figure of another measure is read when its file holds it, and
// otherwise says why it is not there: never a number of this tool's own.
func TestOtherMeasuresAreReadOrNotMeasured(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "redis-cost-results.json")
	if f := pollCommands(path); f.Measured || !strings.Contains(f.Note, "absent") {
		t.Errorf("no file: %+v", f)
	}
	if err := os.WriteFile(path, []byte(`{"ops":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if f := pollCommands(path); f.Measured || !strings.Contains(f.Note, "holds no httpPoll.commandsPerPoll") {
		t.Errorf("no field: %+v", f)
	}
	if err := os.WriteFile(path, []byte(`{"httpPoll":{"commandsPerPoll":0.04,"ahead":1000,"paced":{"pollsPerSec":200,"commandsPerPoll":0.142}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if f := pollCommands(path); !f.Measured || f.Value != 0.04 || !strings.Contains(f.Note, "behind 1000 users; 0.142 when the same polls come 200 a second") {
		t.Errorf("the field: %+v", f)
	}
	page := filepath.Join(dir, "page-calls-results.json")
	if err := os.WriteFile(page, []byte(`{"wait30min":{"functionCalls":3},"summary":{"longestWaitSeconds":221.1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if f := pageCalls(page); !f.Measured || f.Value != 3 || !strings.Contains(f.Note, "waits of up to 221 s") {
		t.Errorf("page calls: %+v", f)
	}
}

func TestVisitorsAreAccountsAndAnonymousAlternately(t *testing.T) {
	seen := map[string]bool{}
	for i := range 1000 {
		v, err := visitor(i)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case i%2 == 0 && (!strings.HasPrefix(v, "a:") || len(v) != 38):
			t.Fatalf("visitor %d: %q, want an account: a: and 36 characters", i, v)
		case i%2 == 1 && (!strings.HasPrefix(v, "v-") || len(v) != 24):
			t.Fatalf("visitor %d: %q, want an anonymous visitor: v- and 22 characters", i, v)
		case seen[v]:
			t.Fatalf("visitor %d: %q twice", i, v)
		}
		seen[v] = true
	}
}

// The fill writes what enter.lua writes for both kinds: an account's
// record in its bucket (its number, the bucket's line and TTL), and for
// an anonymous visitor nothing but the counter moving past its number
// (checkAppend, against real enters).
func TestFillWritesWhatEnterWritesRedisServer(t *testing.T) {
	cfg, err := fnstore.Config()
	if err != nil {
		t.Fatal(err)
	}
	var f sim.BigRoomFill
	if err := checkAppend(context.Background(), cfg, &f); err != nil {
		t.Fatal(err)
	}
	t.Logf("same: %q; by presence: %q", f.Same, f.ByPresence)
	if len(f.Differ) > 0 || len(f.AppendOnly) > 0 || len(f.EnterOnly) > 0 {
		t.Fatalf("differ %q, the fill alone %q, enter alone %q", f.Differ, f.AppendOnly, f.EnterOnly)
	}
	for _, want := range []string{bucketRecords, bucketLine, bucketTTL, "settings next", "settings front"} {
		if !slices.Contains(f.Same, want) {
			t.Errorf("%q not compared alike: same %q", want, f.Same)
		}
	}
}
