package redisstore

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
)

// Every script names its keys at its top (local settingsKey = KEYS[1]),
// and the Go side passes them in that order: a key passed in another
// place than the script names would read or write the wrong key, which
// most tests would only see as a wrong answer somewhere else.
func TestScriptsNameTheirKeysInTheOrderGoPassesThem(t *testing.T) {
	k, user := roomKeys("r"), "u"
	challenge := []string{k.challenge("n")}
	passed := map[string][]string{
		"enter.lua":        k.enterKeys(user, challenge),
		"position.lua":     k.positionKeys(user),
		"accept.lua":       k.acceptKeys(challenge),
		"admit.lua":        k.admitKeys(),
		"status.lua":       k.statusKeys(),
		"settings_set.lua": k.settingsSetKeys(),
		"front.lua":        k.frontKeys(),
		"adapt.lua":        k.adaptKeys(),
		"order_begin.lua":  k.orderBeginKeys(user, "i"),
		"order_commit.lua": k.orderCommitKeys(user, "i"),
		"unlock.lua":       k.unlockKeys(user),
	}
	// Each key by the name of the roomKeys method that makes it.
	names := map[string]string{k.settings(): "settings", k.line(): "line", k.account(user): "account",
		k.batches(): "batches", k.unclaimed(): "unclaimed", k.mark(user): "mark", k.marks(): "marks", k.budget(): "budget", k.live(): "live", k.admits(): "admits",
		k.downstream(): "downstream", k.control(): "control", k.record(user): "record", k.lock(user): "lock",
		k.answer(user, "i"): "answer", k.failed(user): "failed", k.challenge("n"): "challenge", k.applied(user): "applied"}
	for _, name := range Scripts() {
		if name == "apply.lua" { // enter.lua's keys, and its own last (apply_head.lua)
			continue
		}
		keys, ok := passed[name]
		if !ok {
			t.Errorf("%s: no key list in this test: declare its keys (roomKeys.<script>Keys) and add it", name)
			continue
		}
		var want []string
		for _, key := range keys {
			want = append(want, names[key]+"Key")
		}
		if got := namedKeys(t, name); !slices.Equal(got, want) {
			t.Errorf("%s names its keys %v, Go passes %v", name, got, want)
		}
	}
}

var namedKey = regexp.MustCompile(`(?m)^local (\w+) = KEYS\[(\d+)\]`)

// namedKeys are the names a script's own file gives KEYS[1], KEYS[2], ...
// at its top, in order.
func namedKeys(t *testing.T, file string) []string {
	text, err := luaFiles.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i, m := range namedKey.FindAllSubmatch(text, -1) {
		if n, _ := strconv.Atoi(string(m[2])); n != i+1 {
			t.Errorf("%s names KEYS[%d] where KEYS[%d] is due", file, n, i+1)
		}
		names = append(names, string(m[1]))
	}
	return names
}

// The parts whose functions get the store's constants at a marker line
// (room.lua's roomOf, ratelimit.lua's rateLimit) make no script without
// them: a script built without withConsts fails when the package loads,
// not at the first room without stored settings or limited call.
func TestAScriptWithoutItsConstantsIsRefused(t *testing.T) {
	refused := func(build func()) (panicked bool) {
		defer func() { panicked = recover() != nil }()
		build()
		return false
	}
	if !refused(func() { newScript(source("", roomParts...)) }) {
		t.Error("room.lua without roomOf's constants made a script")
	}
	if !refused(func() { newScript(withConsts(source("", visitParts...), "", roomsArgHead)) }) {
		t.Error("ratelimit.lua without rateLimit's constants made a script")
	}
	if refused(func() { newScript(withConsts(source("", visitParts...), limitsLine(waitroom.Limits{}), roomsArgHead)) }) {
		t.Error("the parts with both lines were refused")
	}
	for name, s := range sources {
		if strings.Contains(s.src, markerPrefix) {
			t.Errorf("%s keeps a marker", name)
		}
	}
}
