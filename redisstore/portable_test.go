package redisstore_test

import (
	"testing"

	"github.com/waitroom/waitroom/internal/luacheck"
	"github.com/waitroom/waitroom/redisstore"
)

// Every script, as the store loads it, runs alike on redis-server, Valkey and the embedded store:
// none uses a construct the engines evaluate differently (luacheck lists
// them, each shown on both engines by its own tests).
func TestScriptsArePortable(t *testing.T) {
	names := redisstore.Scripts()
	if len(names) < 9 {
		t.Fatalf("scripts: %v", names)
	}
	for _, f := range names {
		src, _ := redisstore.Source(f)
		found, err := luacheck.Check(src)
		if err != nil {
			t.Errorf("%s: %v", f, err)
		}
		for _, x := range found {
			t.Errorf("%s:%d: %s: %s", f, x.Line, x.Rule, x.Text)
		}
	}
}
