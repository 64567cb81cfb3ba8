package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/awslambda"
	"github.com/waitroom/waitroom/httpapi"
	"github.com/waitroom/waitroom/intake"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/sqstest"
	"github.com/waitroom/waitroom/metrics"
	"github.com/waitroom/waitroom/redisstore"
	"github.com/waitroom/waitroom/sqs"
)

// intakeHarness is the harness with a broker: a FIFO queue on a real
// SQS-compatible server (goaws, internal/sqstest) and the consumer of it.
type intakeHarness struct {
	*harness
	queue    *sqs.Queue
	consumer *intake.Consumer
	emf      *lockedBuffer // the EMF lines of enter and the consumer
}

// lockedBuffer is a bytes.Buffer the API's and the consumer's goroutines share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// count is how many EMF lines recorded metric name once for room (the
// aggregate comes in the same line).
func (b *lockedBuffer) count(name string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), `"`+name+`":1,`)
}

func newIntakeHarness(t *testing.T, engine redistest.Engine, mode waitroom.Intake, visibility int, mutate ...func(*waitroom.Config)) *intakeHarness {
	t.Helper()
	h := newHarness(t, engine, append([]func(*waitroom.Config){func(c *waitroom.Config) {
		c.Intake = mode
		keys, err := waitroom.ParseTicketKeys("MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=")
		if err != nil {
			t.Fatal(err)
		}
		c.Visitor.Tickets = keys
	}}, mutate...)...)
	q, err := sqs.New(t.Context(), sqstest.Queue(t, t.Name(), visibility))
	if err != nil {
		t.Fatal(err)
	}
	q.Batch = 1 // goaws delivers one message per group per receive (sqstest)
	h.api.Broker, h.api.Applied = q, h.store
	emf := &lockedBuffer{}
	h.api.Metrics = metrics.NewRecorder(emf)
	return &intakeHarness{harness: h, queue: q, emf: emf, consumer: &intake.Consumer{Store: h.store, Metrics: h.api.Metrics}}
}

// run runs the consumer until the test ends, as the event source mapping does.
func (h *intakeHarness) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { h.consumer.Run(ctx, h.queue) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func (h *intakeHarness) accepted(t *testing.T, user string) string {
	t.Helper()
	r := h.enter(user)
	m := decode(t, r)
	if r.StatusCode != http.StatusAccepted || m["status"] != "ACCEPTED" || m["receipt"] == "" || m["pollAfterMs"] != float64(httpapi.ProcessingPollMs) {
		t.Fatalf("enter %s: %d %s, want 202 ACCEPTED", user, r.StatusCode, r.Body)
	}
	return m["receipt"].(string)
}

func (h *intakeHarness) receiptPosition(receipt string) events.APIGatewayV2HTTPResponse {
	return h.call(request("GET", "/queue/position", "", map[string]string{"x-queue-receipt": receipt}))
}

// line is which of users wait in the room's line, front first, by the ids
// the tests send as X-User-Id (the store's "h:<id>") or put in entries
// themselves (the id as it is); nobody else may wait there.
func (h *intakeHarness) line(t *testing.T, room string, users []string) []string {
	t.Helper()
	var ids []string
	for _, u := range users {
		ids = append(ids, "h:"+u, u)
	}
	got, err := redisstore.Waiting(t.Context(), h.redis.Client(), room, ids)
	if err != nil {
		t.Fatal(err)
	}
	for i, u := range got {
		got[i] = strings.TrimPrefix(u, "h:")
	}
	if n := h.count(t, room); n != int64(len(got)) {
		t.Fatalf("%d wait in room %s, of whom %d of %v", n, room, len(got), users)
	}
	return got
}

// count is how many wait in the room's line.
func (h *intakeHarness) count(t *testing.T, room string) int64 {
	t.Helper()
	n, err := redisstore.LineLength(t.Context(), h.redis.Client(), room)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The "done when": with INTAKE=fallback a Redis outage loses no
// newcomer. Enter answers 202 through the broker while Redis is stopped;
// once it is back every accepted visitor is in line behind those already
// there, in acceptance order, none twice, and position went PROCESSING → WAITING.
func TestFallbackOutageLosesNoNewcomer(t *testing.T) {
	t.Parallel() // waits for the consumer and a restart; asserts the line, not timing (own store)
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newIntakeHarness(t, engine, waitroom.IntakeFallback, 30)
		for _, u := range []string{"early-1", "early-2"} {
			if r := h.enter(u); r.StatusCode != 200 {
				t.Fatalf("direct enter: %d %s", r.StatusCode, r.Body)
			}
		}
		h.redis.Stop()
		var receipts []string
		var want = []string{"early-1", "early-2"}
		for i := range 20 {
			u := fmt.Sprintf("new-%02d", i)
			receipts = append(receipts, h.accepted(t, u))
			want = append(want, u)
		}
		h.accepted(t, "new-05") // a second click: deduplicated by the broker, applied once
		wantError(t, h.receiptPosition(receipts[0]), 503, "unavailable")
		h.redis.Restart()
		for deadline := time.Now().Add(5 * time.Second); h.receiptPosition(receipts[0]).StatusCode == 503; {
			if time.Now().After(deadline) {
				t.Fatal("did not recover")
			}
			time.Sleep(50 * time.Millisecond)
		}

		if m := decode(t, h.receiptPosition(receipts[0])); m["status"] != "PROCESSING" || m["pollAfterMs"] != float64(httpapi.ProcessingPollMs) {
			t.Fatalf("before the consumer ran: %v, want PROCESSING", m)
		}
		h.run(t)
		deadline := time.Now().Add(30 * time.Second)
		for i, r := range receipts {
			for {
				m := decode(t, h.receiptPosition(r))
				if m["status"] == "WAITING" {
					if m["position"] != float64(i+3) {
						t.Fatalf("new-%02d at %v, want %d", i, m["position"], i+3)
					}
					break
				}
				if m["status"] != "PROCESSING" || time.Now().After(deadline) {
					t.Fatalf("new-%02d: %v", i, m)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		if got := h.line(t, "default", want); !slices.Equal(got, want) {
			t.Fatalf("line %v\nwant %v", got, want)
		}
		if r := h.enter("after"); r.StatusCode != 200 {
			t.Fatalf("with the store back, fallback enters directly: %d %s", r.StatusCode, r.Body)
		}
	})
}

// INTAKE=broker never touches the store on enter: it accepts with Redis
// down; a bad receipt is 401, and so is one shown for another room.
func TestBrokerEnterWithoutStoreAndBadReceipts(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newIntakeHarness(t, engine, waitroom.IntakeBroker, 30)
		h.redis.Stop()
		receipt := h.accepted(t, "u1")
		h.redis.Restart()
		for name, bad := range map[string]string{"altered": receipt[:len(receipt)-3] + "AAA", "garbage": "r1.x", "a ticket": "k.v-1.9999999999.sig"} {
			r := h.receiptPosition(bad)
			wantError(t, r, 401, "invalid_receipt")
			if len(r.Cookies) != 0 {
				t.Fatalf("%s: a bad receipt must not touch the ticket cookie", name)
			}
		}
		wantError(t, h.call(withRoom(request("GET", "/queue/position", "", map[string]string{"x-queue-receipt": receipt}), "other")), 401, "invalid_receipt")
		if h.count(t, "default") != 0 {
			t.Fatal("broker mode put someone in line without the consumer")
		}
	})
}

// flaky is a store that fails after a number of applies: the consumer
// process dying mid-batch, or the store going away under it.
type flaky struct {
	waitroom.Applier
	mu   sync.Mutex
	left int
}

func (f *flaky) Apply(ctx context.Context, e waitroom.Entry, keep time.Duration) (waitroom.Standing, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.left == 0 {
		return waitroom.Standing{}, false, waitroom.Unavailable(fmt.Errorf("consumer crashed"))
	}
	f.left--
	return f.Applier.Apply(ctx, e, keep)
}

// The Lambda consumer reports the message it could not apply and every one
// after it, in order, so that the event source mapping deletes only those
// before and SQS delivers the rest again behind nobody.
func TestConsumeFunctionFailsTheTailOfABatch(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newIntakeHarness(t, engine, waitroom.IntakeBroker, 30)
		var ev events.SQSEvent
		for i := range 10 {
			body, _ := intake.Encode(waitroom.Entry{Room: "r", User: fmt.Sprintf("u%d", i), AcceptedAt: time.Now()})
			ev.Records = append(ev.Records, events.SQSMessage{MessageId: fmt.Sprint("m", i), Body: body})
		}
		ev.Records[7].Body = "not an entry"
		resp, err := awslambda.ConsumeFunction(&intake.Consumer{Store: &flaky{Applier: h.store, left: 4}})(t.Context(), ev)
		if err != nil || len(resp.BatchItemFailures) != 6 || resp.BatchItemFailures[0].ItemIdentifier != "m4" || resp.BatchItemFailures[5].ItemIdentifier != "m9" {
			t.Fatalf("crash after 4: %+v %v", resp, err)
		}
		resp, _ = awslambda.ConsumeFunction(h.consumer)(t.Context(), ev)
		if len(resp.BatchItemFailures) != 3 || resp.BatchItemFailures[0].ItemIdentifier != "m7" {
			t.Fatalf("a malformed message stops the batch (to the DLQ after its retries): %+v", resp)
		}
		want := []string{"u0", "u1", "u2", "u3", "u4", "u5", "u6"}
		if got := h.line(t, "r", want); !slices.Equal(got, want) {
			t.Fatalf("line %v", got)
		}
	})
}

// lossy drops the deletes of the first applied messages: the broker
// delivers them again, as after a lost acknowledgement.
type lossy struct {
	intake.Source
	mu      sync.Mutex
	dropped int
}

func (l *lossy) Delete(ctx context.Context, msgs []intake.Message) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dropped < 5 {
		l.dropped += len(msgs)
		return fmt.Errorf("delete lost")
	}
	return l.Source.Delete(ctx, msgs)
}

// A consumer that crashes mid-way, and deliveries repeated after lost
// deletes, lose and duplicate nobody, and keep each room's acceptance order,
// through a real SQS-compatible server whose visibility timeout (1 s)
// brings undeleted messages back.
func TestConsumerCrashAndRedelivery(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newIntakeHarness(t, engine, waitroom.IntakeBroker, 1)
		const rooms, per = 3, 6
		for i := range per {
			for r := range rooms {
				h.accepted2(t, fmt.Sprintf("room-%d", r), fmt.Sprintf("u%02d", i))
			}
		}
		// The first consumer dies after applying 4 entries.
		crashed := &intake.Consumer{Store: &flaky{Applier: h.store, left: 4}, Metrics: h.api.Metrics}
		ctx, crash := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { crashed.Run(ctx, h.queue) })
		deadline := time.Now().Add(10 * time.Second)
		for total(t, h, rooms) < 4 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond) // let it fail on the fifth
		crash()
		wg.Wait()
		if n := total(t, h, rooms); n != 4 {
			t.Fatalf("%d in line after the crash, want 4", n)
		}
		// SQS would keep the crashed entry's room locked until its visibility
		// timeout; goaws locks only the room received last, so wait it out.
		time.Sleep(1200 * time.Millisecond)
		// The next consumer loses its first deletes: those entries come back.
		lost := &lossy{Source: h.queue}
		ctx, stop := context.WithCancel(t.Context())
		defer stop()
		wg.Go(func() { h.consumer.Run(ctx, lost) })
		deadline = time.Now().Add(60 * time.Second)
		want := make([]string, per)
		for i := range want {
			want[i] = fmt.Sprintf("u%02d", i)
		}
		for total(t, h, rooms) < rooms*per && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(1500 * time.Millisecond) // the lost deletes' messages come back and are found applied
		stop()
		wg.Wait()
		for r := range rooms {
			if got := h.line(t, fmt.Sprintf("room-%d", r), want); !slices.Equal(got, want) {
				t.Fatalf("room-%d: line %v\nwant %v", r, got, want)
			}
		}
		if lost.dropped < 5 {
			t.Fatalf("only %d deletes were lost; the test did not redeliver", lost.dropped)
		}
		// The metrics count each visitor once, whatever was redelivered.
		if a, e := h.emf.count(metrics.Accepted), h.emf.count(metrics.Entered); a != rooms*per || e != rooms*per {
			t.Fatalf("Accepted %d, Entered %d: want %d each", a, e, rooms*per)
		}
	})
}

func total(t *testing.T, h *intakeHarness, rooms int) int {
	n := 0
	for r := range rooms {
		n += int(h.count(t, fmt.Sprintf("room-%d", r)))
	}
	return n
}

func (h *intakeHarness) accepted2(t *testing.T, room, user string) string {
	t.Helper()
	r := h.call(withRoom(request("POST", "/queue/enter", user, nil), room))
	if r.StatusCode != http.StatusAccepted {
		t.Fatalf("enter %s/%s: %d %s", room, user, r.StatusCode, r.Body)
	}
	return decode(t, r)["receipt"].(string)
}

// Many visitors enter through the broker at once while the consumer runs:
// each is in line exactly once, and each one's receipt finds them there.
func TestConcurrentBrokerEnters(t *testing.T) {
	t.Parallel() // waits for the consumer; asserts the line, not timing (own store)
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newIntakeHarness(t, engine, waitroom.IntakeBroker, 30)
		h.run(t)
		const workers, each = 8, 25
		receipts := make([][]string, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := range each {
					r := h.enter(fmt.Sprintf("w%d-%02d", w, i))
					if r.StatusCode != http.StatusAccepted {
						t.Errorf("enter: %d %s", r.StatusCode, r.Body)
						return
					}
					var m map[string]any
					_ = json.Unmarshal([]byte(r.Body), &m)
					receipts[w] = append(receipts[w], m["receipt"].(string))
				}
			})
		}
		wg.Wait()
		deadline := time.Now().Add(60 * time.Second)
		var users []string
		for w := range workers {
			for i := range each {
				users = append(users, fmt.Sprintf("w%d-%02d", w, i))
			}
		}
		for h.count(t, "default") < workers*each && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		line := h.line(t, "default", users)
		seen := map[string]bool{}
		for _, u := range line {
			seen[u] = true
		}
		if len(line) != workers*each || len(seen) != len(line) {
			t.Fatalf("%d in line, %d distinct, want %d", len(line), len(seen), workers*each)
		}
		for w := range workers {
			// Each worker's own enters were accepted one after another: their
			// order in line is their acceptance order.
			last := int64(0)
			for i, r := range receipts[w] {
				m := decode(t, h.receiptPosition(r))
				pos, _ := m["position"].(float64)
				if m["status"] != "WAITING" || int64(pos) <= last {
					t.Fatalf("w%d-%02d: %v after position %d", w, i, m, last)
				}
				last = int64(pos)
			}
		}
	})
}

// applyDuringPosition is the store, except that its first Position for user
// runs the consumer right after reading: the entry is applied between the
// handler's read of the standing and its read of the applied record.
type applyDuringPosition struct {
	waitroom.Store
	user  string
	apply func()
	once  sync.Once
}

func (q *applyDuringPosition) Position(ctx context.Context, room string, c waitroom.Caller) (waitroom.Standing, error) {
	st, err := q.Store.Position(ctx, room, c)
	if c.User == q.user {
		q.once.Do(q.apply)
	}
	return st, err
}

// An entry applied between position's two reads is answered where it now
// stands, never NOT_IN_QUEUE (seen once under load before the fix).
func TestReceiptAppliedBetweenTheReads(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newIntakeHarness(t, engine, waitroom.IntakeBroker, 30)
		receipt := h.accepted(t, "racer")
		h.api.Queue = &applyDuringPosition{Store: h.store, user: "h:racer", apply: func() {
			msgs, err := h.queue.Receive(t.Context())
			if err != nil || len(msgs) != 1 {
				t.Fatalf("receive: %v %v", msgs, err)
			}
			if _, err := h.consumer.Apply(t.Context(), msgs); err != nil {
				t.Fatal(err)
			}
		}}
		if m := decode(t, h.receiptPosition(receipt)); m["status"] != "WAITING" || m["position"] != float64(1) {
			t.Fatalf("applied between the reads: %v, want WAITING at 1", m)
		}
	})
}

// Through the broker, an entry the consumer applies in an idle room is
// admitted at once, counted as entered and admitted, and its receipt's
// position answers READY.
func TestBrokerEntryAdmittedAtOnce(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newIntakeHarness(t, engine, waitroom.IntakeBroker, 30, func(c *waitroom.Config) { c.InstantAdmit = true })
		receipt := h.accepted(t, "alice")
		h.run(t)
		deadline := time.Now().Add(10 * time.Second)
		for {
			r := h.receiptPosition(receipt)
			if m := decode(t, r); m["status"] == "READY" {
				break
			} else if m["status"] != "PROCESSING" || time.Now().After(deadline) {
				t.Fatalf("the receipt's position: %d %s, want PROCESSING then READY", r.StatusCode, r.Body)
			}
			time.Sleep(50 * time.Millisecond)
		}
		// The consumer records its metrics after the store's answer, which
		// the position may read first: wait for them (a loaded machine).
		for h.emf.count(metrics.Admitted) == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if h.emf.count(metrics.Admitted) != 1 || h.emf.count(metrics.Entered) != 1 {
			t.Fatalf("the consumer's instant admission is counted once as entered and admitted:\n%s", h.emf)
		}
	})
}
