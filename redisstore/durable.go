package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
)

// errNotReplicated: with DURABLE_WRITES=wait, a gate write that no replica
// acknowledged within waitroom.DurableWaitTimeout. A failover now could
// lose it, so the gate answers 503 rather than go on.
var errNotReplicated = errors.New("DURABLE_WRITES=wait: the write reached no replica in time")

// nodeClient is the one node that holds key: for a cluster client its
// slot's master, whose pipeline runs on one connection; a plain client is
// that node already. WAIT counts the replicas that have every write of
// its own connection, so it must follow the script on the same one.
func (s *Store) nodeClient(ctx context.Context, key string) (Client, error) {
	if cc, ok := s.rdb.(interface {
		MasterForKey(context.Context, string) (*redis.Client, error)
	}); ok {
		return cc.MasterForKey(ctx, key)
	}
	return s.rdb, nil
}

// runGateWrite runs one of the gate's writing scripts. With
// DURABLE_WRITES=wait the script and WAIT 1 travel in one pipeline on one
// connection (still one round trip; a script cannot call WAIT itself), and
// replicated says whether a replica acknowledged the script's writes. A
// store that refuses WAIT (ElastiCache Serverless) fails the call, with a
// message that names the variable.
func (s *Store) runGateWrite(ctx context.Context, script *luaScript, keys []string, args ...any) (reply any, replicated bool, err error) {
	if !s.durable {
		reply, err = script.run(ctx, s.rdb, keys, args...).Result()
		return reply, false, err
	}
	node, err := s.nodeClient(ctx, keys[0])
	if err != nil {
		return nil, false, err
	}
	run := func(eval func(p redis.Pipeliner) *redis.Cmd) (*redis.Cmd, *redis.IntCmd, error) {
		var res *redis.Cmd
		var wait *redis.IntCmd
		_, err := node.Pipelined(ctx, func(p redis.Pipeliner) error {
			res = eval(p)
			wait = redis.NewIntCmd(ctx, "WAIT", 1, waitroom.DurableWaitTimeout.Milliseconds())
			return p.Process(ctx, wait)
		})
		return res, wait, err
	}
	res, wait, err := run(func(p redis.Pipeliner) *redis.Cmd { return script.evalSha(ctx, p, keys, args...) })
	if isNoScript(res.Err()) { // the node lost its script cache
		res, wait, err = run(func(p redis.Pipeliner) *redis.Cmd { return script.eval(ctx, p, keys, args...) })
	}
	s.reloadAfter(res.Err())
	if res.Err() != nil {
		return nil, false, res.Err()
	}
	if wait.Err() != nil {
		return res.Val(), false, fmt.Errorf("DURABLE_WRITES=wait: the store refused WAIT (%w); set DURABLE_WRITES=off where it offers no replica to wait for (ElastiCache Serverless)", wait.Err())
	}
	if err != nil {
		return res.Val(), false, err
	}
	return res.Val(), wait.Val() >= 1, nil
}

// unavailableUnlessReplicated is the gate's answer to a durable write that
// no replica has: 503, so that nothing goes on from a write a failover
// could take back.
func (s *Store) unavailableUnlessReplicated(replicated bool, err error) error {
	if err != nil {
		return waitroom.Unavailable(err)
	}
	if s.durable && !replicated {
		return waitroom.Unavailable(errNotReplicated)
	}
	return nil
}

// reloadAfter reloads a cluster client's slot map after a call on one of
// its nodes met a node that did not answer or no longer holds the slot
// (MOVED): the node's own client follows neither (reload.go).
func (s *Store) reloadAfter(err error) {
	cc, ok := s.rdb.(*redis.ClusterClient)
	if ok && (networkError(err) || redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "CLUSTERDOWN")) {
		cc.ReloadState(context.Background())
	}
}
