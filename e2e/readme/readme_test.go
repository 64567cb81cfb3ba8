// Package readme runs the README's quick start as a newcomer would: on a
// fresh `make run` with nothing set (the embedded store, the demo order
// API), every command of every sh block of README.md, as printed, in one
// shell, each checked against the output printed under it; then the page
// the README says to open, in chromium, up to a placed order. A README
// edit that breaks a command fails `make test`.
//
// How the README is read (keep to it when editing the README):
//   - A command is a line of an sh block that is neither blank nor a comment,
//     with its continuation lines (ending in \). The comment lines right
//     under it, without a blank line between, are what it prints: JSON (a
//     body, optionally followed by the HTTP status that curl -w printed)
//     matched by shape (the same keys, the same texts and statuses, numbers
//     as numbers; "…" stands for any text, a time for any time), else text
//     the output must contain ("…" for anything in between). Other comments
//     are prose.
//   - A JSON answer whose status is still WAITING (or PROCESSING, PREQUEUE)
//     where the README shows another is asked again after its pollAfterMs,
//     as the README tells users to, for up to 30 s.
//   - A READY where the README shows WAITING is right when the command
//     before took longer than slowCrowd (the README says so): on a busy
//     machine the crowd's 300 curls take longer than the 3 s the room
//     needs to admit them (100/s), and nobody is left ahead of bob.
//   - `make run` starts the runner once, in the background, as a user's other
//     terminal; `make test` is skipped (it is what runs this); a line with
//     "…" is pasted from what the runner printed; commands that run until
//     interrupted (untilInterrupted) get Ctrl-C after a few seconds.
//
// The README's runner listens on 127.0.0.1:8080, where a developer's own
// `make run` may already be: this one listens on a free port (ADDR, the
// documented variable), and the commands still run as printed. Their curl
// reads a ~/.curlrc (CURL_HOME) that connects localhost:8080 and
// 127.0.0.1:8080 to that port; waitroomctl gets the URL the runner printed
// (pasted, as the README says); the browser opens the README's page on the
// free port.
package readme

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// slowCrowd is how long the command before a WAITING must have taken for
// READY to be right instead: most of the README's crowd (300 at 100/s)
// was admitted while it formed.
const slowCrowd = 2 * time.Second

// untilInterrupted are the README's commands that run until Ctrl-C.
var untilInterrupted = []string{"waitroomctl watch"}

// A step is one command of the README and what it prints.
type step struct {
	line   int
	cmd    string
	expect []string
}

func TestReadme(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	steps := parse(string(doc))
	if len(steps) < 15 {
		t.Fatalf("README.md has %d commands in sh blocks: the parser lost them", len(steps))
	}
	leftovers(t, root)
	port := freePort(t)
	run := &runner{t: t, root: root, env: append(cleanEnv(t), readmePort(t, port)...), port: port}
	sh := startShell(t, root, run.env)
	for _, s := range steps {
		run.step(sh, s)
	}
	if run.proc == nil {
		t.Fatal("the README never runs `make run`")
	}
	m := regexp.MustCompile(`Then open <(http://[^>]+)>`).FindStringSubmatch(string(doc))
	if m == nil {
		t.Fatal("README.md no longer says which page to open (Then open <http://…>)")
	}
	pageJourney(t, strings.Replace(m[1], ":"+readmeAddrPort+"/", ":"+port+"/", 1))
}

// readmeAddrPort is the port of the README's commands (ADDR's default).
const readmeAddrPort = "8080"

// freePort is a loopback port nobody listens on now.
func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// readmePort is what the README's commands need to reach a runner on port
// instead of 8080: ADDR for `make run`, and a curl configuration that
// connects the README's addresses to it.
func readmePort(t *testing.T, port string) []string {
	dir := t.TempDir()
	rc := ""
	for _, host := range []string{"localhost", "127.0.0.1"} {
		rc += fmt.Sprintf("connect-to = \"%s:%s:127.0.0.1:%s\"\n", host, readmeAddrPort, port)
	}
	if err := os.WriteFile(filepath.Join(dir, ".curlrc"), []byte(rc), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"ADDR=127.0.0.1:" + port, "CURL_HOME=" + dir}
}

// parse reads the commands of README.md's sh blocks, in order.
func parse(doc string) []step {
	var steps []step
	in, cmd, last := false, "", -1
	for i, line := range strings.Split(doc, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			in, last = trimmed == "```sh", -1
		case !in:
		case cmd != "": // a continuation line
			cmd += "\n" + line
			if !strings.HasSuffix(trimmed, `\`) {
				steps[len(steps)-1].cmd, cmd = cmd, ""
			}
		case trimmed == "":
			last = -1
		case strings.HasPrefix(trimmed, "#"):
			if last >= 0 {
				steps[last].expect = append(steps[last].expect, strings.TrimSpace(strings.TrimPrefix(trimmed, "#")))
			}
		default:
			steps = append(steps, step{line: i + 1, cmd: line})
			last = len(steps) - 1
			if strings.HasSuffix(trimmed, `\`) {
				cmd = line
			}
		}
	}
	return steps
}

// cleanEnv is a newcomer's environment: a PATH and a home, and Go's caches
// (so that nothing is downloaded or built twice), nothing of Waitroom's.
func cleanEnv(t *testing.T) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + t.TempDir()}
	for _, name := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY", "GOSUMDB", "GOFLAGS", "GOTOOLCHAIN"} {
		out, err := exec.Command("go", "env", name).Output()
		if err == nil && strings.TrimSpace(string(out)) != "" {
			env = append(env, name+"="+strings.TrimSpace(string(out)))
		}
	}
	return env
}

type runner struct {
	t    *testing.T
	root string
	env  []string
	port string // where make run listens (ADDR)
	proc *exec.Cmd
	log  *syncBuffer // what make run printed
	// prevTook is how long the last command took (slowCrowd).
	prevTook time.Duration
}

func (r *runner) step(sh *shell, s step) {
	t := r.t
	t.Helper()
	words := strings.Fields(s.cmd)
	switch {
	case len(words) >= 2 && words[0] == "make" && words[1] == "test":
		return // it is what runs this
	case len(words) >= 2 && words[0] == "make" && words[1] == "run":
		r.makeRun(s)
		return
	case strings.Contains(s.cmd, "…"):
		s.cmd = r.pasted(s)
	}
	long := false
	for _, u := range untilInterrupted {
		long = long || strings.Contains(s.cmd, u)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		began := time.Now()
		out, errOut, rc := sh.run(s.cmd, long)
		// Interrupted, go run itself reports the signal (exit status 1,
		// as in a terminal where Ctrl-C reaches the whole job); the output
		// then shows whether the command did its work.
		interrupted := long && (rc == 1 || rc == 130) && !strings.Contains(errOut, "panic:")
		if rc != 0 && !interrupted {
			t.Fatalf("README.md:%d: %s\nexit status %d\n%s%s", s.line, s.cmd, rc, out, errOut)
		}
		again, err := matches(s.expect, out)
		if err != nil && r.prevTook >= slowCrowd && drained(s.expect, out) {
			err = nil
		}
		if err == nil {
			r.prevTook = time.Since(began)
			return
		}
		if again <= 0 || time.Now().After(deadline) {
			t.Fatalf("README.md:%d: %s\nprinted: %s\nwant:    %s\n%v", s.line, s.cmd, out, strings.Join(s.expect, "\n         "), err)
		}
		time.Sleep(again)
	}
}

// makeRun starts `make run` as printed, once, in a process group of its
// own, and waits until it answers.
func (r *runner) makeRun(s step) {
	t := r.t
	if r.proc != nil {
		return // the runner of the first `make run` is still up
	}
	r.log = &syncBuffer{}
	r.proc = exec.Command("bash", "-c", s.cmd)
	r.proc.Dir, r.proc.Env, r.proc.Stdout, r.proc.Stderr = r.root, r.env, r.log, r.log
	r.proc.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := r.proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopGroup(r.proc) })
	deadline := time.Now().Add(3 * time.Minute) // a cold build of cmd/local
	for {
		resp, err := http.Get("http://127.0.0.1:" + r.port + "/healthz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) || r.proc.ProcessState != nil {
			t.Fatalf("README.md:%d: `make run` did not answer /healthz:\n%s", s.line, r.log.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// pasted is the line the runner printed that the README tells users to
// paste: the one that begins as the README's does, up to its "…".
func (r *runner) pasted(s step) string {
	prefix := strings.TrimSpace(s.cmd[:strings.Index(s.cmd, "…")])
	// The runner prints its own address: the free port, where the README has 8080.
	prefix = strings.Replace(prefix, "127.0.0.1:"+readmeAddrPort, "127.0.0.1:"+r.port, 1)
	for _, line := range strings.Split(r.log.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), prefix) {
			return strings.TrimSpace(line)
		}
	}
	r.t.Fatalf("README.md:%d: `make run` printed no line beginning %q:\n%s", s.line, prefix, r.log.String())
	return ""
}

func stopGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// leftovers removes, when the test ends, the files the README's commands
// wrote in the repository (a cookie file).
func leftovers(t *testing.T, root string) {
	before := map[string]bool{}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		before[e.Name()] = true
	}
	t.Cleanup(func() {
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if !before[e.Name()] && !e.IsDir() {
				_ = os.Remove(filepath.Join(root, e.Name()))
			}
		}
	})
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// shell is one bash, as the user's terminal: variables set by one command
// are there for the next.
type shell struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Reader
	dir string
}

func startShell(t *testing.T, root string, env []string) *shell {
	cmd := exec.Command("bash")
	cmd.Dir, cmd.Env = root, env
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close(); _ = cmd.Wait() })
	return &shell{t: t, in: in, out: bufio.NewReader(out), dir: t.TempDir()}
}

const stepDone = "__readme_step_done__"

// run runs cmd in the shell and returns its output, errors and exit status.
// long commands are interrupted (SIGINT to their process group) after 3 s.
func (s *shell) run(cmd string, long bool) (stdout, stderr string, rc int) {
	s.t.Helper()
	out, errf, rcf := filepath.Join(s.dir, "out"), filepath.Join(s.dir, "err"), filepath.Join(s.dir, "rc")
	script := fmt.Sprintf("{ %s\n} >%q 2>%q; echo $? >%q; echo %s\n", cmd, out, errf, rcf, stepDone)
	if long {
		script = fmt.Sprintf("set -m; { %s\n} >%q 2>%q & wr_pid=$!; sleep 3; kill -INT -- -$wr_pid; wait $wr_pid; echo $? >%q; set +m; echo %s\n", cmd, out, errf, rcf, stepDone)
	}
	if _, err := io.WriteString(s.in, script); err != nil {
		s.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for {
			line, err := s.out.ReadString('\n')
			if err != nil || strings.TrimSpace(line) == stepDone {
				done <- err
				return
			}
		}
	}()
	select {
	case err := <-done:
		if err != nil {
			s.t.Fatalf("the shell ended: %v", err)
		}
	case <-time.After(3 * time.Minute):
		s.t.Fatalf("%s: no answer within 3 minutes", cmd)
	}
	o, _ := os.ReadFile(out)
	e, _ := os.ReadFile(errf)
	r, _ := os.ReadFile(rcf)
	fmt.Sscan(string(r), &rc)
	return string(o), string(e), rc
}

// drained says whether out is READY where the README shows WAITING.
func drained(expect []string, out string) bool {
	if len(expect) != 1 || !strings.HasPrefix(expect[0], "{") {
		return false
	}
	want, _, err := answer(expect[0])
	got, _, err2 := answer(strings.TrimSpace(out))
	return err == nil && err2 == nil && field(want, "status") == "WAITING" && field(got, "status") == "READY"
}

// matches checks out against the printed expectation. again > 0 means the
// answer is still on its way (WAITING where READY is shown): ask again then.
func matches(expect []string, out string) (again time.Duration, err error) {
	if len(expect) == 0 {
		return 0, nil
	}
	if !strings.HasPrefix(expect[0], "{") {
		for _, e := range expect {
			if !containsPieces(out, e) {
				return 0, fmt.Errorf("the output lacks %q", e)
			}
		}
		return 0, nil
	}
	if len(expect) > 1 {
		return 0, fmt.Errorf("one JSON answer per command: %d lines shown", len(expect))
	}
	want, wantStatus, err := answer(expect[0])
	if err != nil {
		return 0, fmt.Errorf("README: %v", err)
	}
	got, gotStatus, err := answer(strings.TrimSpace(out))
	if err != nil {
		return 0, err
	}
	if ws, gs := field(want, "status"), field(got, "status"); ws != gs && (gs == "WAITING" || gs == "PROCESSING" || gs == "PREQUEUE") {
		poll, _ := got.(map[string]any)["pollAfterMs"].(float64)
		return time.Duration(min(max(poll, 50), 1000)) * time.Millisecond, fmt.Errorf("status %s, not yet %s", gs, ws)
	}
	if wantStatus != gotStatus {
		return 0, fmt.Errorf("HTTP status %q, want %q", gotStatus, wantStatus)
	}
	return 0, sameShape("", want, got)
}

// answer reads a JSON value and the status curl -w printed after it.
func answer(s string) (v any, status string, err error) {
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(&v); err != nil {
		return nil, "", fmt.Errorf("not JSON: %q", s)
	}
	rest := strings.Fields(s[dec.InputOffset():])
	if len(rest) > 0 && regexp.MustCompile(`^\d{3}$`).MatchString(rest[0]) {
		status = rest[0]
	}
	return v, status, nil
}

func field(v any, name string) string {
	m, _ := v.(map[string]any)
	s, _ := m[name].(string)
	return s
}

// sameShape: the same keys, equal texts ("…" for any text, a time for any
// time), numbers for numbers, equal literals.
func sameShape(path string, want, got any) error {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("%s: %v, want the keys of %v", path, got, w)
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				return fmt.Errorf("%s.%s missing", path, k)
			}
			if err := sameShape(path+"."+k, wv, gv); err != nil {
				return err
			}
		}
	case string:
		g, ok := got.(string)
		_, wantTime := time.Parse(time.RFC3339, w)
		_, gotTime := time.Parse(time.RFC3339, g)
		if !ok || !(w == g || containsPieces(g, w) && strings.Contains(w, "…") || wantTime == nil && gotTime == nil) {
			return fmt.Errorf("%s: %v, want %q", path, got, w)
		}
	case float64:
		if _, ok := got.(float64); !ok {
			return fmt.Errorf("%s: %v, want a number", path, got)
		}
	default:
		if want != got {
			return fmt.Errorf("%s: %v, want %v", path, got, want)
		}
	}
	return nil
}

// containsPieces reports whether s holds the pieces of pattern between its
// "…", in order; a pattern without "…" must be a part of s.
func containsPieces(s, pattern string) bool {
	for _, p := range strings.Split(pattern, "…") {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}
