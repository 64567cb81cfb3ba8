// Package elasticacheiam makes the IAM authentication tokens of ElastiCache
// (Valkey 7.2+, Redis OSS 7+): a "connect" request presigned locally with
// SigV4 and the caller's AWS credentials, sent as the AUTH password of an
// IAM-enabled user. Signing needs no network call.
package elasticacheiam

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

const (
	// TokenLifetime is how long ElastiCache accepts a token for a new
	// connection (X-Amz-Expires); a connection, once open, stays open.
	TokenLifetime = 15 * time.Minute
	// reuseFor is how long one token is handed to new connections before it
	// is signed again: a burst of connections signs once, and the last one
	// to get it still has 5 minutes for clock skew and a slow handshake.
	reuseFor = 10 * time.Minute
	// MaxConnAge closes connections before ElastiCache ends IAM-authenticated
	// ones, at 12 hours.
	MaxConnAge = 11 * time.Hour

	service = "elasticache"
	// emptyPayloadHash is SHA-256 of the empty body of the GET request.
	emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// Cache names the IAM-enabled user and the cache it connects to.
type Cache struct {
	User       string // ElastiCache user id (IAM-enabled users have user name = user id)
	Name       string // serverless cache name or replication group id
	Region     string
	Serverless bool
}

// Sign returns the token for cache signed with creds at time at: the
// presigned URL http://<name>/?Action=connect&User=<user>[&ResourceType=ServerlessCache]
// without its scheme.
func Sign(ctx context.Context, cache Cache, creds aws.Credentials, at time.Time) (string, error) {
	q := url.Values{"Action": {"connect"}, "User": {cache.User}, "X-Amz-Expires": {strconv.Itoa(int(TokenLifetime / time.Second))}}
	if cache.Serverless {
		q.Set("ResourceType", "ServerlessCache")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, (&url.URL{Scheme: "http", Host: cache.Name, Path: "/", RawQuery: q.Encode()}).String(), nil)
	if err != nil {
		return "", err
	}
	signed, _, err := v4.NewSigner().PresignHTTP(ctx, creds, req, emptyPayloadHash, service, cache.Region, at)
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(signed, "http://"), nil
}

// Provider hands out tokens for one cache, signing a new one when the last
// is reuseFor old. It is safe for concurrent use.
type Provider struct {
	cache Cache
	creds aws.CredentialsProvider
	now   func() time.Time

	mu         sync.Mutex
	token      string
	signedAt   time.Time
	validUntil time.Time // signedAt + reuseFor, or earlier when the credentials expire first
}

// NewProvider returns a provider signing with creds (the default credential
// chain in Lambda: the function role's keys from its environment). now is
// time.Now when nil.
func NewProvider(cache Cache, creds aws.CredentialsProvider, now func() time.Time) (*Provider, error) {
	if cache.User == "" || cache.Name == "" || cache.Region == "" || creds == nil {
		return nil, errors.New("elasticacheiam: the user, the cache name, the region and credentials are required")
	}
	if now == nil {
		now = time.Now
	}
	return &Provider{cache: cache, creds: creds, now: now}, nil
}

// Credentials returns the user and a valid token, for go-redis's
// CredentialsProviderContext, which asks once per new connection.
func (p *Provider) Credentials(ctx context.Context) (username, password string, err error) {
	token, err := p.Token(ctx)
	if err != nil {
		return "", "", err
	}
	return p.cache.User, token, nil
}

// Token returns the current token, or signs a new one. Concurrent callers
// wait for one signing rather than each signing.
func (p *Provider) Token(ctx context.Context) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if p.token != "" && now.Before(p.validUntil) && !now.Before(p.signedAt) {
		return p.token, nil
	}
	creds, err := p.creds.Retrieve(ctx)
	if err != nil {
		return "", fmt.Errorf("elasticacheiam: AWS credentials: %w", err)
	}
	token, err := Sign(ctx, p.cache, creds, now)
	if err != nil {
		return "", fmt.Errorf("elasticacheiam: sign: %w", err)
	}
	p.token, p.signedAt, p.validUntil = token, now, now.Add(reuseFor)
	if creds.CanExpire && creds.Expires.Before(p.validUntil) {
		// A token signed with session credentials dies with them.
		p.validUntil = creds.Expires
	}
	return token, nil
}
