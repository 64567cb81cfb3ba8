package envconfig

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// docVariable is a row of docs/API.md's table of variables.
type docVariable struct{ def, text string }

// docVariables reads docs/API.md's table of variables: rows whose first
// cell is one `NAME` in capitals.
func docVariables(t *testing.T) map[string]docVariable {
	t.Helper()
	b, err := os.ReadFile("../docs/API.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([A-Z][A-Z0-9_]+)` \\| (.*?) \\| (.*) \\|$")
	out := map[string]docVariable{}
	for _, line := range strings.Split(string(b), "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			out[m[1]] = docVariable{def: m[2], text: m[3]}
		}
	}
	return out
}

// codeVariables is every variable LoadConfig reads, with what the code says
// of it, under the local runner's defaults and the functions', with the
// variables set that make it read the ones it reads only then.
func codeVariables(t *testing.T) map[string][]varSpec {
	t.Helper()
	specs := map[string][]varSpec{}
	set := map[string]string{"REDIS_IAM_USER": "u", "INTAKE": "broker", "CHALLENGE": "pow"}
	for _, env := range []map[string]string{{}, set} {
		for _, d := range []Defaults{Local, Function} {
			r := envReader{lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok }, specs: specs}
			_, _ = loadConfig(r, d) // the errors of a partial environment do not matter here
		}
	}
	return specs
}

// The table of variables in docs/API.md is the code's: every variable the
// code reads has a row and every row a variable the code reads; a default
// the code has is written in its row's default cell as `value`, and a range
// the row states ("1 to 86400") is the code's.
func TestVariablesTableMatchesCode(t *testing.T) {
	doc, code := docVariables(t), codeVariables(t)
	var names []string
	for name := range code {
		names = append(names, name)
	}
	sort.Strings(names)
	rangeOf := regexp.MustCompile(`(-?[0-9][0-9.]*) to (-?[0-9][0-9.]*)`)
	for _, name := range names {
		row, ok := doc[name]
		if !ok {
			t.Errorf("%s is read by LoadConfig but has no row in docs/API.md's variables", name)
			continue
		}
		for _, s := range code[name] {
			m := rangeOf.FindStringSubmatch(row.text)
			switch {
			case s.def != "" && !strings.Contains(row.def, "`"+s.def+"`"):
				t.Errorf("%s: the code's default is %s; docs/API.md says %q", name, s.def, row.def)
			case s.min != "" && m == nil:
				t.Errorf("%s: the code takes %s to %s; docs/API.md states no range", name, s.min, s.max)
			case s.min != "" && (m[1] != s.min || m[2] != s.max):
				t.Errorf("%s: the code takes %s to %s; docs/API.md says %s to %s", name, s.min, s.max, m[1], m[2])
			default:
				continue
			}
			break
		}
	}
	for name := range doc {
		if _, ok := code[name]; !ok {
			t.Errorf("docs/API.md has a row for %s, which LoadConfig never reads", name)
		}
	}
}
