package localrun_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
)

// Issue 32: a client that gives up mid-order must not get a second order
// out of one token. The order API takes the order as it arrives and answers
// a little later; the client aborts in between. Before, the gate's call
// ran on the request's context: the abort cut it, the gate released the
// token, and the next attempt was 201 again (two orders of one token id).
func TestClientAbortMidOrderOrdersOnce(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		var mu sync.Mutex
		orders := map[string]int{} // the order API's log: orders per token id
		arrived := make(chan struct{}, 4)
		shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			orders[r.Header.Get("X-Waitroom-Token-Id")]++
			mu.Unlock()
			arrived <- struct{}{}
			time.Sleep(300 * time.Millisecond) // the order is taken; the answer is on its way
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"orderId":"o-1"}`))
		}))
		defer shop.Close()
		r, _ := startRunner(t, engine, map[string]string{"ORDER_API_URL": shop.URL, "ORDER_ROOMS": "tv"})
		token := readyTokenOf(t, r, "tv", "alice")

		ctx, abort := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.URL+"/orders", strings.NewReader(`{"sku":"tv-55"}`))
		req.Header.Set("X-User-Id", "alice")
		req.Header.Set("X-Entry-Token", token)
		req.Header.Set("Content-Type", "application/json")
		done := make(chan error, 1)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				_ = resp.Body.Close()
			}
			done <- err
		}()
		<-arrived
		abort() // the client gives up while the order API holds the order
		if err := <-done; err == nil {
			t.Fatal("the aborted request got an answer")
		}
		// Again with the same token, as a client retries: 409 while the first
		// order is still finishing, then its final answer.
		var code int
		var body string
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			code, body = do(t, "POST", r.URL+"/orders", "alice", map[string]string{"X-Entry-Token": token})
			if code != http.StatusConflict || time.Now().After(deadline) {
				break
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if code == http.StatusCreated || len(orders) != 1 || orders[jti(t, token)] != 1 {
			t.Fatalf("after an abort, the retry: %d %s; the order API's log: %v (want one order of token id %s)", code, body, orders, jti(t, token))
		}
		if code != http.StatusForbidden || !strings.Contains(body, `"entry_token_invalid"`) {
			t.Fatalf("the retry after the aborted order: %d %s, want 403 entry_token_invalid (the token was used)", code, body)
		}
	})
}
