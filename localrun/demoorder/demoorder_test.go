package demoorder_test

import (
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
