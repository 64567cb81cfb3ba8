package redisstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
)

// Issue 32: a caller whose address does not parse was counted under no
// address, its address buckets off. The handlers refuse such a request
// now (awslambda's TestUnparsableViewerAddressIsRefused); the limiter
// still never lets it through unlimited: every unparsable address shares
// one strict bucket, and only a caller with no address at all (tools,
// admission) skips it.
func TestUnparsableAddressIsLimitedStrictly(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		s, _ := newStore(t, engine, limitedConfig(waitroom.Limits{ClientRatePerSec: 1000, ClientBurst: 1000, IPRatePerSec: 0.001, IPBurst: 5}))
		refused := 0
		for i := 0; i < 8; i++ {
			ip := []string{"garbage", "999.1.1.1", "host.example"}[i%3]
			c := waitroom.Caller{User: fmt.Sprint("id", i), IP: ip}
			if _, err := s.Enter(context.Background(), "r", c); waitroom.ErrorCode(err) == waitroom.ERateLimited {
				refused++
			} else if err != nil {
				t.Fatal(err)
			}
		}
		if refused != 3 {
			t.Fatalf("%d of 8 enters from unparsable addresses refused; want 3 (one bucket of 5 for all)", refused)
		}
		calm := waitroom.Caller{User: "calm", IP: "198.51.100.1"}
		if _, err := s.Enter(context.Background(), "r", calm); err != nil {
			t.Fatalf("a caller with an address: %v", err)
		}
	})
}
