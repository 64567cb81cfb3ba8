package redisstore

import (
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
)

// Timeouts and retries short enough that a dead store is answered with 503
// within a few seconds, long enough for a healthy one under load.
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
// cluster-mode endpoint (ElastiCache Serverless, cluster mode enabled; more
// seed nodes may be added as ?addr=host:port). rediss:// enables TLS.
func NewClient(cfg waitroom.Config, creds Credentials) (redis.UniversalClient, error) {
	opt := redis.UniversalOptions{
		IsClusterMode: cfg.RedisCluster,
		DialTimeout:   dialTimeout, ReadTimeout: ioTimeout, WriteTimeout: ioTimeout, PoolTimeout: poolTimeout,
		MaxRetries: 1, DialerRetries: 1,
	}
	if cfg.RedisCluster {
		c, err := redis.ParseClusterURL(cfg.RedisURL)
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		opt.Addrs, opt.Username, opt.Password, opt.TLSConfig = c.Addrs, c.Username, c.Password, c.TLSConfig
	} else {
		c, err := redis.ParseURL(cfg.RedisURL)
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		opt.Addrs, opt.Username, opt.Password, opt.TLSConfig, opt.DB = []string{c.Addr}, c.Username, c.Password, c.TLSConfig, c.DB
	}
	if creds.Password != "" {
		opt.Username, opt.Password = creds.Username, creds.Password
	}
	return redis.NewUniversalClient(&opt), nil
}
