package redisstore_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// The abuse limiter's cost per request: position with the limiter off and
// on (both buckets), and enter on. Besides ns/op it reports the Redis
// commands each call runs (from INFO commandstats, EVALSHA and the
// commands inside the script alike): `go test -run '^$' -bench Limiter ./redisstore`.
func BenchmarkLimiter(b *testing.B) {
	srv := redistest.Start(b)
	rdb := srv.Client()
	for _, c := range []struct {
		name   string
		limits waitroom.Limits
		enter  bool
	}{
		{"position/off", waitroom.Limits{}, false},
		{"position/on", waitroom.Limits{ClientRatePerSec: 1e6, ClientBurst: 1e6, IPRatePerSec: 1e6, IPBurst: 1e6}, false},
		{"enter-again/off", waitroom.Limits{}, true},
		{"enter-again/on", waitroom.Limits{ClientRatePerSec: 1e6, ClientBurst: 1e6, IPRatePerSec: 1e6, IPBurst: 1e6}, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg := testConfig()
			cfg.Trust.Limits = c.limits
			s := redisstore.New(rdb, cfg)
			ctx, u := context.Background(), waitroom.Caller{User: "u", IP: "192.0.2.1"}
			if _, err := s.Enter(ctx, "bench", u); err != nil {
				b.Fatal(err)
			}
			before, usBefore := commands(b, rdb)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var err error
				if c.enter {
					_, err = s.Enter(ctx, "bench", u)
				} else {
					_, err = s.Position(ctx, "bench", u)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			after, usAfter := commands(b, rdb)
			b.ReportMetric(float64(after-before-1)/float64(b.N), "redis-cmds/op") // -1: the INFO itself
			b.ReportMetric(float64(usAfter-usBefore)/float64(b.N), "script-µs/op")
		})
	}
}

// commands is the number of commands Redis has run, scripts' included, and
// the server time spent in EVALSHA (the script with everything it calls).
func commands(b *testing.B, rdb *redis.Client) (n, evalUsec int64) {
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		for _, f := range strings.Split(line[strings.Index(line, ":")+1:], ",") {
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				c, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				n += c
			}
			if v, ok := strings.CutPrefix(f, "usec="); ok && strings.HasPrefix(line, "cmdstat_evalsha:") {
				evalUsec, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			}
		}
	}
	return n, evalUsec
}
