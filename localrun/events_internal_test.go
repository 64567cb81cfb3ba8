package localrun

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
)

// An idle stream carries a comment at every keep-alive period, so that
// proxies never see it silent for long (15 s in production, 50 ms here).
func TestStreamKeepAlive(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		te := serveEvents(t, engine, map[string]string{"ADMIT_RATE_PER_SEC": "0.001"}, func(e *events, _ *httptest.Server) {
			e.keepAlive = 50 * time.Millisecond
		})
		te.enter(t, "first", "second") // nobody is admitted: no admitter runs
		// The clock starts before the stream opens: the server's ticker starts
		// while open is still reading the first event, so a clock started after
		// open returns would see the third tick a little before 150 ms.
		start := time.Now()
		lines := te.open(t, context.Background(), "second")
		got := "event: standing"
		for strings.Count(got, ": keep-alive") < 3 {
			l, ok := <-lines
			if !ok {
				t.Fatalf("the stream ended:\n%s", got)
			}
			got += "\n" + l
		}
		if !strings.HasPrefix(got, "event: standing\ndata: {\"status\":\"WAITING\",\"position\":2,") || strings.Count(got, "event: standing") != 1 {
			t.Fatalf("stream:\n%s", got)
		}
		if took := time.Since(start); took < 150*time.Millisecond {
			t.Errorf("three keep-alives in %v; want one per 50 ms", took)
		}
	})
}
