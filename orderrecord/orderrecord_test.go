package orderrecord_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/dynamotest"
	"github.com/waitroom/waitroom/orderrecord"
)

func claim(attempt string) orderrecord.Claim {
	return orderrecord.Claim{Room: "sale", Token: "sale.tok-1", Attempt: attempt, Expires: time.Unix(2_000_000_000, 0)}
}

// A token is recorded once: a second attempt finds the first one's use;
// the same attempt again (a retried put whose answer was lost) is no
// second use; the item's TTL attribute is the token's expiry and its key
// a hash, never the token.
func TestRecordRefusesASecondUse(t *testing.T) {
	srv := dynamotest.Start(t)
	r, cfg := srv.Record(t)
	ctx := context.Background()
	for _, attempt := range []string{"a", "a"} {
		if prior, err := r.Claim(ctx, claim(attempt)); err != nil || prior != nil {
			t.Fatalf("claim by %s: prior %+v, err %v; want it recorded", attempt, prior, err)
		}
	}
	prior, err := r.Claim(ctx, claim("b"))
	if err != nil || prior == nil {
		t.Fatalf("second use: prior %+v, err %v; want the first use", prior, err)
	}
	item := dynamotest.Item(t, cfg, "sale", "sale.tok-1")
	if item[orderrecord.AttrExpires] != "2000000000" {
		t.Errorf("expiresAt %q, want the token's expiry 2000000000", item[orderrecord.AttrExpires])
	}
	for k, v := range item {
		if strings.Contains(v, "tok-1") {
			t.Errorf("attribute %s holds the token: %q", k, v)
		}
	}
	if !strings.HasPrefix(orderrecord.Key("sale", "sale.tok-1"), orderrecord.KeyPrefix+"sale#") {
		t.Errorf("key %q: want the prefix the IAM policy grants", orderrecord.Key("sale", "sale.tok-1"))
	}
}

// Many gates using one token at once: exactly one records it.
func TestRecordConcurrentClaimsOneWins(t *testing.T) {
	srv := dynamotest.Start(t)
	r, _ := srv.Record(t)
	var won, errs atomic.Int64
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prior, err := r.Claim(context.Background(), claim(strconv.Itoa(i)))
			switch {
			case err != nil:
				errs.Add(1)
			case prior == nil:
				won.Add(1)
			}
		}()
	}
	wg.Wait()
	if won.Load() != 1 || errs.Load() != 0 {
		t.Fatalf("%d claims won, %d failed; want exactly 1 and none", won.Load(), errs.Load())
	}
}

// Release gives the token back, but only the attempt's own use; Keep
// stores the answer of the attempt's own use, which a later claim with
// the same Idempotency-Key finds.
func TestRecordReleaseAndKeepTouchOnlyTheirOwnUse(t *testing.T) {
	srv := dynamotest.Start(t)
	r, _ := srv.Record(t)
	ctx := context.Background()
	mustClaim := func(c orderrecord.Claim) *orderrecord.Prior {
		t.Helper()
		p, err := r.Claim(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	mustClaim(claim("a"))
	if err := r.Release(ctx, claim("b")); err != nil {
		t.Fatal(err)
	}
	if mustClaim(claim("c")) == nil {
		t.Fatal("another attempt's release freed the token")
	}
	if err := r.Release(ctx, claim("a")); err != nil {
		t.Fatal(err)
	}
	keyed := claim("d")
	keyed.IdempotencyKey, keyed.RequestHash = "k1", "h1"
	if p := mustClaim(keyed); p != nil {
		t.Fatalf("after its release the token is still used: %+v", p)
	}
	answer := waitroom.StoredAnswer{Status: 201, Body: `{"order":1}`, ContentType: "application/json", RequestHash: "h1"}
	if err := r.Keep(ctx, claim("e"), waitroom.StoredAnswer{Status: 500}); err != nil { // not e's: left alone
		t.Fatal(err)
	}
	if err := r.Keep(ctx, keyed, answer); err != nil {
		t.Fatal(err)
	}
	again := claim("f")
	again.IdempotencyKey = "k1"
	p := mustClaim(again)
	if p == nil || !p.SameKey || p.RequestHash != "h1" || p.Answer == nil || *p.Answer != answer {
		t.Fatalf("prior %+v, want the same key's kept answer %+v", p, answer)
	}
	other := claim("g")
	other.IdempotencyKey = "k2"
	if p := mustClaim(other); p == nil || p.SameKey {
		t.Fatalf("another key: prior %+v, want a use that is not its own", p)
	}
	big := waitroom.StoredAnswer{Status: 201, Body: strings.Repeat("x", orderrecord.MaxAnswer)}
	if err := r.Keep(ctx, keyed, big); err != orderrecord.ErrTooLarge {
		t.Fatalf("keeping %d bytes: %v, want ErrTooLarge", len(big.Body), err)
	}
}

// A record that cannot be reached is an error, within the caller's
// deadline, never a claim.
func TestRecordUnreachableIsAnError(t *testing.T) {
	srv := dynamotest.Start(t)
	r, _ := srv.Record(t)
	srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	prior, err := r.Claim(ctx, claim("a"))
	if err == nil {
		t.Fatalf("claim on a stopped server: prior %+v and no error", prior)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %v", d)
	}
	t.Log(fmt.Sprint(err))
}
