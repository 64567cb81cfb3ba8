package localrun_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/localrun"
	"github.com/waitroom/waitroom/redisstore"
)

// measureOutEnv names the file `make stream-memory` has the figures written
// to (a Markdown block for docs/design.md, through cmd/fragment); with it
// set, the measurement holds 1,000 streams, else 200.
const measureOutEnv = "WAITROOM_STREAM_MEMORY_OUT"

// holderEnv tells the test binary, started again by the measurement, to
// be the process that holds the streams open (TestStreamHolderProcess).
const holderEnv = "WAITROOM_STREAM_HOLDER"

// usage is what the runner's process holds, read after a full collection.
type usage struct {
	heap, stacks             uint64 // live heap bytes, bytes of goroutine stacks in use
	goroutines, fds, streams int
}

func measure(r *localrun.Runner) usage {
	runtime.GC()
	runtime.GC() // the second collects what the first's finalizers freed
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	fds, _ := os.ReadDir("/proc/self/fd") // Linux; elsewhere 0
	total, _, _ := localrun.OpenStreams(r)
	return usage{heap: m.HeapAlloc, stacks: m.StackInuse, goroutines: runtime.NumGoroutine(), fds: len(fds), streams: total}
}

// What one open stream costs the local runner: its connection's goroutines
// and buffers, its timers, its hub subscription and its slot. Another
// process (this test binary, started again) holds N streams open, so that
// none of the clients' memory is counted; the difference of the runner
// process's runtime.MemStats before and after, over N, is the figure. It
// is logged, not asserted (it depends on the Go version and the machine);
// what is asserted is that every slot is given back when the holder goes.
func TestMeasureStreamMemory(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		// Measuring (make stream-memory): 1,000 streams, and the pauses that
		// let the figure settle. Otherwise the slots alone are asserted, and
		// the figure is logged unsettled.
		n, settle := 200, time.Duration(0)
		if os.Getenv(measureOutEnv) != "" {
			n, settle = 1000, time.Second
		}
		// The limiter at its defaults, whose buckets empty in seconds; no
		// cap per address, for one holder.
		r, srv := startRunner(t, engine, map[string]string{"ADMIT_RATE_PER_SEC": "0.001", "STREAMS_PER_IP": "0"})
		store := redisstore.New(srv.Client(), r.Config)
		for i := -1; i < n; i++ { // "ahead" first: the runner's first batch admits it
			if _, err := store.Enter(context.Background(), "tv", waitroom.Unlimited("h:"+holderUser(i))); err != nil { // as X-User-Id names them
				t.Fatal(err)
			}
		}
		for srv.Client().Exists(context.Background(), "wr:{tv}:u:h:"+holderUser(-1)).Val() == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(settle) // admission's first batch settles
		before := measure(r)

		stop := holdStreams(t, r.URL, n)
		for deadline := time.Now().Add(10 * time.Second); measure(r).streams < n; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d streams counted", measure(r).streams, n)
			}
		}
		time.Sleep(3 * settle) // the connects' limiter buckets fill up and expire (embedded store: in this process)
		after := measure(r)
		stop()
		localrun.WaitNoStreams(t, r, "the holder process exited")

		row := perStream(engine.Name, n, before, after)
		t.Log(row)
		if out := os.Getenv(measureOutEnv); out != "" {
			appendRow(t, out, n, row)
		}
	})
}

// perStream is the Markdown row of the measurement.
func perStream(engine string, n int, before, after usage) string {
	per := func(a, b uint64) float64 { return (float64(a) - float64(b)) / float64(n) / 1024 }
	heap, stacks := per(after.heap, before.heap), per(after.stacks, before.stacks)
	return fmt.Sprintf("| %s | %.1f KB | %.1f KB | %.1f KB | %.2f | %.2f | %.0f MB |", engine, heap, stacks, heap+stacks,
		float64(after.goroutines-before.goroutines)/float64(n), float64(after.fds-before.fds)/float64(n), (heap+stacks)*10_000/1024)
}

// appendRow adds row to the measurement's Markdown block, started by the
// first engine's row.
func appendRow(t *testing.T, path string, n int, row string) {
	t.Helper()
	var b strings.Builder
	if _, err := os.Stat(path); err != nil {
		fmt.Fprintf(&b, "`make stream-memory` (localrun's `TestMeasureStreamMemory`, %s; %s %s/%s, %d cores): %d,%03d streams of one\n",
			time.Now().Format("2006-01-02"), runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), n/1000, n%1000)
		b.WriteString("room held open by another process against the local runner; the runner's `runtime.MemStats` after a\n")
		b.WriteString("full collection, before and after, over the number of streams:\n\n")
		b.WriteString("| store | live heap | stacks | memory | goroutines | file descriptors | 10,000 streams (`MAX_STREAMS`) |\n")
		b.WriteString("| --- | --- | --- | --- | --- | --- | --- |\n")
	}
	b.WriteString(row + "\n")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		_, err = f.WriteString(b.String())
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
}

func holderUser(i int) string {
	if i < 0 {
		return "ahead"
	}
	return fmt.Sprintf("h%05d", i)
}

// holdStreams starts the holder process and waits until it holds n
// streams; stop ends it (its connections close with it).
func holdStreams(t *testing.T, url string, n int) (stop func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStreamHolderProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d", holderEnv, url, n))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			stdin.Close()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(stop)
	lines := bufio.NewScanner(stdout)
	var seen []string
	for lines.Scan() {
		if lines.Text() == fmt.Sprintf("holding %d", n) {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return stop
		}
		seen = append(seen, lines.Text())
	}
	t.Fatalf("the holder process did not hold %d streams:\n%s\n%s", n, strings.Join(seen, "\n"), stderr.String())
	return nil
}

// TestStreamHolderProcess is the holder process of TestMeasureStreamMemory,
// not a test of its own: it opens the streams, says so, and keeps them open
// until its standard input closes.
func TestStreamHolderProcess(t *testing.T) {
	spec := os.Getenv(holderEnv)
	if spec == "" {
		t.Skip("the holder process of TestMeasureStreamMemory")
	}
	url, count, _ := strings.Cut(spec, " ")
	n, err := strconv.Atoi(count)
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(url, "http://")
	conns := make([]net.Conn, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := openRaw(host, holderUser(i))
			if err != nil {
				errs <- err
				return
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err) // the connections close as the process exits
	}
	fmt.Printf("holding %d\n", n)
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		c.Close()
	}
}

// openRaw opens user's stream over a bare connection and reads up to the
// end of its first event, then leaves the connection unread.
func openRaw(host, user string) (net.Conn, error) {
	c, err := net.Dial("tcp", host)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c, "GET /queue/events?room=tv HTTP/1.1\r\nHost: %s\r\nX-User-Id: %s\r\n\r\n", host, user)
	br := bufio.NewReader(c)
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, " 200 ") {
		c.Close()
		return nil, fmt.Errorf("%s: %q %v", user, status, err)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("%s: %v", user, err)
		}
		if strings.HasPrefix(line, "data: ") {
			return c, nil
		}
	}
}
