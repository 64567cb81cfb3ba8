// Package lambdaenv wires a Lambda function from its environment: config,
// cache authentication, Redis client, store, handlers. A bad configuration stops
// the function at init with a message naming the variable.
package lambdaenv

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/awslambda"
	"github.com/waitroom/waitroom/envconfig"
	"github.com/waitroom/waitroom/httpapi"
	"github.com/waitroom/waitroom/internal/elasticacheiam"
	"github.com/waitroom/waitroom/metrics"
	"github.com/waitroom/waitroom/orderapi"
	"github.com/waitroom/waitroom/redisstore"
)

// Env is what every function needs.
type Env struct {
	Config  waitroom.Config
	Store   *redisstore.Store
	Log     *slog.Logger
	Metrics *metrics.Recorder
}

// Load reads the environment with the function's defaults (which variables
// it requires) or exits the process: Lambda reports an init failure, and the
// log line says which variable is wrong.
func Load(d envconfig.Defaults) Env {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	env, err := load(context.Background(), log, d)
	if err != nil {
		log.Error("init failed", "err", err)
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return env
}

func load(ctx context.Context, log *slog.Logger, d envconfig.Defaults) (Env, error) {
	cfg, err := envconfig.FromEnv(d)
	if err != nil {
		return Env{}, err
	}
	var opts []redisstore.Option
	if cfg.RedisIAM.Enabled() {
		iam, err := iamCredentials(ctx, cfg.RedisIAM)
		if err != nil {
			return Env{}, err
		}
		opts = append(opts, iam)
	}
	rdb, err := redisstore.NewClient(cfg, opts...)
	if err != nil {
		return Env{}, err
	}
	return Env{Config: cfg, Store: redisstore.New(rdb, cfg), Log: log, Metrics: metrics.NewRecorder(os.Stdout)}, nil
}

// iamCredentials signs the cache's IAM tokens with the function role's
// credentials from the default chain (Lambda's environment) in Lambda's
// region. Nothing is fetched here: the first connection signs its token.
func iamCredentials(ctx context.Context, iam waitroom.RedisIAM) (redisstore.Option, error) {
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("REDIS_IAM_USER: AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		return nil, fmt.Errorf("REDIS_IAM_USER: no AWS region (AWS_REGION is unset)")
	}
	cache := elasticacheiam.Cache{User: iam.User, Name: iam.CacheName, Region: awsCfg.Region, Serverless: iam.Serverless}
	p, err := elasticacheiam.NewProvider(cache, awsCfg.Credentials, nil)
	if err != nil {
		return nil, err
	}
	return redisstore.CredentialsProvider{Credentials: p.Credentials, MaxConnAge: elasticacheiam.MaxConnAge}, nil
}

// API returns the HTTP handlers; only the order gate needs ORDER_API_URL.
func (e Env) API() *httpapi.API {
	api := &httpapi.API{Config: e.Config, Queue: e.Store, Applied: e.Store, Metrics: e.Metrics, Log: e.Log}
	if e.Config.OrderAPIURL != "" {
		api.Orders = orderapi.New(e.Config.OrderAPIURL, e.Config.OrderTimeout)
	}

	return api
}

// AdmitHandler returns the admit function's handler: one invocation's
// batches, their metrics summed about once a second and flushed before it returns.
func (e Env) AdmitHandler() func(context.Context, json.RawMessage) (awslambda.AdmitResult, error) {
	m := awslambda.NewAdmitMetrics(e.Metrics)
	admit := awslambda.AdmitFunction(&waitroom.Admitter{
		Queue:    e.Store,
		Interval: e.Config.AdmitInterval,
		Batches:  e.Config.AdmitBatches,
		OnBatch:  m.Observe,
	}, e.Log)
	return func(ctx context.Context, event json.RawMessage) (awslambda.AdmitResult, error) {
		defer m.Flush()
		return admit(ctx, event)
	}
}
