package localrun_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/localrun"
)

// Issue 19: a token of one room buys only in its room. With ORDER_ROOMS the
// gate refuses a token of any other room before the order API hears of it;
// always, the order API learns the room, the user and the token's id.
func TestOrdersAreBoundToTheirRoom(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		var calls atomic.Int64
		var seen atomic.Pointer[http.Header]
		shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			h := r.Header.Clone()
			seen.Store(&h)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"orderId":"o-1"}`))
		}))
		defer shop.Close()
		r, _ := startRunner(t, engine, map[string]string{"ORDER_ROOMS": "tv", "ORDER_API_URL": shop.URL})

		cheap := readyTokenOf(t, r, "cheap", "alice")
		code, body := do(t, "POST", r.URL+"/orders", "alice", map[string]string{"X-Entry-Token": cheap})
		if code != http.StatusForbidden || !strings.Contains(body, `"wrong_room"`) || calls.Load() != 0 {
			t.Fatalf("a token of room cheap at the gate of tv: %d %s, %d orders reached the shop", code, body, calls.Load())
		}
		tv := readyTokenOf(t, r, "tv", "alice")
		if code, body := do(t, "POST", r.URL+"/orders", "alice", map[string]string{"X-Entry-Token": tv}); code != http.StatusCreated {
			t.Fatalf("a token of room tv: %d %s", code, body)
		}
		h := *seen.Load()
		if h.Get("X-Waitroom-Room") != "tv" || h.Get("X-Waitroom-User") != "h:alice" || h.Get("X-Waitroom-Token-Id") != jti(t, tv) || h.Get("X-User-Id") != "alice" {
			t.Fatalf("the order API saw room %q, user %q, token id %q (jti %q), X-User-Id %q", h.Get("X-Waitroom-Room"),
				h.Get("X-Waitroom-User"), h.Get("X-Waitroom-Token-Id"), jti(t, tv), h.Get("X-User-Id"))
		}
	})
}

// readyTokenOf enters user in room and polls until READY.
func readyTokenOf(t *testing.T, r *localrun.Runner, room, user string) string {
	t.Helper()
	code, body := do(t, "POST", r.URL+"/queue/enter?room="+room, user, nil)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var a answer
		if code != 200 || json.Unmarshal([]byte(body), &a) != nil || time.Now().After(deadline) {
			t.Fatalf("%s in %s: %d %s", user, room, code, body)
		}
		if a.Status == "READY" {
			return a.EntryToken
		}
		code, body = do(t, "GET", r.URL+"/queue/position?room="+room, user, nil)
	}
}

func jti(t *testing.T, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", token)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	var c struct {
		ID string `json:"jti"`
	}
	if err != nil || json.Unmarshal(raw, &c) != nil || c.ID == "" {
		t.Fatalf("claims %q: %v", raw, err)
	}
	return c.ID
}

// Issue 32: by default (ORDER_ROOMS unset) a token of a room nobody
// created, a quiet room any visitor opens and is admitted to at once,
// never buys: 403 wrong_room, and the order API hears nothing of it. The
// demo sale room (tv) sells, as does a room an operator creates.
func TestQuietRoomTokenDoesNotBuyByDefault(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		r, _ := startRunner(t, engine, nil)
		quiet := readyTokenOf(t, r, "cheap", "alice")
		code, body := do(t, "POST", r.URL+"/orders", "alice", map[string]string{"X-Entry-Token": quiet})
		if code != http.StatusForbidden || !strings.Contains(body, `"wrong_room"`) || r.Demo.Stats().Orders != 0 {
			t.Fatalf("a token of a quiet room nobody created: %d %s, %d orders taken", code, body, r.Demo.Stats().Orders)
		}
		tv := readyTokenOf(t, r, "tv", "alice")
		if code, body := do(t, "POST", r.URL+"/orders", "alice", map[string]string{"X-Entry-Token": tv}); code != http.StatusCreated {
			t.Fatalf("a token of the demo sale room tv: %d %s", code, body)
		}
		req, _ := http.NewRequest(http.MethodPut, r.URL+"/admin/rooms/launch", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+string(r.Config.AdminToken))
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode/100 != 2 {
			t.Fatalf("creating room launch: %v %v", resp, err)
		}
		_ = resp.Body.Close()
		launch := readyTokenOf(t, r, "launch", "bob")
		if code, body := do(t, "POST", r.URL+"/orders", "bob", map[string]string{"X-Entry-Token": launch}); code != http.StatusCreated {
			t.Fatalf("a token of a room an operator created: %d %s", code, body)
		}
	})
}
