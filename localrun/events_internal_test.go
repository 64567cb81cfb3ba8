package localrun

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/awslambda"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// An idle stream carries a comment at every keep-alive period, so that
// proxies never see it silent for long (15 s in production, 50 ms here).
func TestStreamKeepAlive(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		srv := engine.Start(t)
		cfg, err := waitroom.LoadConfig(func(k string) (string, bool) {
			v, ok := map[string]string{"REDIS_URL": srv.URL(), "ADMIT_RATE_PER_SEC": "0.001"}[k]
			return v, ok
		}, waitroom.LocalDefaults)
		if err != nil {
			t.Fatal(err)
		}
		store := redisstore.New(srv.Client(), cfg)
		for _, u := range []string{"h:first", "h:second"} { // as X-User-Id names them; nobody is admitted: no admitter runs
			if _, err := store.Enter(context.Background(), "tv", u); err != nil {
				t.Fatal(err)
			}
		}
		ev := &events{api: &awslambda.API{Config: cfg, Queue: store}, seats: store, hub: newHub(store, cfg.AdmitInterval, time.Second),
			done: make(chan struct{}), keepAlive: 50 * time.Millisecond}
		ts := httptest.NewServer(ev)
		defer ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/queue/events?room=tv", nil)
		req.Header.Set("X-User-Id", "second")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var lines []string
		start := time.Now()
		for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
			lines = append(lines, sc.Text())
			if strings.Count(strings.Join(lines, "\n"), ": keep-alive") == 3 {
				break
			}
		}
		if got := strings.Join(lines, "\n"); !strings.HasPrefix(got, "event: standing\ndata: {\"status\":\"WAITING\",\"position\":2,") ||
			strings.Count(got, "event: standing") != 1 {
			t.Fatalf("stream:\n%s", got)
		}
		if took := time.Since(start); took < 150*time.Millisecond {
			t.Errorf("three keep-alives in %v; want one per 50 ms", took)
		}
	})
}
