package failover

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// topology is a replicated store and the way it fails over.
type topology interface {
	// env is what the runner needs to reach the store (REDIS_URL, REDIS_CLUSTER).
	env() map[string]string
	// client reaches the store the way the runner does, following the failover.
	client() redis.UniversalClient
	// lag makes the room's replica fall behind from now on: the primary
	// still acknowledges every write, the replica receives none.
	lag(ctx context.Context) error
	// failover promotes the room's replica, freezing the primary first
	// (SIGSTOP) when freeze is set, so that what it did not replicate is
	// really lost; it returns once clients can reach the new primary.
	failover(ctx context.Context, freeze bool) error
	// rejoin brings the old primary back as a replica of the new one (a
	// managed service replaces the failed node), so that writes can be
	// acknowledged by a replica again.
	rejoin(ctx context.Context) error
}

// single: a primary and its replica, the replica's link through a proxy
// (held to make it lag), clients through another (switched at failover).
type single struct {
	tb               testing.TB
	primary, replica *redistest.Server
	repl, front      *proxy
	rdb              *redis.Client
}

func startSingle(tb testing.TB) *single {
	tb.Helper()
	s := &single{tb: tb, primary: redistest.Start(tb, "--repl-diskless-sync-delay", "0")}
	s.repl = startProxy(tb, s.primary.Addr)
	s.replica = redistest.StartReplica(tb, s.repl.addr())
	s.front = startProxy(tb, s.primary.Addr)
	s.rdb = redis.NewClient(&redis.Options{Addr: s.front.addr(), DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	tb.Cleanup(func() { _ = s.rdb.Close() })
	return s
}

func (s *single) env() map[string]string {
	return map[string]string{"REDIS_URL": "redis://" + s.front.addr()}
}
func (s *single) client() redis.UniversalClient { return s.rdb }
func (s *single) lag(context.Context) error     { s.repl.hold(); return nil }

func (s *single) failover(ctx context.Context, freeze bool) error {
	if freeze {
		s.primary.Pause()
	}
	if err := s.replica.Client().Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		return fmt.Errorf("promote: %w", err)
	}
	s.front.switchTo(s.replica.Addr)
	return nil
}

func (s *single) rejoin(ctx context.Context) error {
	s.primary.Resume()
	host, port, _ := net.SplitHostPort(s.replica.Addr)
	if err := s.primary.Client().Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		return fmt.Errorf("rejoin: %w", err)
	}
	redistest.WaitLinkUp(s.tb, s.primary.Addr)
	return nil
}

// cluster: three masters with a replica each; the room's shard fails over.
type cluster struct {
	tb              testing.TB
	c               *redistest.Cluster
	cc              *redis.ClusterClient
	master, replica string // the room's shard
}

func startCluster(tb testing.TB, room string) *cluster {
	tb.Helper()
	c := &cluster{tb: tb, c: redistest.StartClusterWithReplicas(tb, 3)}
	// The runner's own kind of client, which finds a promoted master by itself.
	rdb, err := redisstore.NewClient(waitroom.Config{RedisCluster: true, RedisURL: c.env()["REDIS_URL"]})
	if err != nil {
		tb.Fatal(err)
	}
	c.cc = rdb.(*redis.ClusterClient)
	tb.Cleanup(func() { _ = c.cc.Close() })
	ctx := context.Background()
	m, err := c.cc.MasterForKey(ctx, "wr:{"+room+"}:line")
	if err != nil {
		tb.Fatal(err)
	}
	c.master = m.Options().Addr
	_, mport, _ := net.SplitHostPort(c.master)
	for _, a := range c.c.Addrs {
		role, err := c.c.Node(a).Client().Do(ctx, "ROLE").Slice()
		if err == nil && len(role) > 2 && role[0] == "slave" && fmt.Sprint(role[2]) == mport {
			c.replica = a
		}
	}
	if c.replica == "" {
		tb.Fatalf("no replica of the room's master %s", c.master)
	}
	return c
}

func (c *cluster) env() map[string]string {
	url := "redis://" + c.c.Addrs[0] + "?addr=" + strings.Join(c.c.Addrs[1:], "&addr=")
	return map[string]string{"REDIS_URL": url, "REDIS_CLUSTER": "true"}
}
func (c *cluster) client() redis.UniversalClient { return c.cc }

// lag: the replica's link to its master is cut and cannot come back (it
// authenticates, from now on, as a user the master does not know), while
// the master goes on acknowledging writes.
func (c *cluster) lag(ctx context.Context) error {
	rc := c.c.Node(c.replica).Client()
	for _, cmd := range [][]any{{"CONFIG", "SET", "masteruser", "failover-lag"}, {"CONFIG", "SET", "masterauth", "not-the-password"},
		{"CLIENT", "KILL", "TYPE", "master"}} {
		if err := rc.Do(ctx, cmd...).Err(); err != nil {
			return fmt.Errorf("%v: %w", cmd, err)
		}
	}
	return nil
}

// failover: CLUSTER FAILOVER FORCE on the replica (the other masters
// vote; the frozen master cannot), TAKEOVER if no vote came within 5 s.
func (c *cluster) failover(ctx context.Context, freeze bool) error {
	if freeze {
		c.c.Node(c.master).Pause()
	}
	rc := c.c.Node(c.replica).Client()
	for _, mode := range []string{"FORCE", "TAKEOVER"} {
		if err := rc.Do(ctx, "CLUSTER", "FAILOVER", mode).Err(); err != nil {
			return fmt.Errorf("CLUSTER FAILOVER %s: %w", mode, err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if role, err := rc.Do(ctx, "ROLE").Slice(); err == nil && len(role) > 0 && role[0] == "master" {
				return nil
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return fmt.Errorf("replica %s not promoted", c.replica)
}

// rejoin: the old master, resumed, learns of the newer epoch and turns
// into the new master's replica by itself (its unreplicated writes are
// dropped by the full resync).
func (c *cluster) rejoin(ctx context.Context) error {
	n := c.c.Node(c.master)
	n.Resume()
	nc := n.Client()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if role, err := nc.Do(ctx, "ROLE").Slice(); err == nil && len(role) > 3 && role[0] == "slave" && role[3] == "connected" {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("old master %s did not rejoin as a replica", c.master)
}
