package lambdaenv

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/envconfig"
	"github.com/waitroom/waitroom/internal/elasticacheiam"
	"github.com/waitroom/waitroom/redisstore"
)

// awsEnv gives the default credential chain what Lambda gives it: keys in
// the environment and the region; no shared files from this machine.
func awsEnv(t *testing.T, region string) {
	none := filepath.Join(t.TempDir(), "none")
	t.Setenv("AWS_CONFIG_FILE", none)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	t.Setenv("AWS_ACCESS_KEY_ID", "ASIAEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "example-secret")
	t.Setenv("AWS_SESSION_TOKEN", "example-session")
	t.Setenv("AWS_REGION", region)
	t.Setenv("AWS_DEFAULT_REGION", "")
}

// With REDIS_IAM_USER the function signs tokens for the configured cache
// and user with the keys and region of its environment, at no network cost.
func TestIAMFromLambdaEnvironment(t *testing.T) {
	awsEnv(t, "eu-central-1")
	opt, err := iamCredentials(context.Background(), waitroom.RedisIAM{User: "waitroom-app", CacheName: "waitroom-cache", Serverless: true})
	if err != nil {
		t.Fatal(err)
	}
	p, ok := opt.(redisstore.CredentialsProvider)
	if !ok || p.MaxConnAge != elasticacheiam.MaxConnAge {
		t.Fatalf("option %#v", opt)
	}
	user, token, err := p.Credentials(context.Background())
	if err != nil || user != "waitroom-app" {
		t.Fatalf("%q %v", user, err)
	}
	for _, part := range []string{"waitroom-cache/?Action=connect&ResourceType=ServerlessCache&User=waitroom-app&",
		"X-Amz-Credential=ASIAEXAMPLE%2F", "%2Feu-central-1%2Felasticache%2Faws4_request", "X-Amz-Security-Token=example-session"} {
		if !strings.Contains(token, part) {
			t.Errorf("token %s lacks %s", token, part)
		}
	}
}

func TestIAMNeedsARegion(t *testing.T) {
	awsEnv(t, "")
	t.Setenv("REDIS_URL", "rediss://cache.example:6379")
	t.Setenv("REDIS_IAM_USER", "waitroom-app")
	t.Setenv("REDIS_IAM_CACHE_NAME", "waitroom-cache")
	_, err := load(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)), envconfig.Function)
	if err == nil || !strings.Contains(err.Error(), "REDIS_IAM_USER") || !strings.Contains(err.Error(), "region") {
		t.Fatalf("err %v", err)
	}
	t.Setenv("AWS_REGION", "eu-central-1")
	if env, err := load(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)), envconfig.Function); err != nil || !env.Config.RedisIAM.Enabled() {
		t.Fatalf("with a region: %v", err)
	}
}
