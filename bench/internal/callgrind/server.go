package callgrind

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/bench/spike/sim"
)

// Server is a redis-server under valgrind --tool=callgrind, started with
// instrumentation off (so that loading its snapshot, or filling it, runs
// at valgrind's plain speed) and collecting from the moment
// instrumentation is on; its counters are zeroed and dumped with
// callgrind_control.
type Server struct {
	*sim.Redis
	out   string // the dumps' file name prefix
	dumps int
}

// Start spawns redis-server under callgrind in dir, loading the snapshot
// there; it waits up to ready for the load (a 10M line takes minutes under
// valgrind). DEBUG is allowed from loopback so that active expiry can be
// switched off.
func Start(dir string, ready time.Duration) (*Server, error) {
	bin, err := exec.LookPath("valgrind")
	if err != nil {
		return nil, fmt.Errorf("valgrind not found (`make bench-redis-cost` and `make bench-bigroom` install it): %w", err)
	}
	if _, err := exec.LookPath("callgrind_control"); err != nil {
		return nil, fmt.Errorf("callgrind_control not found (package valgrind): %w", err)
	}
	dumps, err := os.MkdirTemp("", "waitroom-callgrind-")
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
	return &Server{Redis: srv, out: out}, nil
}

// control runs callgrind_control with args on the server's process.
func (s *Server) control(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "callgrind_control", append(args, strconv.Itoa(s.PID()))...)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "OK") {
		return fmt.Errorf("callgrind_control %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// Instrument turns instrumentation (and so counting) on for good.
func (s *Server) Instrument(ctx context.Context) error { return s.control(ctx, "--instr=on") }

// Zero sets every counter to zero: what runs next is what the next dump holds.
func (s *Server) Zero(ctx context.Context) error { return s.control(ctx, "--zero") }

// Count zeroes the counters, runs call(i) for i in [0, n) (stopping at an
// error, returned as it is) and dumps: what the n calls cost the server.
func (s *Server) Count(ctx context.Context, n int, call func(i int) error) (*Profile, error) {
	if err := s.Zero(ctx); err != nil {
		return nil, err
	}
	for i := range n {
		if err := call(i); err != nil {
			return nil, err
		}
	}
	return s.Dump(ctx)
}

// Dump writes the counters since the last zero or dump into the next
// numbered file and reads it (the file is removed once read).
func (s *Server) Dump(ctx context.Context) (*Profile, error) {
	if err := s.control(ctx, "--dump"); err != nil {
		return nil, err
	}
	s.dumps++
	name := fmt.Sprintf("%s.%d", s.out, s.dumps)
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("callgrind dump: %w", err)
	}
	defer f.Close()
	p, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return p, os.Remove(name)
}

// Stop ends the server and removes the dumps' directory.
func (s *Server) Stop() {
	s.Redis.Stop()
	_ = os.RemoveAll(filepath.Dir(s.out))
}
