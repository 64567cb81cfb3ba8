package rie_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/e2e/gateway"
	"github.com/waitroom/waitroom/e2e/rie"
	"github.com/waitroom/waitroom/e2e/scenario"
	"github.com/waitroom/waitroom/internal/redistest"
)

const (
	coldStarts   = 5
	warmInvokes  = 200
	measureRoom  = "measure"
	measureUser  = "measure-user"
	measureOrder = "measure-order"
)

// TestMeasure reports each function's cold start and warm invocation
// latency under the emulator (`make e2e-measure`, docs/e2e.md). Every
// invocation is the same request: enter and position for a user in line,
// admit covering 10 ms (ADMIT_BATCHES=1, ADMIT_INTERVAL_MS=10: two batches),
// and the order gate replaying a stored order (token check in Redis, no
// downstream call).
func TestMeasure(t *testing.T) {
	opt := options(t)
	if os.Getenv("WAITROOM_E2E_MEASURE") == "" {
		t.Skip("measurements run from `make e2e-measure`")
	}
	srv := redistest.Start(t)
	down := scenario.StartDownstream(t, "127.0.0.1:0", "")
	// The measured room is not created first: rooms open on first use (OPEN_ROOMS).
	opt.Env = map[string]string{"REDIS_URL": srv.URL(), "ORDER_API_URL": down.URL, "OPEN_ROOMS": "true"}
	// One admit invocation covers ADMIT_BATCHES × ADMIT_INTERVAL_MS and
	// sleeps between batches: measure the shortest, 1 × 10 ms (two batches).
	opt.FunctionEnv = map[string]map[string]string{gateway.Admit: {"ADMIT_BATCHES": "1", "ADMIT_INTERVAL_MS": "10"}}

	// Set up a user with a placed order, so that every function has a
	// realistic request to repeat.
	var token string
	t.Run("setup", func(t *testing.T) {
		r := rie.Start(t, opt, gateway.Functions...)
		ctx := context.Background()
		mustInvoke(t, r, gateway.Enter, httpEvent(measureUser, nil))
		mustInvoke(t, r, gateway.Admit, scenario.ScheduledEvent())
		var st struct {
			Status     string `json:"status"`
			EntryToken string `json:"entryToken"`
		}
		decodeBody(t, mustInvoke(t, r, gateway.Position, httpEvent(measureUser, nil)), &st)
		if st.Status != "READY" {
			t.Fatalf("not admitted: %+v", st)
		}
		token = st.EntryToken
		var placed struct{ StatusCode int }
		res, _ := r.Invoke(ctx, gateway.OrderGate, orderEvent(token))
		_ = json.Unmarshal(res.Payload, &placed)
		if placed.StatusCode != 201 {
			t.Fatalf("order: %s", res.Payload)
		}
		// The user enters again so that enter and position find them waiting.
		mustInvoke(t, r, gateway.Enter, httpEvent(measureUser, nil))
	})
	if t.Failed() {
		t.FailNow()
	}
	payloads := map[string][]byte{
		gateway.Enter:     httpEvent(measureUser, nil),
		gateway.Position:  httpEvent(measureUser, nil),
		gateway.Admit:     scenario.ScheduledEvent(),
		gateway.OrderGate: orderEvent(token),
	}

	// The table goes to stdout and, for docs/e2e.md (make e2e-measure puts
	// it there with cmd/fragment), to WAITROOM_E2E_MEASURE_OUT.
	var table bytes.Buffer
	out := io.MultiWriter(os.Stdout, &table)
	redisVersion := redistest.Version() // "Redis server v=7.0.15 sha=…"
	if _, v, ok := strings.Cut(redisVersion, "v="); ok {
		redisVersion = "Redis " + strings.Fields(v)[0]
	}
	fmt.Fprintf(out, "Measured %s: %d cold starts and %d warm invocations per function; %s/%s, %d CPUs, %s.\n\n",
		time.Now().UTC().Format("2006-01-02"), coldStarts, warmInvokes, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), redisVersion)
	fmt.Fprintln(out, "| function | cold: emulator start → first answer | cold: first invocation | init (emulator's INIT REPORT) | warm: median | warm: p95 | warm: emulator-reported duration, median |")
	fmt.Fprintln(out, "| --- | --- | --- | --- | --- | --- | --- |")
	for _, fn := range gateway.Functions {
		var starts, firsts, inits []float64
		var warm, reported []float64
		for i := 0; i < coldStarts; i++ {
			t.Run(fmt.Sprintf("%s cold %d", fn, i), func(t *testing.T) {
				r := rie.Start(t, opt, fn)
				in := r.Instance(fn)
				begin := time.Now()
				mustInvoke(t, r, fn, payloads[fn])
				starts = append(starts, ms(time.Since(in.Started)))
				firsts = append(firsts, ms(time.Since(begin)))
				is, _, err := in.Reports()
				if err != nil || len(is) != 1 {
					t.Fatalf("init reports %v: %v", is, err)
				}
				inits = append(inits, is...)
				if i < coldStarts-1 {
					return
				}
				for j := 0; j < warmInvokes; j++ {
					begin := time.Now()
					mustInvoke(t, r, fn, payloads[fn])
					warm = append(warm, ms(time.Since(begin)))
				}
				_, invokes, err := in.Reports()
				if err != nil {
					t.Fatal(err)
				}
				reported = invokes[1:]
			})
		}
		fmt.Fprintf(out, "| %s | %.1f ms | %.1f ms | %.1f ms | %.2f ms | %.2f ms | %.2f ms |\n", fn,
			median(starts), median(firsts), median(inits), median(warm), percentile(warm, 0.95), median(reported))
	}
	if path := os.Getenv("WAITROOM_E2E_MEASURE_OUT"); path != "" && !t.Failed() {
		if err := os.WriteFile(path, table.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(v []float64) float64 { return percentile(v, 0.5) }

func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[int(p*float64(len(s)-1)+0.5)]
}

func httpEvent(user string, headers map[string]string) []byte {
	ev := map[string]any{
		"version":               "2.0",
		"queryStringParameters": map[string]string{"room": measureRoom},
		"headers":               headers,
		"requestContext":        map[string]any{"authorizer": map[string]any{"jwt": map[string]any{"claims": map[string]string{"sub": user}}}},
	}
	b, _ := json.Marshal(ev)
	return b
}

func orderEvent(token string) []byte {
	ev := map[string]any{
		"version":        "2.0",
		"headers":        map[string]string{"x-entry-token": token, "idempotency-key": measureOrder, "content-type": "application/json"},
		"body":           `{"sku":"tee","qty":1}`,
		"requestContext": map[string]any{"authorizer": map[string]any{"jwt": map[string]any{"claims": map[string]string{"sub": measureUser}}}},
	}
	b, _ := json.Marshal(ev)
	return b
}

func mustInvoke(t *testing.T, r *rie.Runner, fn string, payload []byte) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := r.Invoke(ctx, fn, payload)
	if err != nil || res.FunctionError != "" {
		t.Fatalf("%s: %v %s %s", fn, err, res.FunctionError, res.Payload)
	}
	var resp struct {
		StatusCode int `json:"statusCode"`
	}
	if json.Unmarshal(res.Payload, &resp) == nil && resp.StatusCode >= 300 {
		t.Fatalf("%s answered %s", fn, res.Payload)
	}
	return res.Payload
}

func decodeBody(t *testing.T, payload []byte, v any) {
	t.Helper()
	var resp struct {
		Body string `json:"body"`
	}
	if err := json.Unmarshal(payload, &resp); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(resp.Body), v); err != nil {
		t.Fatalf("%s: %v", resp.Body, err)
	}
}
