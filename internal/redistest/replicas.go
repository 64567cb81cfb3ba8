package redistest

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// StartReplica spawns a redis-server replicating primaryAddr (replicaof;
// a full sync starts at once, not after the default 5 s diskless delay)
// and returns once its link is up and it has the primary's data. The
// primary's address may be a proxy in front of it, so that a test can
// hold the replication stream back (a lagging replica).
func StartReplica(tb testing.TB, primaryAddr string, extraArgs ...string) *Server {
	tb.Helper()
	host, port, err := net.SplitHostPort(primaryAddr)
	if err != nil {
		tb.Fatal(err)
	}
	s := Start(tb, append([]string{"--replicaof", host, port, "--repl-diskless-sync-delay", "0"}, extraArgs...)...)
	WaitLinkUp(tb, s.Addr)
	return s
}

// WaitLinkUp waits (up to 15 s) until the replica at addr reports its
// link to its primary up and not syncing.
func WaitLinkUp(tb testing.TB, addr string) {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		info, err := c.Info(context.Background(), "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") && strings.Contains(info, "master_sync_in_progress:0") {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("replica %s: link to its primary not up (%v)\n%s", addr, err, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// StartClusterWithReplicas spawns a Redis Cluster of masters masters with
// one replica each (~3 s), and waits until every replica's link is up.
func StartClusterWithReplicas(tb testing.TB, masters int) *Cluster {
	tb.Helper()
	c := &Cluster{}
	for i := 0; i < 2*masters; i++ {
		n := Start(tb, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000",
			"--repl-diskless-sync-delay", "0")
		c.nodes = append(c.nodes, n)
		c.Addrs = append(c.Addrs, n.Addr)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		tb.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.waitOK(tb)
	for _, a := range c.Addrs {
		node := redis.NewClient(&redis.Options{Addr: a})
		role, err := node.Do(context.Background(), "ROLE").Slice()
		_ = node.Close()
		if err == nil && len(role) > 0 && role[0] == "slave" {
			WaitLinkUp(tb, a)
		}
	}
	return c
}

// Node is the process behind addr, one of c.Addrs (nil for another).
func (c *Cluster) Node(addr string) *Server {
	for _, n := range c.nodes {
		if n.Addr == addr {
			return n
		}
	}
	return nil
}

// waitOK waits (up to 15 s) until every node says cluster_state:ok.
func (c *Cluster) waitOK(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ok := true
		for _, a := range c.Addrs {
			node := redis.NewClient(&redis.Options{Addr: a})
			info, err := node.ClusterInfo(context.Background()).Result()
			_ = node.Close()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatal("cluster did not reach cluster_state:ok")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
