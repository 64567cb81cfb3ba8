package redisstore_test

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

// A master that stops answering (frozen here; a lost host alike) kept its
// slots in the cluster client's map until its periodic reload (go-redis:
// every 60 s): every call for its rooms timed out and answered 503 until
// the old master came back (issue 24, make bench-failover). After a
// network error the store's cluster client reloads the map, so the calls
// find the promoted replica within a few.
func TestClusterClientFindsThePromotedReplicaCluster(t *testing.T) {
	c := redistest.StartClusterWithReplicas(t, 3)
	cfg := testConfig()
	cfg.RedisCluster, cfg.RedisURL = true, "redis://"+c.Addrs[0]+"?addr="+strings.Join(c.Addrs[1:], "&addr=")
	rdb, err := redisstore.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	s := redisstore.New(rdb, cfg)
	ctx := context.Background()
	if _, err := s.Enter(ctx, "r", waitroom.Unlimited("u1")); err != nil {
		t.Fatal(err)
	}
	master, err := rdb.(*redis.ClusterClient).MasterForKey(ctx, "wr:{r}:line")
	if err != nil {
		t.Fatal(err)
	}
	replica := replicaOf(t, c, master.Options().Addr)
	redistest.WaitLinkUp(t, replica.Addr)
	c.Node(master.Options().Addr).Pause()
	promote(t, replica)
	for i := 0; i < 8; i++ {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := s.Position(cctx, "r", waitroom.Unlimited("u1"))
		cancel()
		if err == nil {
			t.Logf("the call %d after the failover found the promoted replica", i+1)
			return
		}
	}
	t.Fatal("8 calls after the failover all failed: the client still sends the room's slot to the frozen master")
}

func replicaOf(t *testing.T, c *redistest.Cluster, master string) *redistest.Server {
	t.Helper()
	_, port, _ := net.SplitHostPort(master)
	for _, a := range c.Addrs {
		role, err := c.Node(a).Client().Do(context.Background(), "ROLE").Slice()
		if err == nil && len(role) > 2 && role[0] == "slave" && fmt.Sprint(role[2]) == port {
			return c.Node(a)
		}
	}
	t.Fatalf("no replica of %s", master)
	return nil
}

// promote makes replica a master without its frozen master's consent.
func promote(t *testing.T, replica *redistest.Server) {
	t.Helper()
	rc := replica.Client()
	if err := rc.Do(context.Background(), "CLUSTER", "FAILOVER", "TAKEOVER").Err(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if role, err := rc.Do(context.Background(), "ROLE").Slice(); err == nil && len(role) > 0 && role[0] == "master" {
			return
		}
	}
	t.Fatal("the replica was not promoted")
}
