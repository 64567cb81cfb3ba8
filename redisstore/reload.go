package redisstore

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// reloadOnNetworkError reloads a cluster client's slot map after a call
// fails on the network (a timeout, a refused or dropped connection): a
// master that stops answering keeps its slots in go-redis's map until its
// periodic reload (60 s), since no node answers MOVED for them, so without
// this every call for its rooms would time out until it came back, long
// after its replica was promoted (issue 24; docs/design.md, "Failover").
// go-redis coalesces the reloads (one at a time, 200 ms apart at most).
type reloadOnNetworkError struct{ cc *redis.ClusterClient }

func (h reloadOnNetworkError) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		h.check(err)
		return conn, err
	}
}

func (h reloadOnNetworkError) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.check(err)
		return err
	}
}

func (h reloadOnNetworkError) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.check(err)
		return err
	}
}

func (h reloadOnNetworkError) check(err error) {
	if networkError(err) {
		h.cc.ReloadState(context.Background())
	}
}

// networkError: the node did not answer, as opposed to an answer that is
// an error (a script's, NOSCRIPT, MOVED) or a caller that gave up.
func networkError(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, context.DeadlineExceeded)
}

// unsent says a call failed before its command left this process: no
// connection to be had (the pool's wait, or a dial refused), so nothing of
// it ran. The store's scripts are never retried (once), so a dial error is
// the only attempt's.
func unsent(err error) bool {
	var op *net.OpError
	return errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrPoolExhausted) || errors.Is(err, redis.ErrClosed) ||
		errors.As(err, &op) && op.Op == "dial"
}
