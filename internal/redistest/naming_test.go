package redistest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// The tests that go through the store's scripts run on every engine
// (Each). A test that takes one engine only, or a cluster, says so in its
// name, so that a reader of the test list sees what the embedded store
// skips: this reads the packages' test files and fails on a test (or
// helper) that picks its engine without naming it.
func TestSingleEngineTestsSaySoInTheirNames(t *testing.T) {
	picks := map[string]string{"Start": "RedisServer", "StartCluster": "Cluster", "RedisServer": "RedisServer", "EmbeddedEngine": "Embedded"}
	// Tests that start every store themselves and name it in their subtests.
	everyStore := map[string]bool{"TestModes": true}
	for _, dir := range []string{"../../redisstore", "../../awslambda", "../../localrun"} {
		files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, file := range files {
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || everyStore[fn.Name.Name] || strings.HasPrefix(fn.Name.Name, "Benchmark") || strings.HasPrefix(fn.Name.Name, "Fuzz") {
					continue
				}
				ast.Inspect(fn, func(n ast.Node) bool {
					sel, ok := n.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "redistest" {
						if word, picked := picks[sel.Sel.Name]; picked && !strings.Contains(fn.Name.Name, word) {
							t.Errorf("%s: %s uses redistest.%s: run it on every engine (redistest.Each), or put %q in its name", file, fn.Name.Name, sel.Sel.Name, word)
						}
					}
					return true
				})
			}
		}
	}
}
