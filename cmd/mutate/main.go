// Command mutate checks that the tests catch the bugs they exist for: it
// puts each deliberate small bug of its list (mutations.go) into a scratch
// copy of the repository, one at a time, runs the tests of the packages
// that bug concerns, and reports whether some test failed (caught) or all
// passed (survived). The worktree itself is never written.
//
// Every mutation is anchored on an exact snippet of its file that must
// occur exactly once: when the code moves, a stale mutation fails the run
// instead of silently testing nothing. The exit status is non-zero when a
// mutation survives, is stale, does not compile, or when the unmutated
// tests fail (then no result would mean anything).
//
// Usage (from the repository, `make mutate`):
//
//	go run ./cmd/mutate [-j 2] [-timeout 5m] [-only regexp] [-list] [-baseline=false]
//	go run ./cmd/mutate -docs   # the list's count into README.md and make help
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	jobs := flag.Int("j", 2, "mutations tested at once (the machine has 2 cores; each run spawns redis-servers)")
	timeout := flag.Duration("timeout", 5*time.Minute, "bound of one mutation's test run (go test -timeout)")
	only := flag.String("only", "", "test only the mutations whose name matches this regexp")
	list := flag.Bool("list", false, "list the mutations and check their anchors; run nothing")
	baseline := flag.Bool("baseline", true, "first run the involved tests unmutated; they must pass")
	docs := flag.Bool("docs", false, "write the list's count into README.md and make help's line (countFigures); run nothing")
	flag.Parse()
	if *docs {
		root, err := repoRoot()
		if err == nil {
			err = writeCounts(root, len(mutations))
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "mutate:", err)
			os.Exit(1)
		}
		fmt.Printf("mutations: %d, written into %d figures\n", len(mutations), len(countFigures))
		return
	}
	if err := run(*jobs, *timeout, *only, *list, *baseline); err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(1)
	}
}

func run(jobs int, timeout time.Duration, only string, list, baseline bool) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	selected, err := selectMutations(mutations, only)
	if err != nil {
		return err
	}
	if err := checkAnchors(root, selected); err != nil {
		return err
	}
	if list {
		for _, m := range selected {
			fmt.Printf("%-58s %s\n", m.Name, strings.Join(m.Pkgs, " "))
		}
		fmt.Printf("mutations: %d, anchors current\n", len(selected))
		return nil
	}
	jobs = max(1, min(jobs, 2, len(selected)))
	copies, cleanup, err := scratchCopies(root, jobs)
	defer cleanup()
	if err != nil {
		return err
	}
	// Interrupted (Ctrl-C reaches the go test runs too): leave no copies behind.
	interrupt := make(chan os.Signal, 1)
	signal.Notify(interrupt, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-interrupt
		cleanup()
		os.Exit(130)
	}()
	start := time.Now()
	if baseline {
		if err := runBaseline(copies, selected, timeout); err != nil {
			return err
		}
	}
	results := runAll(copies, selected, timeout)
	return summarize(results, time.Since(start))
}

func repoRoot() (string, error) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("run inside the repository: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func selectMutations(all []Mutation, only string) ([]Mutation, error) {
	if only == "" {
		return all, nil
	}
	re, err := regexp.Compile(only)
	if err != nil {
		return nil, fmt.Errorf("-only: %w", err)
	}
	var out []Mutation
	for _, m := range all {
		if re.MatchString(m.Name) {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-only %q matches no mutation", only)
	}
	return out, nil
}

// checkAnchors fails, naming every stale mutation, unless each anchor
// occurs exactly once in its file and differs from its replacement.
func checkAnchors(root string, ms []Mutation) error {
	var stale []string
	names := map[string]bool{}
	for _, m := range ms {
		if names[m.Name] {
			stale = append(stale, fmt.Sprintf("%s: the name is used twice", m.Name))
		}
		names[m.Name] = true
		src, err := os.ReadFile(filepath.Join(root, m.File))
		switch n := bytes.Count(src, []byte(m.From)); {
		case err != nil:
			stale = append(stale, fmt.Sprintf("%s: %v", m.Name, err))
		case m.From == m.To || m.From == "":
			stale = append(stale, fmt.Sprintf("%s: changes nothing", m.Name))
		case n != 1:
			stale = append(stale, fmt.Sprintf("%s: its anchor occurs %d times in %s (want exactly once): %q", m.Name, n, m.File, firstLine(m.From)))
		case len(m.Pkgs) == 0:
			stale = append(stale, fmt.Sprintf("%s: no packages to test", m.Name))
		}
	}
	if len(stale) > 0 {
		for _, s := range stale {
			fmt.Println("STALE   ", s)
		}
		return fmt.Errorf("%d stale mutation(s): update cmd/mutate/mutations.go to the code", len(stale))
	}
	return nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// scratchCopies copies the repository's files (tracked and new, as they are
// in the worktree, without the infra module) into n temporary directories.
func scratchCopies(root string, n int) ([]string, func(), error) {
	var dirs []string
	cleanup := func() {
		for _, d := range dirs {
			_ = os.RemoveAll(d)
		}
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "-co", "--exclude-standard").Output()
	if err != nil {
		return nil, cleanup, fmt.Errorf("list files: %w", err)
	}
	files := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i := 0; i < n; i++ {
		dir, err := os.MkdirTemp("", "waitroom-mutate-")
		if err != nil {
			return nil, cleanup, err
		}
		dirs = append(dirs, dir)
		for _, f := range files {
			if strings.HasPrefix(f, "infra/") {
				continue
			}
			if err := copyFile(filepath.Join(root, f), filepath.Join(dir, f)); err != nil {
				return nil, cleanup, err
			}
		}
	}
	return dirs, cleanup, nil
}

func copyFile(from, to string) error {
	info, err := os.Stat(from)
	if errors.Is(err, os.ErrNotExist) {
		return nil // deleted in the worktree, not yet in the index
	}
	if err != nil || info.IsDir() {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// outcome is what one mutation's test run showed.
type outcome struct {
	m       Mutation
	caught  bool
	broken  string   // the mutation does not compile, or the run failed to start
	by      []string // the failing tests
	why     string   // the first failure message
	elapsed time.Duration
}

// runBaseline runs every involved package's tests once, unmutated: a test
// that fails without any bug would make every mutation look caught.
func runBaseline(copies []string, ms []Mutation, timeout time.Duration) error {
	seen := map[string]bool{}
	var sets []Mutation
	for _, m := range ms {
		for _, pkg := range m.Pkgs {
			one := Mutation{Name: strings.TrimSpace("baseline " + pkg + " " + m.Skip), Pkgs: []string{pkg}, Run: m.Run, Skip: m.Skip}
			if k := one.testSet(); !seen[k] {
				seen[k] = true
				sets = append(sets, one)
			}
		}
	}
	failed := false
	baselineLine := func(o outcome) string {
		if o.caught || o.broken != "" {
			failed = true
			return fmt.Sprintf("BASELINE FAILS %s: %s%s", o.m.Name, strings.Join(o.by, ", "), o.broken)
		}
		return fmt.Sprintf("pass     %-58s (%v)", o.m.Name, o.elapsed.Round(100*time.Millisecond))
	}
	parallel(copies, sets, baselineLine, func(dir string, m Mutation) outcome { return goTest(dir, m, timeout) })
	if failed {
		return errors.New("the tests fail without any mutation: fix them first")
	}
	fmt.Printf("baseline: %d test sets pass unmutated\n", len(sets))
	return nil
}

func runAll(copies []string, ms []Mutation, timeout time.Duration) []outcome {
	return parallel(copies, ms, outcome.line, func(dir string, m Mutation) outcome {
		path := filepath.Join(dir, m.File)
		orig, err := os.ReadFile(path)
		if err != nil {
			return outcome{m: m, broken: err.Error()}
		}
		mutated := bytes.Replace(orig, []byte(m.From), []byte(m.To), 1)
		if err := os.WriteFile(path, mutated, 0o644); err != nil {
			return outcome{m: m, broken: err.Error()}
		}
		o := goTest(dir, m, timeout)
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			// The copy now holds the bug: every later result from it would lie.
			fmt.Fprintln(os.Stderr, "mutate: restoring", path, err)
			os.Exit(1)
		}
		return o
	})
}

// parallel runs f over ms with one worker per scratch copy, printing each
// result as it comes; results keep the order of ms.
func parallel(copies []string, ms []Mutation, line func(outcome) string, f func(dir string, m Mutation) outcome) []outcome {
	results := make([]outcome, len(ms))
	next := make(chan int)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, dir := range copies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				o := f(dir, ms[i])
				results[i] = o
				mu.Lock()
				fmt.Println(line(o))
				mu.Unlock()
			}
		}()
	}
	for i := range ms {
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

var (
	failLine = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)
	whyLine  = regexp.MustCompile(`(?m)^\s+(\S+_test\.go:\d+: .*)$`)
)

// goTest runs the mutation's tests in dir: first the tests of its Hint
// (those that caught it before; a quick answer), then, when they pass,
// every test of its packages one package at a time. -failfast: the first
// failing test settles the question. The baseline has no Hint.
func goTest(dir string, m Mutation, timeout time.Duration) outcome {
	start := time.Now()
	var o outcome
	if m.Hint != "" {
		if o = goRun(dir, m.Pkgs, m.Hint, m.Skip, timeout); o.caught || o.broken != "" {
			o.m, o.elapsed = m, time.Since(start)
			return o
		}
	}
	for _, pkg := range m.Pkgs {
		if o = goRun(dir, []string{pkg}, m.Run, m.Skip, timeout); o.caught || o.broken != "" {
			break
		}
	}
	o.m, o.elapsed = m, time.Since(start)
	return o
}

// goRun is one go test run; a build that does not compile is "broken".
func goRun(dir string, pkgs []string, run, skip string, timeout time.Duration) outcome {
	args := []string{"test", "-count=1", "-failfast", "-p", "1", "-timeout", timeout.String()}
	if run != "" {
		args = append(args, "-run", run)
	}
	if skip != "" {
		args = append(args, "-skip", skip)
	}
	args = append(args, pkgs...)
	// A hung build or a test that ignores -timeout is killed a minute later.
	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var o outcome
	text := out.String()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return o
	case !errors.As(err, &exit):
		o.broken = err.Error()
	case strings.Contains(text, "[build failed]") || strings.Contains(text, "[setup failed]"):
		o.broken = "does not compile: " + lastLines(text, 4)
	case strings.Contains(text, "panic: test timed out"):
		o.caught, o.by = true, []string{"timeout"}
	default:
		o.caught = true
		for _, f := range failLine.FindAllStringSubmatch(text, -1) {
			if !strings.Contains(f[1], "/") || len(o.by) == 0 {
				o.by = appendNew(o.by, f[1])
			}
		}
		if len(o.by) == 0 {
			o.by = []string{"FAIL without a named test: " + lastLines(text, 3)}
		}
		if w := whyLine.FindStringSubmatch(text); w != nil {
			o.why = w[1]
		} else if i := strings.Index(text, "panic: "); i >= 0 {
			o.why = firstLine(text[i:])
		}
	}
	return o
}

func appendNew(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

func (o outcome) line() string {
	took := o.elapsed.Round(100 * time.Millisecond)
	switch {
	case o.broken != "":
		return fmt.Sprintf("BROKEN   %-58s %s", o.m.Name, o.broken)
	case o.caught:
		return fmt.Sprintf("caught   %-58s by %s (%v) %s", o.m.Name, strings.Join(o.by, ", "), took, clip(o.why, 110))
	default:
		return fmt.Sprintf("SURVIVED %-58s %s passed (%v)", o.m.Name, strings.Join(o.m.Pkgs, " "), took)
	}
}

func summarize(results []outcome, elapsed time.Duration) error {
	caught, survived, broken := 0, 0, 0
	for _, o := range results {
		switch {
		case o.broken != "":
			broken++
		case o.caught:
			caught++
		default:
			survived++
		}
	}
	fmt.Printf("mutations: %d, caught: %d, survived: %d", len(results), caught, survived)
	if broken > 0 {
		fmt.Printf(", broken: %d", broken)
	}
	fmt.Printf(" (%v)\n", elapsed.Round(time.Second))
	if survived > 0 || broken > 0 {
		return fmt.Errorf("%d survived, %d broken", survived, broken)
	}
	return nil
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
