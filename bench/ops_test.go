package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/awslambda"
	"github.com/waitroom/waitroom/bench/spike/sim"
	"github.com/waitroom/waitroom/httpapi"
	"github.com/waitroom/waitroom/orderapi"
	"github.com/waitroom/waitroom/redisstore"
)

// Below this many ops the framework is only probing (b.N = 1): skip redis-benchmark.
const minOps = 1000

func api(c redisstore.Client, cfg waitroom.Config, orders httpapi.OrderPlacer) *httpapi.API {
	return &httpapi.API{Config: cfg, Queue: redisstore.New(c, cfg), Orders: orders}
}

// BenchmarkEnter: POST /queue/enter for a new user, through API.Route, vs
// EVALSHA enter.lua for random new users.
func BenchmarkEnter(b *testing.B) {
	c := client(b, concurrency)
	flush(b, c)
	a := api(c, config(), nil)
	var seq atomic.Int64
	ops, p50, p99 := parallel(b, concurrency, func(_ *rand.Rand, _ int) error {
		u := uid("e", int(seq.Add(1)))
		resp := a.Route(context.Background(), event(http.MethodPost, "/queue/enter", u, nil, map[string]string{"room": "bench"}))
		if resp.StatusCode != 200 {
			return fmt.Errorf("enter: %d %s", resp.StatusCode, resp.Body)
		}
		return nil
	})
	if b.N < minOps {
		return
	}
	// The script call of Store.Enter for a new user, as it sends it (the
	// limiter off), each replay a new random user.
	calls := recordCalls(b, c, uid("r", 0), "r__rand_int__", func(rc *redis.Client) error {
		_, err := redisstore.New(rc, config()).Enter(context.Background(), "bench", waitroom.Unlimited("h:"+uid("r", 0)))
		return err
	})
	rb := redisBenchmark(b, concurrency, b.N, 1_000_000_000, calls[0]...)
	finish(b, sim.MicroOp{Name: "enter", Path: "Route POST /queue/enter (pipeline: EVALSHA enter + SADD rooms)", Script: "EVALSHA enter.lua", Concurrency: concurrency,
		GoOpsPerSec: ops, GoP50Us: p50, GoP99Us: p99, RedisBenchPerSec: rb})
}

// BenchmarkPosition: GET /queue/position of a random waiting user among 10k.
func BenchmarkPosition(b *testing.B) {
	const waiting = 10_000
	c := client(b, concurrency)
	flush(b, c)
	fillLine(b, c, "bench", "u", 0, waiting)
	a := api(c, config(), nil)
	q := map[string]string{"room": "bench"}
	ops, p50, p99 := parallel(b, concurrency, func(r *rand.Rand, _ int) error {
		resp := a.Route(context.Background(), event(http.MethodGet, "/queue/position", uid("u", r.IntN(waiting)), nil, q))
		if resp.StatusCode != 200 || !strings.Contains(resp.Body, "WAITING") {
			return fmt.Errorf("position: %d %s", resp.StatusCode, resp.Body)
		}
		return nil
	})
	if b.N < minOps {
		return
	}
	calls := recordCalls(b, c, uid("u", 0), "u__rand_int__", func(rc *redis.Client) error {
		_, err := redisstore.New(rc, config()).Position(context.Background(), "bench", waitroom.Unlimited("h:"+uid("u", 0)))
		return err
	})
	rb := redisBenchmark(b, concurrency, b.N, waiting, calls[0]...)
	finish(b, sim.MicroOp{Name: "position", Path: "Route GET /queue/position (EVALSHA position), 10k waiting", Script: "EVALSHA position.lua", Concurrency: concurrency,
		GoOpsPerSec: ops, GoP50Us: p50, GoP99Us: p99, RedisBenchPerSec: rb})
}

// refusing is a downstream that answers at once and refuses (409), so the
// gate releases the lock and keeps the token: the gate check without an order.
type refusing struct{}

func (refusing) PlaceOrder(context.Context, orderapi.Request) (waitroom.StoredAnswer, error) {
	return waitroom.StoredAnswer{Status: http.StatusConflict, Body: `{"error":"out_of_stock"}`}, nil
}

// BenchmarkGateCheck: POST /orders with a valid token and an instant
// downstream: BeginOrder (order_begin.lua) + ReleaseOrder (unlock.lua).
func BenchmarkGateCheck(b *testing.B) {
	const users = 10_000
	c := client(b, concurrency)
	flush(b, c)
	token := "bench.AAAAAAAAAAAAAAAAAAAAAA"
	exp := time.Now().Add(time.Hour).UnixMilli()
	ctx := context.Background()
	for i := 0; i < users; i += 1000 {
		p := c.Pipeline()
		for j := i; j < i+1000; j++ {
			p.Set(ctx, "wr:{bench}:u:h:"+uid("g", j), strconv.FormatInt(exp, 10)+":"+token, time.Hour) // X-User-Id names h:<id>
		}
		if _, err := p.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	a := api(c, config(), refusing{})
	hdr := map[string]string{"x-entry-token": token}
	ops, p50, p99 := parallel(b, concurrency, func(r *rand.Rand, _ int) error {
		resp := a.Route(ctx, event(http.MethodPost, "/orders", uid("g", r.IntN(users)), hdr, nil))
		if resp.StatusCode != http.StatusConflict {
			return fmt.Errorf("order: %d %s", resp.StatusCode, resp.Body)
		}
		return nil
	})
	if b.N < minOps {
		return
	}
	// The two scripts of one gate check as the store sends them, each at the
	// same concurrency; one check costs the sum of their times.
	calls := recordCalls(b, c, uid("g", 0), "g__rand_int__", func(rc *redis.Client) error {
		s := redisstore.New(rc, config())
		l, err := s.BeginOrder(ctx, waitroom.Unlimited("h:"+uid("g", 0)), waitroom.OrderAttempt{Room: "bench", Token: token})
		if err != nil {
			return err
		}
		return s.ReleaseOrder(ctx, l)
	})
	if len(calls) != 2 {
		b.Fatalf("a gate check made %d script calls, want order_begin and unlock: %q", len(calls), calls)
	}
	rb1 := redisBenchmark(b, concurrency, b.N, users, calls[0]...)
	rb2 := redisBenchmark(b, concurrency, b.N, users, calls[1]...)
	finish(b, sim.MicroOp{Name: "gate check", Path: "Route POST /orders, instant 409 downstream (EVALSHA order_begin + EVALSHA unlock)", Script: "EVALSHA order_begin.lua, then unlock.lua (1/(1/a+1/b))", Concurrency: concurrency,
		GoOpsPerSec: ops, GoP50Us: p50, GoP99Us: p99, RedisBenchPerSec: 1 / (1/rb1 + 1/rb2)})
}

// BenchmarkAdmitBatch: one admit invocation of one batch of 10 through the
// Lambda handler (AdmitFunction → Admitter → AdmitBatch), one admitter, as
// in production; the budget refills far faster than batches run so that it
// never limits.
func BenchmarkAdmitBatch(b *testing.B) {
	const batch = 10
	c := client(b, 4)
	flush(b, c)
	ctx := context.Background()
	cfg := config()
	cfg.AdmitRatePerSec, cfg.AdmitInterval = 1_000_000, 10*time.Microsecond // batch of 10, refilled in 10 µs
	need := batch * (b.N + 10)
	fillLine(b, c, "bench", "a", 0, need)
	c.SAdd(ctx, "wr:rooms", "bench")
	store := redisstore.New(c, cfg)
	fn := awslambda.AdmitFunction(&waitroom.Admitter{Queue: store, Interval: cfg.AdmitInterval, Batches: 1, Rand: func() float64 { return 0 }}, nil)
	ev := json.RawMessage(`{"source":"aws.events","detail-type":"Scheduled Event","detail":{}}`)
	ops, p50, p99 := parallel(b, 1, func(_ *rand.Rand, _ int) error {
		res, err := fn(ctx, ev)
		if err != nil || res.Admitted != batch {
			return fmt.Errorf("admit: %+v %v", res, err)
		}
		return nil
	})
	if b.N < minOps {
		return
	}
	fillLine(b, c, "bench", "a", need, batch*(b.N+10))
	// The admit script's call as the store sends it (its token parts are
	// replayed as they were drawn: each batch gives them to other users).
	calls := recordCalls(b, c, "", "", func(rc *redis.Client) error {
		_, err := waitroom.RunBatch(ctx, redisstore.New(rc, cfg))
		return err
	})
	rb := redisBenchmark(b, 1, b.N, 1_000_000_000, calls[0]...)
	finish(b, sim.MicroOp{Name: "admit batch", Path: "AdmitFunction (1 batch of 10): SMEMBERS rooms + EVALSHA admit", Script: "EVALSHA admit.lua (10 users)", Concurrency: 1,
		GoOpsPerSec: ops, GoP50Us: p50, GoP99Us: p99, RedisBenchPerSec: rb})
}
