package elasticacheiam_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/envconfig"
	"github.com/waitroom/waitroom/internal/elasticacheiam"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// iamServer is a redis-server set up as ElastiCache is for IAM: the default
// user has no access, and the app's user takes one password, which the test
// sets to a token as ElastiCache would accept it.
type iamServer struct {
	*redistest.Server
	admin *redis.Client
}

func startIAMServer(t *testing.T) iamServer {
	srv := redistest.Start(t)
	boot := srv.Client()
	ctx := context.Background()
	for _, cmd := range [][]any{
		{"ACL", "SETUSER", "admin", "on", ">admin-password", "~*", "&*", "+@all"},
		{"ACL", "SETUSER", "default", "off"},
	} {
		if err := boot.Do(ctx, cmd...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "admin", Password: "admin-password"})
	t.Cleanup(func() { _ = admin.Close() })
	return iamServer{srv, admin}
}

// accept makes token the only password of the app's user.
func (s iamServer) accept(t *testing.T, token string) {
	t.Helper()
	if err := s.admin.Do(context.Background(), "ACL", "SETUSER", cache.User, "on", "resetpass", ">"+token, "~*", "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
}

func storeWith(t *testing.T, url string, p redisstore.CredentialsProvider) (*redisstore.Store, redis.UniversalClient) {
	t.Helper()
	cfg, err := envconfig.Load(func(k string) (string, bool) { return map[string]string{"REDIS_URL": url}[k], k == "REDIS_URL" }, envconfig.Function)
	if err != nil {
		t.Fatal(err)
	}
	cfg.OpenRooms = true // any room: credentials are this test's subject, not rooms
	rdb, err := redisstore.NewClient(cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	return redisstore.New(rdb, cfg), rdb
}

// The credentials path end to end against a real redis-server: the store
// connects as the IAM user with the provider's token, a wrong token is
// refused, and a new connection after the token was re-signed asks the
// provider again and authenticates with the new token.
func TestIAMTokenAuthenticatesAgainstRedis(t *testing.T) {
	srv := startIAMServer(t)
	ctx := context.Background()
	clk := &clock{now: time.Now()}
	p, err := elasticacheiam.NewProvider(cache, &countingCreds{}, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int64
	const maxAge = 300 * time.Millisecond // stands in for MaxConnAge
	provider := redisstore.CredentialsProvider{MaxConnAge: maxAge, Credentials: func(ctx context.Context) (string, string, error) {
		asked.Add(1)
		return p.Credentials(ctx)
	}}
	first, _ := p.Token(ctx)
	srv.accept(t, first)

	store, rdb := storeWith(t, srv.URL(), provider)
	if st, err := store.Enter(ctx, "iam", waitroom.Unlimited("alice")); err != nil || st.Status != waitroom.Ready {
		t.Fatalf("enter through the IAM user: %+v %v", st, err)
	}
	if who, err := rdb.Do(ctx, "ACL", "WHOAMI").Text(); err != nil || who != cache.User {
		t.Fatalf("connected as %q (%v), want %s", who, err, cache.User)
	}
	if asked.Load() == 0 {
		t.Fatal("the client never asked the provider")
	}

	// Wrong tokens: signed with other keys, or for another cache.
	other, _ := elasticacheiam.NewProvider(cache, aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: akid, SecretAccessKey: "not-the-secret"}, nil
	}), clk.Now)
	otherCache := cache
	otherCache.Name = "another-cache"
	elsewhere, _ := elasticacheiam.NewProvider(otherCache, &countingCreds{}, clk.Now)
	for name, wrong := range map[string]*elasticacheiam.Provider{"other keys": other, "other cache": elsewhere} {
		bad, badRDB := storeWith(t, srv.URL(), redisstore.CredentialsProvider{Credentials: wrong.Credentials, MaxConnAge: maxAge})
		if _, err := bad.Enter(ctx, "iam", waitroom.Unlimited("mallory")); err == nil {
			t.Errorf("%s: a wrong token was accepted", name)
		}
		if err := badRDB.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
			t.Errorf("%s: want WRONGPASS, got %v", name, err)
		}
	}

	// Ten minutes on, the provider signs a new token; the cache now takes
	// only that one. Connections recycled by age ask the provider again.
	clk.Advance(10 * time.Minute)
	second, _ := p.Token(ctx)
	if second == first {
		t.Fatal("the token was not re-signed")
	}
	srv.accept(t, second)
	before := asked.Load()
	time.Sleep(2 * maxAge)
	if st, err := store.Position(ctx, "iam", waitroom.Unlimited("alice")); err != nil || st.Status != waitroom.Ready {
		t.Fatalf("position after rotation: %+v %v", st, err)
	}
	if asked.Load() == before {
		t.Fatal("a new connection did not ask the provider again")
	}
	stale := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: cache.User, Password: first})
	defer stale.Close()
	if err := stale.Ping(ctx).Err(); err == nil {
		t.Fatal("the old token still connects after rotation")
	}
}
