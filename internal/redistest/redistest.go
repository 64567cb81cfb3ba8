// Package redistest spawns real redis-server processes on free loopback
// ports for tests: a single node, or a cluster of masters.
package redistest

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is one redis-server process. Its data survives Stop and Start
// (SHUTDOWN SAVE, then reload from its directory), like a restarted node.
type Server struct {
	tb   testing.TB
	Addr string
	dir  string
	args []string
	cmd  *exec.Cmd
}

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr }

// Start spawns a redis-server and stops it when the test ends.
func Start(tb testing.TB, extraArgs ...string) *Server {
	tb.Helper()
	s := &Server{tb: tb, Addr: freeAddr(tb), dir: tb.TempDir()}
	_, port, _ := net.SplitHostPort(s.Addr)
	s.args = append([]string{"--port", port, "--bind", "127.0.0.1", "--dir", s.dir, "--save", "", "--appendonly", "no", "--protected-mode", "no"}, extraArgs...)
	s.Restart()
	tb.Cleanup(s.kill)
	return s
}

// Restart starts the process again (after Stop) on the same port and data.
func (s *Server) Restart() {
	s.tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		s.tb.Fatalf("redis-server not found: run `make test`, which installs it (%v)", err)
	}
	s.cmd = exec.Command(bin, s.args...)
	s.cmd.Dir = s.dir
	s.cmd.Stdout, s.cmd.Stderr = logFile(s.tb, s.dir), logFile(s.tb, s.dir)
	if err := s.cmd.Start(); err != nil {
		s.tb.Fatalf("start redis-server: %v", err)
	}
	waitReady(s.tb, s.Addr)
}

// Stop shuts the server down, saving its data for Restart.
func (s *Server) Stop() {
	s.tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	_ = c.Do(context.Background(), "SHUTDOWN", "SAVE").Err() // the connection drops: no reply
	_ = s.cmd.Wait()
}

// Pause freezes the process (SIGSTOP): connections hang rather than fail,
// the harder kind of outage. Resume undoes it.
func (s *Server) Pause()  { _ = s.cmd.Process.Signal(stopSignal) }
func (s *Server) Resume() { _ = s.cmd.Process.Signal(contSignal) }

func (s *Server) kill() {
	if s.cmd != nil && s.cmd.Process != nil && s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Signal(contSignal)
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

// Client returns a client for the server, closed when the test ends.
func (s *Server) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	s.tb.Cleanup(func() { _ = c.Close() })
	return c
}

// Cluster is a Redis Cluster of masters without replicas.
type Cluster struct {
	Addrs []string
	nodes []*Server
}

// StartCluster spawns masters cluster nodes and joins them (~2 s).
func StartCluster(tb testing.TB, masters int) *Cluster {
	tb.Helper()
	c := &Cluster{}
	for i := 0; i < masters; i++ {
		n := Start(tb, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000")
		c.nodes = append(c.nodes, n)
		c.Addrs = append(c.Addrs, n.Addr)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		tb.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.waitOK(tb)
	return c
}

// Client returns a cluster client, closed when the test ends.
func (c *Cluster) Client(tb testing.TB) *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs})
	tb.Cleanup(func() { _ = cc.Close() })
	return cc
}

func freeAddr(tb testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitReady(tb testing.TB, addr string) {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			tb.Fatalf("redis-server on %s did not answer PING", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func logFile(tb testing.TB, dir string) *os.File {
	f, err := os.OpenFile(filepath.Join(dir, "redis.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = f.Close() })
	return f
}

// Version returns redis-server's version, for test logs.
func Version() string {
	out, err := exec.Command("redis-server", "--version").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
