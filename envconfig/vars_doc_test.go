package envconfig

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// tableVariables is Variables by name.
func tableVariables() map[string]Variable {
	out := map[string]Variable{}
	for _, v := range Variables {
		out[v.Name] = v
	}
	return out
}

// codeVariables is every variable Load reads, with what the code says
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

// The table of variables is the code's: every variable Load reads has a
// row and every row a variable Load reads; a default the code has is
// written in its row's default cell as `value`, and a range the row states
// ("1 to 86400") is the code's.
func TestVariablesTableMatchesCode(t *testing.T) {
	doc, code := tableVariables(), codeVariables(t)
	var names []string
	for name := range code {
		names = append(names, name)
	}
	sort.Strings(names)
	rangeOf := regexp.MustCompile(`(-?[0-9][0-9.]*) to (-?[0-9][0-9.]*)`)
	for _, name := range names {
		row, ok := doc[name]
		if !ok {
			t.Errorf("%s is read by Load but has no row in Variables", name)
			continue
		}
		for _, s := range code[name] {
			m := rangeOf.FindStringSubmatch(row.Meaning)
			switch {
			case s.def != "" && !strings.Contains(row.Default, "`"+s.def+"`"):
				t.Errorf("%s: the code's default is %s; its row says %q", name, s.def, row.Default)
			case s.min != "" && m == nil:
				t.Errorf("%s: the code takes %s to %s; its row states no range", name, s.min, s.max)
			case s.min != "" && (m[1] != s.min || m[2] != s.max):
				t.Errorf("%s: the code takes %s to %s; its row says %s to %s", name, s.min, s.max, m[1], m[2])
			default:
				continue
			}
			break
		}
	}
	for name := range doc {
		if _, ok := code[name]; !ok {
			t.Errorf("Variables has a row for %s, which Load never reads", name)
		}
	}
}

// docs/API.md's table of variables is Variables, rendered:
// WAITROOM_UPDATE_DOCS=1 rewrites it (make variables-doc).
func TestVariablesTableIsGenerated(t *testing.T) {
	const path, begin, end = "../docs/API.md", "<!-- variables: written from envconfig.Variables by make variables-doc -->\n", "\n<!-- /variables -->"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no variables block (%q … %q)", path, begin, end)
	}
	want := doc[:i+len(begin)] + RenderVariables() + doc[j:]
	if want == doc {
		return
	}
	if os.Getenv("WAITROOM_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's table of variables differs from envconfig.Variables: run make variables-doc", path)
}
