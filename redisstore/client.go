package redisstore

import (
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
)

// Timeouts and retries short enough that a dead store is answered with 503 within a few
// seconds, long enough for a healthy one under load.
const (
	dialTimeout = time.Second
	ioTimeout   = time.Second
	poolTimeout = time.Second
)

// Credentials override those of the URL (e.g. from Secrets Manager).
type Credentials struct {
	Username string
	Password string
}

// NewClient connects to cfg.RedisURL: one node, or with cfg.RedisCluster a
// cluster-mode endpoint (ElastiCache Serverless, cluster mode enabled).
// rediss:// enables TLS.
func NewClient(cfg waitroom.Config, creds Credentials) (redis.UniversalClient, error) {
	if cfg.RedisCluster {
		opt, err := redis.ParseClusterURL(cfg.RedisURL)
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		if creds.Password != "" {
			opt.Username, opt.Password = creds.Username, creds.Password
		}
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout, opt.PoolTimeout = dialTimeout, ioTimeout, ioTimeout, poolTimeout
		opt.MaxRetries, opt.DialerRetries = 1, 1
		return redis.NewClusterClient(opt), nil
	}
	opt, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	if creds.Password != "" {
		opt.Username, opt.Password = creds.Username, creds.Password
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout, opt.PoolTimeout = dialTimeout, ioTimeout, ioTimeout, poolTimeout
	opt.MaxRetries, opt.DialerRetries = 1, 1
	return redis.NewClient(opt), nil
}
