package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/bench/spike/sim"
)

// callgrind is a redis-server under valgrind --tool=callgrind, started
// with instrumentation off (so that loading the snapshot runs at
// valgrind's plain speed); its counters are zeroed and dumped with
// callgrind_control and each dump read with callgrind_annotate (the
// program's total and serverCron's inclusive cost, which is left out:
// bench/rediscost's method, which parses the dumps itself).
type callgrind struct {
	*sim.Redis
	out   string // the dumps' file name prefix
	dumps int
}

// startCallgrind spawns redis-server under callgrind in dir, loading the
// snapshot there; it waits up to ready for the load.
func startCallgrind(dir string, ready time.Duration) (*callgrind, error) {
	bin, err := exec.LookPath("valgrind")
	if err != nil {
		return nil, fmt.Errorf("valgrind not found (`make bench-bigroom` installs it): %w", err)
	}
	for _, tool := range []string{"callgrind_control", "callgrind_annotate"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%s not found (package valgrind): %w", tool, err)
		}
	}
	dumps, err := os.MkdirTemp("", "waitroom-bigroom-callgrind-")
	if err != nil {
		return nil, err
	}
	out := filepath.Join(dumps, "callgrind.out")
	srv, err := sim.StartRedisWrapped([]string{bin, "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=yes",
		"--callgrind-out-file=" + out}, ready, "--dir", dir, "--enable-debug-command", "local")
	if err != nil {
		_ = os.RemoveAll(dumps)
		return nil, err
	}
	return &callgrind{Redis: srv, out: out}, nil
}

// control runs callgrind_control with args on the server's process.
func (c *callgrind) control(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "callgrind_control", append(args, strconv.Itoa(c.PID()))...)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "OK") {
		return fmt.Errorf("callgrind_control %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

func (c *callgrind) instrument(ctx context.Context) error { return c.control(ctx, "--instr=on") }

func (c *callgrind) zero(ctx context.Context) error { return c.control(ctx, "--zero") }

// dump writes the counters since the last zero into the next numbered
// file and returns its instructions less serverCron's.
func (c *callgrind) dump(ctx context.Context) (int64, error) {
	if err := c.control(ctx, "--dump"); err != nil {
		return 0, err
	}
	c.dumps++
	name := fmt.Sprintf("%s.%d", c.out, c.dumps)
	out, err := exec.CommandContext(ctx, "callgrind_annotate", "--inclusive=yes", "--threshold=100", name).Output()
	if err != nil {
		return 0, fmt.Errorf("callgrind_annotate %s: %w", name, err)
	}
	total, timer, err := parseAnnotate(strings.NewReader(string(out)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return total - timer, os.Remove(name)
}

// stop ends the server and removes the dumps' directory.
func (c *callgrind) stop() {
	c.Stop()
	_ = os.RemoveAll(filepath.Dir(c.out))
}

// parseAnnotate reads callgrind_annotate --inclusive=yes output: the
// program's total and serverCron's inclusive instructions (0 when it did
// not run).
func parseAnnotate(r io.Reader) (total, timer int64, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	found := false
	for sc.Scan() {
		t := strings.TrimSpace(sc.Text())
		f := strings.Fields(t)
		if len(f) < 2 {
			continue
		}
		switch {
		case strings.HasSuffix(t, "PROGRAM TOTALS"):
			total, err = strconv.ParseInt(strings.ReplaceAll(f[0], ",", ""), 10, 64)
			found = err == nil
		case timer == 0 && strings.Contains(t, ":serverCron ") && strings.HasPrefix(f[1], "("):
			timer, err = strconv.ParseInt(strings.ReplaceAll(f[0], ",", ""), 10, 64)
		}
		if err != nil {
			return 0, 0, fmt.Errorf("%q: %w", t, err)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	if !found {
		return 0, 0, fmt.Errorf("no PROGRAM TOTALS line: not callgrind_annotate's output")
	}
	return total, timer, nil
}
