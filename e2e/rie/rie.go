// Package rie runs the real bootstrap binaries of the functions under the
// AWS Lambda Runtime Interface Emulator (aws-lambda-rie), one emulator per
// function on free loopback ports, and invokes them the way Lambda does:
// POST /2015-03-31/functions/function/invocations.
//
// The emulator serves one invocation at a time (a second concurrent one
// crashes it), as one Lambda execution environment does, so the Runner
// serializes invocations per function.
package rie

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/e2e/gateway"
)

// Options say what to run.
type Options struct {
	RIE      string            // path of aws-lambda-rie
	BuildDir string            // holds <function>/bootstrap
	Env      map[string]string // every function's environment
	// FunctionEnv adds or overrides variables per function.
	FunctionEnv map[string]map[string]string
	// TimeoutSeconds is AWS_LAMBDA_FUNCTION_TIMEOUT (default 30).
	TimeoutSeconds int
}

// Runner hosts functions, one emulator each.
type Runner struct {
	instances map[string]*Instance
	client    *http.Client
}

// Instance is one emulator hosting one function.
type Instance struct {
	Function string
	URL      string    // the invocation endpoint
	Started  time.Time // when the emulator process was started
	LogPath  string    // the emulator's and the function's output

	mu  sync.Mutex // one invocation at a time
	cmd *exec.Cmd
}

var _ gateway.Invoker = (*Runner)(nil)

// Start starts one emulator per function and waits until each accepts
// connections. The function's own process starts at the first invocation
// (the emulator's init is lazy, like a cold start). Everything is stopped
// when the test ends.
func Start(tb testing.TB, opt Options, functions ...string) *Runner {
	tb.Helper()
	r := &Runner{instances: map[string]*Instance{}, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
	tb.Cleanup(r.client.CloseIdleConnections)
	for _, fn := range functions {
		in, err := start(tb, opt, fn)
		if err != nil {
			tb.Fatalf("%s: %v", fn, err)
		}
		r.instances[fn] = in
	}
	for _, in := range r.instances {
		if err := waitListening(in.URL, 10*time.Second); err != nil {
			tb.Fatalf("%s: %v\n%s", in.Function, err, tail(in.LogPath))
		}
	}
	return r
}

func start(tb testing.TB, opt Options, fn string) (*Instance, error) {
	bootstrap := filepath.Join(opt.BuildDir, fn, "bootstrap")
	if _, err := os.Stat(bootstrap); err != nil {
		return nil, fmt.Errorf("no bootstrap (run `make e2e`): %w", err)
	}
	emulatorAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	runtimeAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	timeout := opt.TimeoutSeconds
	if timeout == 0 {
		timeout = 30
	}
	// A clean environment: the function sees what Lambda would give it and
	// its configuration, not the test machine's (no stray AWS credentials).
	env := map[string]string{
		"PATH":                            "/usr/local/bin:/usr/bin:/bin",
		"AWS_LAMBDA_FUNCTION_NAME":        fn,
		"AWS_LAMBDA_FUNCTION_TIMEOUT":     strconv.Itoa(timeout),
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
		"AWS_REGION":                      "us-east-1",
		"AWS_DEFAULT_REGION":              "us-east-1",
		"LOG_LEVEL":                       "info",
	}
	for k, v := range opt.Env {
		env[k] = v
	}
	for k, v := range opt.FunctionEnv[fn] {
		env[k] = v
	}
	logPath := filepath.Join(tb.TempDir(), fn+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(opt.RIE,
		"--runtime-interface-emulator-address", emulatorAddr,
		"--runtime-api-address", runtimeAddr,
		bootstrap)
	cmd.Dir = filepath.Dir(bootstrap)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	setProcessGroup(cmd)
	in := &Instance{Function: fn, URL: "http://" + emulatorAddr + "/2015-03-31/functions/function/invocations", LogPath: logPath, cmd: cmd}
	in.Started = time.Now()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start %s: %w", opt.RIE, err)
	}
	tb.Cleanup(func() {
		killProcessGroup(cmd) // the emulator and the bootstrap it started
		_ = cmd.Wait()
		_ = logFile.Close()
		if tb.Failed() {
			tb.Logf("%s emulator log (last lines):\n%s", fn, tail(logPath))
		}
	})
	return in, nil
}

// Instance returns the emulator hosting fn.
func (r *Runner) Instance(fn string) *Instance { return r.instances[fn] }

// Invoke posts payload to fn's emulator, one invocation at a time.
func (r *Runner) Invoke(ctx context.Context, fn string, payload []byte) (gateway.Result, error) {
	in, ok := r.instances[fn]
	if !ok {
		return gateway.Result{}, fmt.Errorf("no function %q", fn)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.URL, bytes.NewReader(payload))
	if err != nil {
		return gateway.Result{}, err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return gateway.Result{}, fmt.Errorf("invoke %s: %w", fn, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return gateway.Result{}, fmt.Errorf("invoke %s: %w", fn, err)
	}
	if resp.StatusCode != http.StatusOK {
		return gateway.Result{}, fmt.Errorf("invoke %s: emulator answered %d %s", fn, resp.StatusCode, body)
	}
	res := gateway.Result{Payload: body, FunctionError: resp.Header.Get("X-Amz-Function-Error")}
	if res.FunctionError == "" {
		res.FunctionError = gateway.FunctionErrorOf(body)
	}
	return res, nil
}

// ProcessID returns the pid of the process serving fn: the bootstrap the
// emulator started. It changes if the function crashes and is restarted.
func (r *Runner) ProcessID(fn string) (int, error) {
	in, ok := r.instances[fn]
	if !ok {
		return 0, fmt.Errorf("no function %q", fn)
	}
	pids, err := children(in.cmd.Process.Pid)
	if err != nil {
		return 0, err
	}
	if len(pids) != 1 {
		return 0, fmt.Errorf("%s: want one bootstrap process under the emulator, found %v", fn, pids)
	}
	return pids[0], nil
}

// children lists the processes whose parent is pid, from /proc (Linux, the
// only system the emulator runs on).
func children(pid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) && fields[0] != "Z" {
			out = append(out, child)
		}
	}
	return out, nil
}

var initReport = regexp.MustCompile(`INIT REPORT\(durationMs: ([0-9.]+)\)`)
var invokeReport = regexp.MustCompile(`REPORT RequestId: \S+\s+(?:Init Duration: [0-9.]+ ms\s+)?Duration: ([0-9.]+) ms`)

// Reports returns what the emulator logged so far: the init durations
// ("INIT REPORT(durationMs: …)", one per cold start) and every invocation's
// duration ("REPORT … Duration: … ms"), in milliseconds.
func (in *Instance) Reports() (inits, invokes []float64, err error) {
	f, err := os.Open(in.LogPath)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := initReport.FindStringSubmatch(line); m != nil {
			v, _ := strconv.ParseFloat(m[1], 64)
			inits = append(inits, v)
		}
		if m := invokeReport.FindStringSubmatch(line); m != nil {
			v, _ := strconv.ParseFloat(m[1], 64)
			invokes = append(invokes, v)
		}
	}
	return inits, invokes, sc.Err()
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func waitListening(rawURL string, within time.Duration) error {
	host := strings.TrimPrefix(rawURL, "http://")
	host = host[:strings.IndexByte(host, '/')]
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("tcp", host, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("emulator not listening on %s: %w", host, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// tail returns the last lines of a log, for failure messages.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}
