package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
)

// Timeouts and retries short enough that a dead store is answered with 503
// within a few seconds, long enough for a healthy one under load. The retry
// (MaxRetries) is plain commands' only: a script's call is sent once
// (script.go), since a call whose reply is late may have run.
const (
	dialTimeout = time.Second
	ioTimeout   = time.Second
	poolTimeout = time.Second
)

// Option adjusts the client NewClient returns.
type Option interface{ apply(*redis.UniversalOptions) }

// Credentials replace those of the URL when Password is set (a local
// Redis with an ACL user, for example).
type Credentials struct {
	Username string
	Password string
}

func (c Credentials) apply(o *redis.UniversalOptions) {
	if c.Password != "" {
		o.Username, o.Password = c.Username, c.Password
	}
}

// CredentialsProvider gives every new connection its credentials when it
// opens, as short-lived ones (ElastiCache IAM tokens) require, and closes
// connections older than MaxConnAge, before the server ends them.
type CredentialsProvider struct {
	Credentials func(ctx context.Context) (username, password string, err error)
	MaxConnAge  time.Duration
}

func (p CredentialsProvider) apply(o *redis.UniversalOptions) {
	o.CredentialsProviderContext = p.Credentials
	o.ConnMaxLifetime = p.MaxConnAge
}

// NewClient connects to cfg.RedisURL: one node, or with cfg.RedisCluster a
// cluster-mode endpoint (ElastiCache Serverless, cluster mode enabled; more
// seed nodes may be added as ?addr=host:port). rediss:// enables TLS.
func NewClient(cfg waitroom.Config, opts ...Option) (redis.UniversalClient, error) {
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
	for _, o := range opts {
		o.apply(&opt)
	}
	rdb := redis.NewUniversalClient(&opt)
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		cc.AddHook(reloadOnNetworkError{cc}) // a master that stops answering (reload.go)
	}
	return rdb, nil
}
