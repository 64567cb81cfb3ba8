package failover

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/bench/spike/sim"
	"github.com/waitroom/waitroom/internal/dynamotest"
	"github.com/waitroom/waitroom/internal/runnertest"
	"github.com/waitroom/waitroom/localrun"
	"github.com/waitroom/waitroom/redisstore"
)

// scenario is one failover under traffic.
type scenario struct {
	Key, Name string
	Cluster   bool          // a 3-master cluster (else a primary and its replica)
	Lag       time.Duration // the replica receives nothing for this long before the failover (0: in sync)
	Freeze    bool          // SIGSTOP the old primary at the failover
	Durable   waitroom.DurableWrites
	Dedup     bool // the order API deduplicates by X-Waitroom-Token-Id
	Record    bool // the gate's order record on a dynalite (ORDER_RECORD_*: issue 33)
	Visitors  int  // arriving evenly over Arrive
	Buyers    int  // of them, entering first and ordering only once the replica lags
	Rate      float64
	Arrive    time.Duration // the lag starts this long after the first arrival (arrivals go on after it)
	Total     time.Duration // the traffic's deadline, from the start
	Rejoin    time.Duration // the old primary rejoins as a replica this long after the failover
}

const room = "sale"

// world is a scenario's running parts.
type world struct {
	topo    topology
	orders  *orderAPI
	runner  *localrun.Runner
	obs     *observer
	client  *client
	lagging chan struct{}
}

func (sc scenario) start(t testing.TB) *world {
	t.Helper()
	w := &world{orders: startOrderAPI(t, sc.Dedup), obs: newObserver(), lagging: make(chan struct{})}
	if sc.Cluster {
		w.topo = startCluster(t, room)
	} else {
		w.topo = startSingle(t)
	}
	env := map[string]string{"ORDER_API_URL": w.orders.url, "ORDER_ROOMS": room, "ADMIT_RATE_PER_SEC": strconv.FormatFloat(sc.Rate, 'f', -1, 64),
		"CLIENT_RATE_PER_SEC": "0", "IP_RATE_PER_SEC": "0", "VISITOR_RATE_PER_SEC": "0", "DURABLE_WRITES": string(sc.Durable), "ORDER_TIMEOUT_MS": "5000"}
	for k, v := range w.topo.env() {
		env[k] = v
	}
	if sc.Record {
		rec := dynamotest.Start(t).Config()
		env["ORDER_RECORD_TABLE"], env["ORDER_RECORD_ENDPOINT"] = rec.Table, rec.Endpoint
	}
	cfg := runnertest.Config(t, env)
	var err error
	var logTo io.Writer = io.Discard
	if os.Getenv("FAILOVER_LOG") != "" { // the runner's warnings, to see what a scenario met
		logTo = os.Stderr
	}
	if w.runner, err = localrun.Start(cfg, slog.New(slog.NewTextHandler(logTo, &slog.HandlerOptions{Level: slog.LevelWarn}))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.runner.Close)
	w.client = &client{base: w.runner.URL, room: room, obs: w.obs,
		http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}
	return w
}

// run plays the scenario: arrivals, the lag, the failover, the rejoin,
// the traffic to its end, then every ordered token sent once more.
func (sc scenario) run(t testing.TB) sim.FailoverScenario {
	t.Helper()
	w := sc.start(t)
	ctx, stop := context.WithTimeout(context.Background(), sc.Total)
	defer stop()
	visitors, answered, buyersDone := sc.visitors()
	seqs := newLineSampler(visitors)
	var bg sync.WaitGroup
	bg.Add(2)
	go func() { defer bg.Done(); seqs.sample(ctx, w.topo.client()) }()
	go func() { defer bg.Done(); probe(ctx, w.client) }()

	// Arrivals go on through the lag and for as long after the failover,
	// so that enters meet every phase.
	arrivals := sc.Arrive + 2*sc.Lag + time.Second
	var vw sync.WaitGroup
	for i, v := range visitors {
		vw.Add(1)
		go func() {
			defer vw.Done()
			if !v.buyer && !sleep(ctx, arrivals*time.Duration(i)/time.Duration(len(visitors))) {
				return
			}
			v.visit(ctx, w.client, w.topo.client(), w.lagging, answered)
		}()
	}
	sleep(ctx, sc.Arrive)
	rejoined := sc.failAndRejoin(t, ctx, w, buyersDone)
	vw.Wait()
	for _, v := range visitors {
		v.finish()
		if v.lost != "" {
			t.Logf("%s: lost %s %s (acked at %s): %s", sc.Key, v.kind(), v.user, v.ackedAt.Format("15:04:05.000"), v.lost)
		}
		if how := v.unordered(); how != "" {
			t.Logf("%s: %s %s %s", sc.Key, v.kind(), v.storeUser(), how)
		}
	}
	stop()
	bg.Wait()
	res := sc.measure(visitors, w, seqs)
	res.RejoinSeconds = rejoined.Seconds()
	res.ReuseAttempts, res.ReuseRefused = reuse(w.client, visitors)
	t2 := w.orders.tally()
	res.Orders, res.TokensOrdered, res.MaxOrdersPerToken, res.TokensOrderedTwice, res.UsersOrderedTwice, res.Replays =
		t2.Orders, t2.Tokens, t2.MaxPerToken, t2.TokensTwice, t2.UsersTwice, t2.Replays
	for _, wrong := range w.obs.wrong {
		t.Logf("%s: wrong answer: %s", sc.Key, wrong)
	}
	return res
}

// visitors are the scenario's people, buyers first, every other one
// anonymous (its place its ticket; the rest accounts), so that both kinds
// meet every phase and each kind's buyers order; answered counts a
// buyer's first answer to its order, buyersDone closes when all have one.
func (sc scenario) visitors() ([]*visitor, func(), <-chan struct{}) {
	vs := make([]*visitor, sc.Visitors)
	for i := range vs {
		vs[i] = &visitor{user: fmt.Sprintf("%s-v%d", sc.Key, i), anon: i%2 == 1, buyer: i < sc.Buyers}
	}
	done := make(chan struct{})
	var mu sync.Mutex
	left := sc.Buyers
	if left == 0 {
		close(done)
	}
	var once sync.Once
	answered := func() {
		mu.Lock()
		defer mu.Unlock()
		if left--; left == 0 {
			once.Do(func() { close(done) })
		}
	}
	return vs, answered, done
}

// failAndRejoin: the replica lags (every buyer then orders), the failover
// once the lag has lasted and the buyers have their answers (at most 5 s
// more), the old primary back as a replica later. It returns the time from
// the failover to the rejoin.
func (sc scenario) failAndRejoin(t testing.TB, ctx context.Context, w *world, buyersDone <-chan struct{}) time.Duration {
	if sc.Lag > 0 {
		if err := w.topo.lag(ctx); err != nil {
			t.Fatal(err)
		}
		w.obs.enter("lag")
	}
	close(w.lagging)
	sleep(ctx, sc.Lag)
	select {
	case <-buyersDone:
	case <-time.After(5 * time.Second):
		t.Logf("%s: not every buyer had an answer after the lag", sc.Key)
	}
	w.obs.enter("after")
	failed := time.Now()
	if err := w.topo.failover(context.Background(), sc.Freeze); err != nil {
		t.Fatal(err)
	}
	sleep(ctx, sc.Rejoin)
	if err := w.topo.rejoin(context.Background()); err != nil {
		t.Fatal(err)
	}
	return time.Since(failed)
}

// reuse sends every ordered token once more with a new Idempotency-Key,
// as one who tries to buy twice with one token: the attempts and how many
// the gate refused.
func reuse(c *client, vs []*visitor) (attempts, refused int) {
	for _, v := range vs {
		if v.ordered == "" {
			continue
		}
		attempts++
		if a := c.order(context.Background(), v, v.ordered, newKey()); a.status == http.StatusForbidden {
			refused++
		}
	}
	return attempts, refused
}

// probe asks every visitor route of its own and the health check every
// 25 ms, so that the recovery time does not depend on the visitors' polls;
// it is an account that carries no place, so that its polls reach the store.
func probe(ctx context.Context, c *client) {
	health, probe := &visitor{anon: true}, &visitor{user: "probe"}
	for pause(ctx, 25*time.Millisecond) {
		c.call(ctx, "healthz", http.MethodGet, "/healthz", health, nil)
		c.enter(ctx, probe)
		c.position(ctx, probe)
	}
}

// lineSampler reads, every 50 ms and at one instant, the room's counter
// (line.lua: front, born) and the record of every account of the
// scenario (its number in its bucket, redisstore.AccountKey; the bucket's
// 'b' must be the counter's birth): which accounts it saw holding each
// number, and which records came back. An anonymous visitor's number is
// in its ticket alone, out of its sight.
type lineSampler struct {
	mu       sync.Mutex
	accounts []string                   // the accounts' store ids
	scores   map[string]map[string]bool // "born:number" -> the accounts recorded at it
	held     map[string]int64           // each account's number at the last sample that found its record
	gone     map[string]int64           // accounts whose record vanished while the front had not passed its number: that number
	restored map[string]bool            // accounts whose record came back at the number it vanished with (its holder's place)
}

func newLineSampler(vs []*visitor) *lineSampler {
	l := &lineSampler{scores: map[string]map[string]bool{}, held: map[string]int64{}, gone: map[string]int64{}, restored: map[string]bool{}}
	for _, v := range vs {
		if !v.anon {
			l.accounts = append(l.accounts, v.storeUser())
		}
	}
	return l
}

func (l *lineSampler) sample(ctx context.Context, rdb redis.UniversalClient) {
	for pause(ctx, 50*time.Millisecond) {
		var line *redis.SliceCmd
		records := make([]*redis.SliceCmd, len(l.accounts))
		_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			line = p.HMGet(ctx, "wr:{"+room+"}:settings", "front", "born")
			for i, u := range l.accounts {
				key, field := redisstore.AccountKey(room, u)
				records[i] = p.HMGet(ctx, key, field, "b")
			}
			return nil
		})
		if err != nil {
			continue
		}
		front, _ := strconv.ParseInt(fmt.Sprint(line.Val()[0]), 10, 64)
		born := line.Val()[1]
		l.mu.Lock()
		for i, u := range l.accounts {
			r := records[i].Val()
			n, err := strconv.ParseInt(fmt.Sprint(r[0]), 10, 64)
			l.note(u, n, err == nil && born != nil && r[1] == born, fmt.Sprint(born), max(front, -front))
		}
		l.mu.Unlock()
	}
}

// note is one sample of account u: its record at number n (ok: found, of
// the counter born at born), the front at front. A record that vanishes
// while the front has not passed its number was lost (a claim deletes it
// only once the front has passed it); found again at that number, it was
// put back from the place its holder carried (enter.lua, position.lua).
// A record lost before any sample found it is not seen.
func (l *lineSampler) note(u string, n int64, ok bool, born string, front int64) {
	if !ok {
		if was, held := l.held[u]; held && was >= front {
			l.gone[u] = was
		}
		delete(l.held, u)
		return
	}
	if l.gone[u] == n {
		l.restored[u] = true
	}
	delete(l.gone, u)
	l.held[u] = n
	at := born + ":" + strconv.FormatInt(n, 10)
	if l.scores[at] == nil {
		l.scores[at] = map[string]bool{}
	}
	l.scores[at][u] = true
}

func (l *lineSampler) duplicates() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, users := range l.scores {
		if len(users) > 1 {
			n++
		}
	}
	return n
}
