package sim

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a redis-server this process spawned on a free loopback port, or
// one named by a URL.
type Redis struct {
	URL  string
	Addr string
	cmd  *exec.Cmd
	dir  string
}

// StartRedis spawns redis-server (no persistence) on 127.0.0.1 and waits for PING.
func StartRedis() (*Redis, error) { return StartRedisOn("") }

// StartRedisOn is StartRedis with redis-server pinned to cpus (a taskset
// -c list such as "0"); "" leaves it unpinned.
func StartRedisOn(cpus string) (*Redis, error) {
	var prefix []string
	if cpus != "" {
		ts, err := exec.LookPath("taskset")
		if err != nil {
			return nil, fmt.Errorf("taskset not found (util-linux), needed to pin redis-server: %w", err)
		}
		prefix = []string{ts, "-c", cpus}
	}
	return StartRedisWrapped(prefix, 10*time.Second)
}

// StartRedisWrapped is StartRedis run through the command prefix (taskset,
// valgrind: one that execs redis-server in place, so that PID is
// redis-server's own), with extraArgs after the usual ones, waiting up to
// ready for the first PONG.
func StartRedisWrapped(prefix []string, ready time.Duration, extraArgs ...string) (*Redis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not found (run `make redis-server`, or set REDIS_URL): %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	dir, err := os.MkdirTemp("", "waitroom-bench-redis-")
	if err != nil {
		return nil, err
	}
	args := append(append(prefix[:len(prefix):len(prefix)], bin, "--port", port, "--bind", "127.0.0.1", "--dir", dir, "--save", "",
		"--appendonly", "no", "--protected-mode", "no", "--maxclients", "20000"), extraArgs...)
	cmd := exec.Command(args[0], args[1:]...)
	logf, err := os.Create(filepath.Join(dir, "redis.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	r := &Redis{URL: "redis://" + addr, Addr: addr, cmd: cmd, dir: dir}
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(ready)
	// The port first, so that a slow start (valgrind) fills no log with dial errors.
	for time.Now().Before(deadline) {
		if conn, err := net.Dial("tcp", addr); err == nil {
			_ = conn.Close()
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for c.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			logText, _ := os.ReadFile(logf.Name())
			r.Stop()
			return nil, fmt.Errorf("redis-server on %s did not answer PING within %s; its log:\n%s", addr, ready, logText)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return r, nil
}

// PID is the spawned server's process id (0 for UseRedis).
func (r *Redis) PID() int {
	if r.cmd == nil || r.cmd.Process == nil {
		return 0
	}
	return r.cmd.Process.Pid
}

// Dir is the spawned server's working directory ("" for UseRedis), removed by Stop.
func (r *Redis) Dir() string { return r.dir }

// UseRedis wraps an existing server given by URL (REDIS_URL); Stop leaves it running.
func UseRedis(url string) (*Redis, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, err
	}
	return &Redis{URL: url, Addr: opt.Addr}, nil
}

// Stop ends a spawned server and removes its directory.
func (r *Redis) Stop() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
		_ = os.RemoveAll(r.dir)
	}
}

// AllowedCPUs is this process's CPU affinity as /proc lists it
// (Cpus_allowed_list), or "unknown".
func AllowedCPUs() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// CommandStats parses INFO commandstats into calls per command.
func CommandStats(ctx context.Context, c redis.UniversalClient) (map[string]int64, error) {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		name, rest, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		for _, f := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				out[strings.TrimPrefix(name, "cmdstat_")] = n
			}
		}
	}
	return out, nil
}

// InfoField reads one numeric field of INFO section.
func InfoField(ctx context.Context, c redis.UniversalClient, section, field string) (int64, error) {
	info, err := c.Info(ctx, section).Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("INFO %s has no %s", section, field)
}

// ServerVersion returns redis_version from INFO server.
func ServerVersion(ctx context.Context, c redis.UniversalClient) string {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return "unknown"
}
