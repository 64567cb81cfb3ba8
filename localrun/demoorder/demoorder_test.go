package demoorder_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/localrun/demoorder"
)

// The pool never runs more than its connections at once; the rest queue.
func TestPoolBoundsConcurrency(t *testing.T) {
	svc := demoorder.New(4, func() time.Duration { return 20 * time.Millisecond })
	srv := httptest.NewServer(svc)
	defer srv.Close()
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(srv.URL+"/orders", "application/json", strings.NewReader("{}"))
			if err != nil || resp.StatusCode != 201 {
				t.Errorf("%v %v", resp, err)
				return
			}
			resp.Body.Close()
		}()
	}
	wg.Wait()
	st := svc.Stats()
	if st.Orders != 20 || st.MaxInFlight != 4 || st.MaxQueued < 1 {
		t.Fatalf("%+v", st)
	}
}

// One order per entry token, as docs/API.md asks of an order API: a second
// request with an X-Waitroom-Token-Id already ordered (a token a store
// failover let through the gate again) gets the first order, not a new one.
func TestOneOrderPerTokenID(t *testing.T) {
	svc := demoorder.New(2, func() time.Duration { return 0 })
	srv := httptest.NewServer(svc)
	defer srv.Close()
	order := func(token, key string) string {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/orders", strings.NewReader("{}"))
		req.Header.Set("X-User-Id", "alice")
		req.Header.Set("X-Waitroom-Token-Id", token)
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("%v %v", resp, err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return b.String()
	}
	first := order("t1", "k1")
	if again := order("t1", "k2"); again != first {
		t.Errorf("the same token with another key ordered again: %s, first %s", again, first)
	}
	if other := order("t2", ""); other == first {
		t.Errorf("another token got the first order: %s", other)
	}
	if st := svc.Stats(); st.Orders != 2 {
		t.Errorf("%d orders made, want 2", st.Orders)
	}
}
