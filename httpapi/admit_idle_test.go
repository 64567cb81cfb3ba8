package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/awslambda"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/metrics"
)

// idleAdmit is the admit function over a real store, with its metrics and
// a hook that runs after each batch has reached the store.
type idleAdmit struct {
	t       *testing.T
	h       *harness
	fn      func(context.Context, json.RawMessage) (awslambda.AdmitResult, error)
	emf     bytes.Buffer
	m       *awslambda.AdmitMetrics
	batches []waitroom.Batch
	after   func() // run once after the next batch
}

func newIdleAdmit(t *testing.T, engine redistest.Engine, batches int) *idleAdmit {
	x := &idleAdmit{t: t}
	x.h = newHarness(t, engine, func(c *waitroom.Config) { c.AdmitInterval, c.EntryTokenTTL = 20*time.Millisecond, time.Second })
	x.m = awslambda.NewAdmitMetrics(metrics.NewRecorder(&x.emf))
	x.fn = awslambda.AdmitFunction(&waitroom.Admitter{Queue: x.h.store, Interval: x.h.cfg.AdmitInterval, Batches: batches, OnBatch: func(b waitroom.Batch) {
		x.m.Observe(b)
		x.batches = append(x.batches, b)
		if f := x.after; f != nil {
			x.after = nil
			f()
		}
	}}, nil)
	return x
}

// invoke runs one invocation as the schedule would and returns its result
// and the heartbeat it emitted.
func (x *idleAdmit) invoke() (awslambda.AdmitResult, float64) {
	x.t.Helper()
	x.batches, x.emf = nil, bytes.Buffer{}
	res, err := x.fn(context.Background(), json.RawMessage(`{"source":"aws.events","detail-type":"Scheduled Event"}`))
	x.m.Flush()
	if err != nil || res.Failed != 0 {
		x.t.Fatalf("admit: %+v %v", res, err)
	}
	heartbeat := 0.0
	for _, line := range strings.Split(strings.TrimSpace(x.emf.String()), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil {
			if v, ok := rec[metrics.AdmitBatches].(float64); ok {
				heartbeat += v
			}
		}
	}
	return res, heartbeat
}

// firstBatchAdmitsOne: the invocation's first batch admitted the one user
// waiting (its number, which it claims at its next call).
func (x *idleAdmit) firstBatchAdmitsOne() bool {
	if len(x.batches) == 0 {
		return false
	}
	n := 0
	for _, r := range x.batches[0].Rooms {
		n += len(r.Admitted)
	}
	return n == 1
}

// An idle invocation costs one batch and still beats the heartbeat; whoever
// enters during it (after its batch) or after it is admitted by the first
// batch of the next invocation, which then runs in full.
func TestAdmitIdleInvocations(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		const batches = 25
		x := newIdleAdmit(t, engine, batches)
		ctx := context.Background()

		if res, hb := x.invoke(); !res.Idle || res.Batches != 1 || hb != 1 {
			t.Fatalf("no rooms: %+v, heartbeat %v; want one idle batch, heartbeat 1", res, hb)
		}
		x.after = func() {
			if _, err := x.h.store.Enter(ctx, "quiet", waitroom.Unlimited("during")); err != nil {
				t.Error(err)
			}
		}
		if res, hb := x.invoke(); !res.Idle || res.Batches != 1 || hb != 1 {
			t.Fatalf("entrant after the batch: %+v, heartbeat %v; want one idle batch", res, hb)
		}
		res, hb := x.invoke()
		if !x.firstBatchAdmitsOne() || res.Idle || res.Batches < batches || hb != float64(res.Batches) {
			t.Fatalf("next invocation: %+v, heartbeat %v, first batch %+v; want 'during' admitted first, then the whole invocation", res, hb, x.batches[0])
		}
		// The token keeps admission awake until it expires (1 s here), then
		// invocations are idle again.
		for i := 0; ; i++ {
			if res, _ := x.invoke(); res.Idle {
				break
			}
			if i == 10 {
				t.Fatal("never idle again after the token expired")
			}
		}
		if _, err := x.h.store.Enter(ctx, "quiet", waitroom.Unlimited("after")); err != nil {
			t.Fatal(err)
		}
		if res, _ := x.invoke(); !x.firstBatchAdmitsOne() || res.Idle || res.Batches < batches {
			t.Fatalf("entrant after an idle invocation: %+v, first batch %+v", res, x.batches[0])
		}
	})
}
