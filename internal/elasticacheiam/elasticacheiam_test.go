package elasticacheiam_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/waitroom/waitroom/internal/elasticacheiam"
)

// The example credentials and time of AWS's SigV4 documentation.
const (
	akid   = "AKIDEXAMPLE"
	secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
)

var exampleTime = time.Date(2015, 8, 30, 12, 36, 0, 0, time.UTC)

func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// signingKey derives the SigV4 key by hand: HMAC chain over date, region,
// service and "aws4_request", starting from "AWS4" + secret.
func signingKey(date, region, service string) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), date)
	k = hmacSHA256(k, region)
	k = hmacSHA256(k, service)
	return hmacSHA256(k, "aws4_request")
}

// The derivation above reproduces AWS's documented example key (General
// Reference, "Examples of how to derive a signing key for Signature Version
// 4": iam, us-east-1, 20150830), so it can judge the code under test.
func TestSigningKeyMatchesAWSExample(t *testing.T) {
	const documented = "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9"
	if got := hex.EncodeToString(signingKey("20150830", "us-east-1", "iam")); got != documented {
		t.Fatalf("signing key %s, want AWS's %s", got, documented)
	}
}

// TestTokenKnownAnswer pins the token: the SigV4 steps are written out here
// (canonical request, string to sign, signature), and the resulting tokens
// were also computed separately with Python's hmac/hashlib.
func TestTokenKnownAnswer(t *testing.T) {
	const scope = "20150830/us-east-1/elasticache/aws4_request"
	const credential = "X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Felasticache%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=900"
	cases := []struct {
		name       string
		serverless bool
		session    string
		query      string // canonical query: keys sorted, values URI-encoded
		pinned     string // the signature computed outside Go
	}{
		{"serverless", true, "",
			"Action=connect&ResourceType=ServerlessCache&User=waitroom-app&X-Amz-Algorithm=AWS4-HMAC-SHA256&" + credential + "&X-Amz-SignedHeaders=host",
			"ca58d1b8b01d16b49909bd4f66cf52ff7f81bf49dbe22075bb97f37d7c208f1f"},
		{"replication group", false, "",
			"Action=connect&User=waitroom-app&X-Amz-Algorithm=AWS4-HMAC-SHA256&" + credential + "&X-Amz-SignedHeaders=host",
			"88c618bbfbb092fb25d06d9d41fa233a4cf9708a1dd9518bd9762dcdea1c8b38"},
		{"session credentials (Lambda's)", true, "IQoJb3JpZ2luX2VjEXAMPLE/+token=",
			"Action=connect&ResourceType=ServerlessCache&User=waitroom-app&X-Amz-Algorithm=AWS4-HMAC-SHA256&" + credential +
				"&X-Amz-Security-Token=IQoJb3JpZ2luX2VjEXAMPLE%2F%2Btoken%3D&X-Amz-SignedHeaders=host",
			"e43478f6bfbea748cff33898403d9b19d9b50d09bcdb0508ad7b07f6cb2d094a"},
	}
	for _, c := range cases {
		canonical := "GET\n/\n" + c.query + "\nhost:waitroom-cache\n\nhost\n" +
			"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" // SHA-256 of the empty body
		digest := sha256.Sum256([]byte(canonical))
		toSign := "AWS4-HMAC-SHA256\n20150830T123600Z\n" + scope + "\n" + hex.EncodeToString(digest[:])
		signature := hex.EncodeToString(hmacSHA256(signingKey("20150830", "us-east-1", "elasticache"), toSign))
		if signature != c.pinned {
			t.Fatalf("%s: the hand-computed signature %s differs from the pinned %s", c.name, signature, c.pinned)
		}
		want := "waitroom-cache/?" + c.query + "&X-Amz-Signature=" + signature

		creds := aws.Credentials{AccessKeyID: akid, SecretAccessKey: secret, SessionToken: c.session}
		cache := elasticacheiam.Cache{User: "waitroom-app", Name: "waitroom-cache", Region: "us-east-1", Serverless: c.serverless}
		got, err := elasticacheiam.Sign(context.Background(), cache, creds, exampleTime.In(time.FixedZone("CEST", 7200)))
		if err != nil || got != want {
			t.Errorf("%s:\n got %s (%v)\nwant %s", c.name, got, err, want)
		}
	}
}

// countingCreds counts how often the provider asks for credentials (once
// per signing).
type countingCreds struct {
	n       atomic.Int64
	expires time.Time
}

func (c *countingCreds) Retrieve(context.Context) (aws.Credentials, error) {
	c.n.Add(1)
	return aws.Credentials{AccessKeyID: akid, SecretAccessKey: secret, CanExpire: !c.expires.IsZero(), Expires: c.expires}, nil
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

var cache = elasticacheiam.Cache{User: "waitroom-app", Name: "waitroom-cache", Region: "eu-west-1", Serverless: true}

// A burst of new connections signs once; the token is signed again after
// 10 minutes, well inside its 15-minute validity.
func TestProviderReusesTokenThenResigns(t *testing.T) {
	creds, clk := &countingCreds{}, &clock{now: exampleTime}
	p, err := elasticacheiam.NewProvider(cache, creds, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	tokens := make([]string, 64)
	var wg sync.WaitGroup
	for i := range tokens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			user, token, err := p.Credentials(context.Background())
			if err != nil || user != "waitroom-app" {
				t.Errorf("%q %v", user, err)
			}
			tokens[i] = token
		}()
	}
	wg.Wait()
	for _, tok := range tokens {
		if tok != tokens[0] || !strings.Contains(tok, "X-Amz-Date=20150830T123600Z") || !strings.Contains(tok, "X-Amz-Expires=900") {
			t.Fatalf("burst: %q vs %q", tok, tokens[0])
		}
	}
	if n := creds.n.Load(); n != 1 {
		t.Fatalf("a burst of %d connections signed %d times", len(tokens), n)
	}
	clk.Advance(10*time.Minute - time.Second)
	if tok, _ := p.Token(context.Background()); tok != tokens[0] || creds.n.Load() != 1 {
		t.Fatalf("re-signed before 10 minutes")
	}
	clk.Advance(time.Second)
	tok, _ := p.Token(context.Background())
	if tok == tokens[0] || !strings.Contains(tok, "X-Amz-Date=20150830T124600Z") || creds.n.Load() != 2 {
		t.Fatalf("not re-signed after 10 minutes: %s (%d signings)", tok, creds.n.Load())
	}
}

// Session credentials that expire sooner than the token would be reused
// end its reuse: a token never outlives the keys that signed it.
func TestProviderResignsWhenCredentialsExpire(t *testing.T) {
	clk := &clock{now: exampleTime}
	creds := &countingCreds{expires: exampleTime.Add(3 * time.Minute)}
	p, _ := elasticacheiam.NewProvider(cache, creds, clk.Now)
	first, _ := p.Token(context.Background())
	clk.Advance(3 * time.Minute)
	if second, _ := p.Token(context.Background()); second == first || creds.n.Load() != 2 {
		t.Fatalf("kept a token past its credentials' expiry (%d signings)", creds.n.Load())
	}
	if _, err := elasticacheiam.NewProvider(elasticacheiam.Cache{User: "u", Name: "c"}, creds, nil); err == nil {
		t.Fatal("a provider without a region")
	}
}
