package httpapi_test

import (
	"context"
	"crypto/sha256"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/httpapi"
	"github.com/waitroom/waitroom/internal/linetest"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/orderapi"
	"github.com/waitroom/waitroom/redisstore"
)

// powBits keeps the handlers' tests fast: a solution costs ~256 hashes.
const powBits = 8

func powHarness(t *testing.T, engine redistest.Engine) *harness {
	t.Helper()
	return newHarness(t, engine, visitorsFromEnv(t, map[string]string{"CHALLENGE": "pow", "CHALLENGE_BITS": "8"}))
}

// challengeOf checks a 428 challenge_required answer and returns its challenge.
func challengeOf(t *testing.T, r events.APIGatewayV2HTTPResponse) (value string, bits int) {
	t.Helper()
	wantError(t, r, http.StatusPreconditionRequired, "challenge_required")
	c, _ := decode(t, r)["challenge"].(map[string]any)
	value, _ = c["value"].(string)
	if _, err := time.Parse(time.RFC3339, c["expiresAt"].(string)); value == "" || c["algorithm"] != "sha-256" || err != nil {
		t.Fatalf("challenge %v (%v)", c, err)
	}
	if len(r.Cookies) != 0 {
		t.Fatalf("a challenge sets cookies: %v", r.Cookies)
	}
	return value, int(c["bits"].(float64))
}

func enterWith(room, solution string) events.APIGatewayV2HTTPRequest {
	req := withRoom(request("POST", "/queue/enter", "", nil), room)
	if solution != "" {
		req.Headers["x-queue-challenge"] = solution
	}
	return req
}

// Issue 19: with CHALLENGE=pow one client no longer becomes a crowd for
// free. 320 enters without a solution from one address make nobody
// (without the challenge the address's visitor bucket let 10 in) and cost no
// store call; a solved challenge makes one visitor, with its ticket.
func TestNewVisitorsSolveAChallenge(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := powHarness(t, engine)
		rdb := h.redis.Client()
		for i := 0; i < 320; i++ {
			challengeOf(t, h.call(withSource("198.51.100.7", enterWith("tv", ""))))
		}
		if n := rdb.DBSize(context.Background()).Val(); n != 0 {
			t.Fatalf("320 enters without a solution wrote %d keys", n)
		}
		r := h.call(enterWith("tv", ""))
		value, bits := challengeOf(t, r)
		exp, _ := time.Parse(time.RFC3339, decode(t, r)["challenge"].(map[string]any)["expiresAt"].(string))
		if bits != powBits || !strings.Contains(value, ".tv.") || time.Until(exp) > waitroom.ChallengeTTL || time.Until(exp) < waitroom.ChallengeTTL-5*time.Second {
			t.Fatalf("challenge %q of %d bits, expiring %v; want room tv, %d bits, in %v", value, bits, exp, powBits, waitroom.ChallengeTTL)
		}
		r = h.call(enterWith("tv", waitroom.SolveChallenge(value, bits)))
		if r.StatusCode != 200 || decode(t, r)["status"] != "WAITING" {
			t.Fatalf("enter with the solution: %d %s", r.StatusCode, r.Body)
		}
		ticket := ticketOfAnswer(t, r)
		// Who is known never solves one: the visitor by its ticket, a header
		// user, an account. Position never asks either (it makes nobody).
		if r := h.call(withRoom(request("POST", "/queue/enter", "", map[string]string{"x-queue-ticket": ticket}), "tv")); r.StatusCode != 200 {
			t.Fatalf("the visitor's enter with its ticket: %d %s", r.StatusCode, r.Body)
		}
		if r := h.call(withRoom(request("POST", "/queue/enter", "alice", nil), "tv")); r.StatusCode != 200 {
			t.Fatalf("a header user: %d %s", r.StatusCode, r.Body)
		}
		jwt := withRoom(request("POST", "/queue/enter", "", nil), "tv")
		jwt.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "bob"}}}
		if r := h.call(jwt); r.StatusCode != 200 {
			t.Fatalf("an account: %d %s", r.StatusCode, r.Body)
		}
		wantError(t, h.call(request("GET", "/queue/position", "", nil)), 401, "unauthenticated")
		// Each solution is spent on its own record: another one makes
		// another visitor.
		value, bits = challengeOf(t, h.call(enterWith("tv", "")))
		if r := h.call(enterWith("tv", waitroom.SolveChallenge(value, bits))); r.StatusCode != 200 || decode(t, r)["status"] != "WAITING" {
			t.Fatalf("enter with a second solution: %d %s", r.StatusCode, r.Body)
		}
		if n := linetest.Length(t, rdb, "tv"); n != 4 {
			t.Fatalf("the line holds %d; want two visitors, alice and bob", n)
		}
	})
}

// stateKeys are the store's keys but the room's hash, which holds the
// limiter's buckets (wr:{room}:settings: a replay pays its buckets as any
// enter that would make a visitor does).
func stateKeys(t *testing.T, h *harness) string {
	t.Helper()
	var keys []string
	for _, k := range h.redis.Client().Keys(context.Background(), "*").Val() {
		if !strings.HasSuffix(k, ":settings") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return strings.Join(keys, " ")
}

// Every solution that is not a fresh, valid one for this room is answered
// 428 with a fresh challenge, and creates nothing: the same solution a second
// time, an altered or wrong one, an expired one, another room's, another
// key's, an easier one than CHALLENGE_BITS asks, garbage.
func TestBadSolutionsCreateNothing(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := powHarness(t, engine)
		now := time.Now()
		h.api.Now = func() time.Time { return now }
		fresh := func(room string) string {
			value, bits := challengeOf(t, h.call(enterWith(room, "")))
			return waitroom.SolveChallenge(value, bits)
		}
		used := fresh("tv")
		if r := h.call(enterWith("tv", used)); r.StatusCode != 200 {
			t.Fatalf("first use: %d %s", r.StatusCode, r.Body)
		}
		good := fresh("tv")
		expired := fresh("tv")
		foreign, _ := ticketKeys(t, 9).NewChallenge("tv", powBits, now.Add(time.Minute))
		easy, _ := h.cfg.Visitor.Tickets.NewChallenge("tv", powBits-1, now.Add(time.Minute))
		altered := []byte(good)
		altered[len("c1.")+9] ^= 1 // in the room
		rdb := h.redis.Client()
		before := stateKeys(t, h)
		lineBefore := linetest.Length(t, rdb, "tv")
		// The message says why, so that a client (or its developer) can tell
		// a replay from a bug.
		for _, c := range []struct{ name, solution, why string }{
			{"the same solution again", used, "already used"},
			{"altered", string(altered), "bad signature"},
			{"another room's", fresh("radio"), "for another room"},
			{"another key's", waitroom.SolveChallenge(foreign.Value, powBits), "unknown key"},
			{"easier than asked", waitroom.SolveChallenge(easy.Value, easy.Bits), "easier than this room asks"},
			{"not a solution", strings.TrimSuffix(good, good[strings.LastIndexByte(good, '.'):]) + ".x", "malformed counter"},
			{"garbage", "garbage", "malformed"},
			{"huge", strings.Repeat("9", 10_000), "malformed"},
		} {
			r := h.call(enterWith("tv", c.solution))
			value, _ := challengeOf(t, r)
			if strings.HasPrefix(c.solution, value) {
				t.Errorf("%s: answered with the same challenge", c.name)
			}
			if msg, _ := decode(t, r)["message"].(string); !strings.Contains(msg, c.why) {
				t.Errorf("%s: message %q does not say %q", c.name, msg, c.why)
			}
		}
		now = now.Add(waitroom.ChallengeTTL)
		r := h.call(enterWith("tv", expired))
		challengeOf(t, r)
		if msg, _ := decode(t, r)["message"].(string); !strings.Contains(msg, "expired") {
			t.Errorf("expired: message %q", msg)
		}
		if after := stateKeys(t, h); after != before {
			t.Errorf("keys %v → %v: a refused solution wrote something", before, after)
		}
		if n := linetest.Length(t, rdb, "tv"); n != lineBefore {
			t.Errorf("the line went from %d to %d", lineBefore, n)
		}
	})
}

// One solution makes one visitor across every process: 16 concurrent
// enters with the same solution, half through each of two APIs on one
// Redis (two stores, one TICKET_SECRET, as two Lambda instances), make one
// visitor; the others get 428 with a fresh challenge.
func TestOneSolutionOneVisitorAcrossProcesses(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := powHarness(t, engine)
		other := &httpapi.API{Config: h.cfg, Queue: redisstore.New(h.redis.Client(), h.cfg), Orders: orderapi.New(h.down.srv.URL, time.Second)}
		value, bits := challengeOf(t, h.call(enterWith("tv", "")))
		solution := waitroom.SolveChallenge(value, bits)
		var made, refused atomic.Int64
		var wg sync.WaitGroup
		for i := range 16 {
			api := []*httpapi.API{h.api, other}[i%2]
			wg.Go(func() {
				req := enterWith("tv", solution)
				switch r := h.checked(req, api.Route(context.Background(), req)); r.StatusCode {
				case 200:
					made.Add(1)
				case 428:
					refused.Add(1)
				default:
					t.Errorf("enter: %d %s", r.StatusCode, r.Body)
				}
			})
		}
		wg.Wait()
		if made.Load() != 1 || refused.Load() != 15 {
			t.Fatalf("one solution: %d visitors, %d refused; want 1 and 15", made.Load(), refused.Load())
		}
		if n := linetest.Length(t, h.redis.Client(), "tv"); n != 1 {
			t.Fatalf("the line holds %d", n)
		}
	})
}

// Through the broker (INTAKE=broker) the accept spends the solution: one
// entry accepted, the replay refused before it reaches the queue.
func TestBrokerSpendsTheSolutionOnce(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newIntakeHarness(t, engine, waitroom.IntakeBroker, 30)
		h.api.Config.Visitor.Challenge, h.api.Config.Visitor.ChallengeBits = waitroom.ChallengePoW, powBits
		value, bits := challengeOf(t, h.call(enterWith("tv", "")))
		solution := waitroom.SolveChallenge(value, bits)
		if r := h.call(enterWith("tv", solution)); r.StatusCode != http.StatusAccepted {
			t.Fatalf("enter with the solution: %d %s", r.StatusCode, r.Body)
		}
		challengeOf(t, h.call(enterWith("tv", solution)))
	})
}

// CHALLENGE=off (the default) is unchanged: a new visitor is made on
// request, and a header sent anyway is not read.
func TestChallengeOffChangesNothing(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine, visitorsFromEnv(t, map[string]string{}))
		for _, solution := range []string{"", "garbage"} {
			if r := h.call(enterWith("tv", solution)); r.StatusCode != 200 || len(r.Cookies) != 1 {
				t.Fatalf("enter with %q: %d %s", solution, r.StatusCode, r.Body)
			}
		}
	})
}

// exactly is the solution of value with the smallest counter whose hash
// begins with exactly zeros zero bits.
func exactly(value string, zeros int) string {
	for n := 0; ; n++ {
		s := value + "." + strconv.Itoa(n)
		if sum := sha256.Sum256([]byte(s)); waitroom.LeadingZeroBits(sum[:]) == zeros {
			return s
		}
	}
}

// Issue 37: through the handler, CHALLENGE_BITS is the difficulty to the
// bit: a solution whose hash has exactly CHALLENGE_BITS − 1 zero bits is
// refused (and makes nobody), one with exactly CHALLENGE_BITS makes a
// visitor. One bit short accepted would halve what an identity costs.
func TestChallengeBitsToTheBit(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := powHarness(t, engine)
		value, bits := challengeOf(t, h.call(enterWith("tv", "")))
		r := h.call(enterWith("tv", exactly(value, bits-1)))
		challengeOf(t, r)
		if msg, _ := decode(t, r)["message"].(string); !strings.Contains(msg, "does not solve it") {
			t.Errorf("a solution of %d zero bits for CHALLENGE_BITS=%d: message %q", bits-1, bits, msg)
		}
		if n := linetest.Length(t, h.redis.Client(), "tv"); n != 0 {
			t.Fatalf("a solution one bit short made %d visitors", n)
		}
		if r := h.call(enterWith("tv", exactly(value, bits))); r.StatusCode != 200 || decode(t, r)["status"] != "WAITING" {
			t.Fatalf("a solution of exactly %d zero bits: %d %s", bits, r.StatusCode, r.Body)
		}
	})
}
