// Package challenge measures what the proof of work (CHALLENGE=pow, issue
// 19) costs: the hashes a solve takes at each difficulty (counted, the same
// on every machine), the page's Worker solving the default difficulty in
// headless chromium through the real enter, the server's verify and sign,
// and Go's hash rate (the attacker's). Run it with `make bench-challenge`;
// it is a measurement, not a check, and is skipped unless
// WAITROOM_CHALLENGE_BENCH is set.
package challenge

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/runnertest"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/bench/spike/sim"
	"github.com/waitroom/waitroom/internal/browsertest"
	"github.com/waitroom/waitroom/internal/redistest"
)

const (
	// challenges is how many fixed challenges each difficulty solves: its
	// p99 is the 4th largest.
	challenges = 400
	// browserSolves is how many the page's Worker solves at the default.
	browserSolves = 30
	// slowDevice is how much slower than this machine's chromium the report
	// also prices a solve at: a low-end phone runs WebCrypto's SHA-256
	// several times slower than a desktop core, a background tab slower still.
	slowDevice = 10
)

var difficulties = []int{12, 14, 16, 18}

func TestChallengeCost(t *testing.T) {
	if os.Getenv("WAITROOM_CHALLENGE_BENCH") == "" {
		t.Skip("a measurement: run `make bench-challenge` (WAITROOM_CHALLENGE_BENCH=1)")
	}
	out := sim.ChallengeResults{Machine: sim.DescribeHost(), Started: time.Now().UTC().Format(time.RFC3339),
		DefaultBits: waitroom.DefaultChallengeBits, TTLSeconds: waitroom.ChallengeTTL.Seconds(), SlowDeviceSlow: slowDevice}
	if !slices.Contains(difficulties, waitroom.DefaultChallengeBits) {
		t.Fatalf("the difficulties %v leave out the default, %d", difficulties, waitroom.DefaultChallengeBits)
	}
	for _, bits := range difficulties {
		h := countHashes(bits)
		t.Logf("%2d bits: mean %.0f hashes (2^bits %d), p50 %.0f, p95 %.0f, p99 %.0f, max %.0f over %d challenges",
			bits, h.Mean, 1<<bits, h.P50, h.P95, h.P99, h.Max, h.Challenges)
		out.Hashes = append(out.Hashes, h)
	}
	serverSide(t, &out)
	t.Logf("verify %.0f ns (%d B, %d allocs), issue %.0f ns, one hash %.0f ns", out.VerifyNs, out.VerifyBytes, out.VerifyAllocs, out.IssueNs, out.GoHashNs)
	browserSide(t, &out)
	out.Finished = time.Now().UTC().Format(time.RFC3339)
	if path := os.Getenv("CHALLENGE_OUT"); path != "" {
		b, _ := json.MarshalIndent(out, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fixedChallenge is the i-th challenge of bits the counts solve: the shape
// and length of a real one (key id, room, nonce, bits, expiry, MAC) with
// every part fixed, so that the counts are the same on every run. Which
// string is hashed does not change the distribution: each counter is an
// independent draw.
func fixedChallenge(i, bits int) string {
	part := func(what string, n int) string {
		sum := sha256.Sum256([]byte(what + strconv.Itoa(i)))
		return base64.RawURLEncoding.EncodeToString(sum[:n])
	}
	return strings.Join([]string{"c1", "AbCdEfGh", "tv-launch", part("nonce", 16), strconv.Itoa(bits), "1800000000", part("mac", 32)}, ".")
}

// countHashes solves the fixed challenges of bits, on every core, and
// returns the distribution of the hashes each took (its counter + 1).
func countHashes(bits int) sim.ChallengeHashes {
	tried := make([]float64, challenges)
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				s := waitroom.SolveChallenge(fixedChallenge(i, bits), bits)
				n, _ := strconv.ParseUint(s[strings.LastIndexByte(s, '.')+1:], 10, 64)
				tried[i] = float64(n + 1)
			}
		}()
	}
	for i := range challenges {
		next <- i
	}
	close(next)
	wg.Wait()
	return distribution(bits, tried)
}

func distribution(bits int, tried []float64) sim.ChallengeHashes {
	s := slices.Clone(tried)
	slices.Sort(s)
	var sum float64
	for _, x := range s {
		sum += x
	}
	at := func(q float64) float64 { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return sim.ChallengeHashes{Bits: bits, Challenges: len(s), Mean: sum / float64(len(s)), P50: at(0.5), P95: at(0.95), P99: at(0.99), Max: s[len(s)-1]}
}

// serverSide benchmarks VerifySolution of a valid solution, NewChallenge,
// and one SHA-256 of a solution-sized input.
func serverSide(t *testing.T, out *sim.ChallengeResults) {
	keys, err := waitroom.ParseTicketKeys(base64.StdEncoding.EncodeToString(make([]byte, 32)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	c, err := keys.NewChallenge("tv-launch", waitroom.DefaultChallengeBits, now.Add(waitroom.ChallengeTTL))
	if err != nil {
		t.Fatal(err)
	}
	solution := waitroom.SolveChallenge(c.Value, c.Bits)
	if _, err := keys.VerifySolution(solution, "tv-launch", c.Bits, now); err != nil {
		t.Fatal(err)
	}
	verify := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := keys.VerifySolution(solution, "tv-launch", c.Bits, now); err != nil {
				b.Fatal(err)
			}
		}
	})
	issue := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := keys.NewChallenge("tv-launch", c.Bits, now.Add(waitroom.ChallengeTTL)); err != nil {
				b.Fatal(err)
			}
		}
	})
	input := []byte(solution)
	hash := testing.Benchmark(func(b *testing.B) {
		for b.Loop() {
			sha256.Sum256(input)
		}
	})
	out.VerifyNs, out.VerifyBytes, out.VerifyAllocs = float64(verify.NsPerOp()), verify.AllocedBytesPerOp(), verify.AllocsPerOp()
	out.IssueNs, out.IssueBytes, out.IssueAllocs = float64(issue.NsPerOp()), issue.AllocedBytesPerOp(), issue.AllocsPerOp()
	out.GoHashNs = float64(hash.T.Nanoseconds()) / float64(hash.N)
}

// trialsJS solves n challenges in the page's origin, each as the page
// does: the 428 of an enter (without the ticket cookie, so that each enter
// is a new visitor), a new Worker (pow.js) solving it, and the solution
// sent back, which must make a visitor. It returns each solve's
// milliseconds, from the Worker's start to its answer, and its hashes.
const trialsJS = `(async function (n) {
  var ms = [], tried = [];
  var enter = function (h) { return fetch("/queue/enter?room=tv-launch", {method: "POST", credentials: "omit", headers: h}); };
  for (var i = 0; i < n; i++) {
    var r = await enter({});
    if (r.status !== 428) throw new Error("an enter without a solution was answered " + r.status);
    var c = (await r.json()).challenge;
    var start = performance.now();
    var got = await new Promise(function (ok, fail) {
      var w = new Worker("/waitroom/pow.js");
      w.onmessage = function (e) { if (e.data.error) fail(new Error(e.data.error)); if (e.data.solution) { w.terminate(); ok(e.data); } };
      w.onerror = function () { fail(new Error("the worker failed")); };
      w.postMessage(c);
    });
    ms.push(performance.now() - start);
    tried.push(got.tried);
    r = await enter({"X-Queue-Challenge": got.solution});
    if (r.status !== 200) throw new Error("the solution was answered " + r.status);
  }
  return {ms: ms, tried: tried};
})(%d)`

type trials struct {
	MS    []float64 `json:"ms"`
	Tried []int64   `json:"tried"`
}

// browserSide has headless chromium solve browserSolves challenges of the
// default difficulty through a local runner with CHALLENGE=pow.
func browserSide(t *testing.T, out *sim.ChallengeResults) {
	srv := redistest.EmbeddedEngine.Start(t)
	run := runnertest.Start(t, runnertest.Config(t, map[string]string{"REDIS_URL": srv.URL(), "CHALLENGE": "pow",
		"CHALLENGE_BITS": strconv.Itoa(waitroom.DefaultChallengeBits), "VISITOR_RATE_PER_SEC": "0"}))
	ctx := browsertest.Start(t)
	page := browsertest.Tab(t, ctx, 10*time.Minute)
	browsertest.Do(t, page, "open", chromedp.Navigate(run.URL+"/waitroom/config.json"))
	got := browsertest.Get(t, page, "solve", chromedp.Evaluate[trials](fmt.Sprintf(trialsJS, browserSolves), chromedp.EvalAwaitPromise))
	if len(got.MS) != browserSolves || len(got.Tried) != browserSolves {
		t.Fatalf("%d solves, %d counts; want %d", len(got.MS), len(got.Tried), browserSolves)
	}
	out.Browser = browsertest.Get(t, page, "version", chromedp.Evaluate[string](`"chromium " + navigator.userAgent.match(/Chrome\/([0-9]+)/)[1]`))
	out.BrowserSolves, out.BrowserMs, out.BrowserHashes = browserSolves, got.MS, got.Tried
	var hashes, ms float64
	for i := range got.MS {
		hashes += float64(got.Tried[i])
		ms += got.MS[i]
	}
	t.Logf("%s: %d solves of %d bits, %.0f hashes/s, %.0f ms a solve on average", out.Browser, browserSolves, waitroom.DefaultChallengeBits, hashes/ms*1000, ms/browserSolves)
}
