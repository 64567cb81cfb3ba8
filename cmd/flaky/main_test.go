package main

import (
	"strings"
	"testing"
)

// A go test -json stream of two runs (-count=2): TestA passes twice,
// TestB fails once with its message, then passes; TestC's subtest fails
// both times; TestD is skipped; another package times out outside any
// test's report.
const stream = `{"Action":"start","Package":"ex/a"}
{"Action":"run","Package":"ex/a","Test":"TestA"}
{"Action":"output","Package":"ex/a","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"pass","Package":"ex/a","Test":"TestA","Elapsed":0.01}
{"Action":"run","Package":"ex/a","Test":"TestB"}
{"Action":"output","Package":"ex/a","Test":"TestB","Output":"=== RUN   TestB\n"}
{"Action":"output","Package":"ex/a","Test":"TestB","Output":"    b_test.go:9: flood: 9 allowed, 31 limited (want 10, 30)\n"}
{"Action":"output","Package":"ex/a","Test":"TestB","Output":"--- FAIL: TestB (0.20s)\n"}
{"Action":"fail","Package":"ex/a","Test":"TestB","Elapsed":0.2}
{"Action":"run","Package":"ex/a","Test":"TestC"}
{"Action":"run","Package":"ex/a","Test":"TestC/embedded"}
{"Action":"output","Package":"ex/a","Test":"TestC/embedded","Output":"    c_test.go:3: first\n"}
{"Action":"fail","Package":"ex/a","Test":"TestC/embedded","Elapsed":0}
{"Action":"fail","Package":"ex/a","Test":"TestC","Elapsed":0}
{"Action":"run","Package":"ex/a","Test":"TestD"}
{"Action":"output","Package":"ex/a","Test":"TestD","Output":"    d_test.go:2: needs chromium\n"}
{"Action":"skip","Package":"ex/a","Test":"TestD","Elapsed":0}
{"Action":"run","Package":"ex/a","Test":"TestA"}
{"Action":"pass","Package":"ex/a","Test":"TestA","Elapsed":0.01}
{"Action":"run","Package":"ex/a","Test":"TestB"}
{"Action":"output","Package":"ex/a","Test":"TestB","Output":"=== RUN   TestB\n"}
{"Action":"pass","Package":"ex/a","Test":"TestB","Elapsed":0.2}
{"Action":"run","Package":"ex/a","Test":"TestC"}
{"Action":"run","Package":"ex/a","Test":"TestC/embedded"}
{"Action":"output","Package":"ex/a","Test":"TestC/embedded","Output":"    c_test.go:3: second\n"}
{"Action":"fail","Package":"ex/a","Test":"TestC/embedded","Elapsed":0}
{"Action":"fail","Package":"ex/a","Test":"TestC","Elapsed":0}
{"Action":"output","Package":"ex/a","Output":"FAIL\n"}
{"Action":"fail","Package":"ex/a","Elapsed":0.5}
{"Action":"start","Package":"ex/b"}
{"Action":"output","Package":"ex/b","Output":"panic: test timed out after 1m0s\n"}
{"Action":"fail","Package":"ex/b","Elapsed":60}
`

func TestParseCountsRunsAndKeepsTheFirstFailure(t *testing.T) {
	results, err := parse(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]result{}
	for _, r := range results {
		got[r.Package+" "+r.Test] = r
	}
	for name, want := range map[string]result{
		"ex/a TestA":          {Runs: 2},
		"ex/a TestB":          {Runs: 2, Fails: 1, First: "=== RUN   TestB\n    b_test.go:9: flood: 9 allowed, 31 limited (want 10, 30)\n--- FAIL: TestB (0.20s)"},
		"ex/a TestC":          {Runs: 2, Fails: 2},
		"ex/a TestC/embedded": {Runs: 2, Fails: 2, First: "    c_test.go:3: first"},
		"ex/a ":               {Runs: 1, Fails: 1, First: "FAIL"},
		"ex/b ":               {Runs: 1, Fails: 1, First: "panic: test timed out after 1m0s"},
	} {
		r := got[name]
		if r.Runs != want.Runs || r.Fails != want.Fails || r.First != want.First {
			t.Errorf("%s: %d runs, %d failed, first %q; want %d, %d, %q", name, r.Runs, r.Fails, r.First, want.Runs, want.Fails, want.First)
		}
	}
	if _, ok := got["ex/a TestD"]; ok || len(results) != 6 {
		t.Errorf("%d results (a skipped test counts no run): %+v", len(results), results)
	}

	var w strings.Builder
	if !report(&w, results) {
		t.Error("report says nothing failed")
	}
	text := w.String()
	for _, want := range []string{
		"FAIL ex/a TestB: 1 of 2 runs failed; the first:\n    === RUN   TestB\n        b_test.go:9: flood: 9 allowed",
		"FAIL ex/b (the package itself: a build error, a panic outside a test, a timeout): 1 of 1 runs failed; the first:\n    panic: test timed out",
		"flaky: 3 of 4 tests failed at least once in 8 runs; 1 packages failed outside their tests\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the report lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "TestA") || strings.Contains(text, "FAIL ex/a (") {
		t.Errorf("the report names a test that never failed, or a package whose tests did:\n%s", text)
	}
}

func TestReportOfAllPassing(t *testing.T) {
	results, err := parse(strings.NewReader(`{"Action":"run","Package":"p","Test":"T"}
{"Action":"pass","Package":"p","Test":"T"}
{"Action":"pass","Package":"p"}
`))
	var w strings.Builder
	if err != nil || report(&w, results) || w.String() != "flaky: 0 of 1 tests failed at least once in 1 runs\n" {
		t.Fatalf("%v %q", err, w.String())
	}
}

func TestParseRefusesWhatIsNotJSON(t *testing.T) {
	if _, err := parse(strings.NewReader("ok  \tp\t0.1s\n")); err == nil {
		t.Fatal("a plain go test output parsed")
	}
}

func TestTailKeepsTheLastLines(t *testing.T) {
	if got := tail("1\n2\n3\n4\n", 2); got != "… (2 lines before)\n3\n4" {
		t.Fatalf("%q", got)
	}
}
