package httpapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/redistest"
)

// Issue 22 through the handlers: an operator closes a room with a message;
// a newcomer is refused 403 room_closed with the message and the room's
// page, a waiting user is told CLOSED with it (pollAfterMs null), a token
// holder stays READY, and reopening lets newcomers in again.
func TestCloseRoomThroughTheAPI(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine, func(c *waitroom.Config) { c.PageImageOrigins = []string{"https://img.example"} })
		withAdmin(h, false)
		if resp := h.admin("PUT", "/admin/rooms/sale", `{"ratePerSec":0.001,"title":"Kim's Shoes","brandColor":"#aa3300","logoUrl":"https://img.example/logo.png","language":"ko","message":"Sizes 40-44 are gone"}`); resp.StatusCode != 200 {
			t.Fatalf("PUT: %d %s", resp.StatusCode, resp.Body)
		}
		first := h.call(withRoom(request("POST", "/queue/enter", "first", nil), "sale")) // admitted by the first batch
		if !strings.Contains(first.Body, `"title":"Kim's Shoes"`) || !strings.Contains(first.Body, `"language":"ko"`) || !strings.Contains(first.Body, `"message":"Sizes 40-44 are gone"`) {
			t.Fatalf("enter does not carry the page and the message: %s", first.Body)
		}
		if _, err := h.store.AdmitBatch(context.Background()); err != nil {
			t.Fatal(err)
		}
		waiting := h.call(withRoom(request("POST", "/queue/enter", "second", nil), "sale"))
		if !strings.Contains(waiting.Body, `"status":"WAITING"`) {
			t.Fatalf("second enter: %s", waiting.Body)
		}
		pos := h.call(withRoom(request("GET", "/queue/position", "second", nil), "sale"))
		if !strings.Contains(pos.Body, `"message":"Sizes 40-44 are gone"`) || strings.Contains(pos.Body, "title") {
			t.Errorf("position carries the message, not the page: %s", pos.Body)
		}

		if resp := h.admin("PATCH", "/admin/rooms/sale", `{"closed":true,"message":"Sold out. Thank you!"}`); resp.StatusCode != 200 || !strings.Contains(resp.Body, `"state":"closed"`) {
			t.Fatalf("close: %d %s", resp.StatusCode, resp.Body)
		}
		refused := h.call(withRoom(request("POST", "/queue/enter", "late", nil), "sale"))
		var body map[string]any
		_ = json.Unmarshal([]byte(refused.Body), &body)
		if refused.StatusCode != 403 || body["error"] != "room_closed" || body["message"] != "Sold out. Thank you!" || body["brandColor"] != "#aa3300" {
			t.Errorf("a newcomer of a closed room: %d %s", refused.StatusCode, refused.Body)
		}
		closed := h.call(withRoom(request("GET", "/queue/position", "second", nil), "sale"))
		if closed.StatusCode != 200 || closed.Body != `{"status":"CLOSED","message":"Sold out. Thank you!","pollAfterMs":null}` {
			t.Errorf("a waiting user of a closed room: %d %s", closed.StatusCode, closed.Body)
		}
		ready := h.call(withRoom(request("GET", "/queue/position", "first", nil), "sale"))
		var token struct{ Status, EntryToken string }
		_ = json.Unmarshal([]byte(ready.Body), &token)
		if token.Status != "READY" {
			t.Fatalf("a token holder of a closed room: %s", ready.Body)
		}
		if r := h.order("first", token.EntryToken, "k1", "{}"); r.StatusCode != 201 {
			t.Errorf("the order gate refused a live token of a closed room: %d %s", r.StatusCode, r.Body)
		}

		if resp := h.admin("PATCH", "/admin/rooms/sale", `{"closed":false,"message":""}`); resp.StatusCode != 200 || !strings.Contains(resp.Body, `"state":"open"`) {
			t.Fatalf("reopen: %d %s", resp.StatusCode, resp.Body)
		}
		again := h.call(withRoom(request("POST", "/queue/enter", "late", nil), "sale"))
		if !strings.Contains(again.Body, `"status":"WAITING","position":1,`) || strings.Contains(again.Body, "message") {
			t.Errorf("enter after reopening (a fresh line, no message): %s", again.Body)
		}
	})
}

// Bad page settings are 400 invalid_settings naming the field.
func TestPageSettingsValidated(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine, func(c *waitroom.Config) { c.PageImageOrigins = []string{"https://img.example"} })
		withAdmin(h, false)
		for body, field := range map[string]string{
			`{"message":"` + strings.Repeat("é", 501) + `"}`: "message",
			`{"message":7}`: "message",
			`{"title":"` + strings.Repeat("x", 81) + `"}`: "title",
			`{"title":"two\nlines"}`:                      "title",
			`{"brandColor":"red"}`:                        "brandColor",
			`{"brandColor":"#12345"}`:                     "brandColor",
			`{"logoUrl":"http://img.example/a.png"}`:      "logoUrl",
			`{"logoUrl":"https://evil.example/a.png"}`:    "logoUrl",
			`{"logoUrl":"javascript:alert(1)"}`:           "logoUrl",
			`{"language":"fr"}`:                           "language",
			`{"closed":"yes"}`:                            "closed",
		} {
			resp := h.admin("PUT", "/admin/rooms/bad", body)
			if resp.StatusCode != 400 || !strings.Contains(resp.Body, `"invalid_settings"`) || !strings.Contains(resp.Body, field) {
				t.Errorf("%.60s: %d %s", body, resp.StatusCode, resp.Body)
			}
		}
		if resp := h.admin("PUT", "/admin/rooms/bad", `{"message":"`+strings.Repeat("é", 500)+`","brandColor":"#A0b1C2","logoUrl":"https://img.example/x.svg"}`); resp.StatusCode != 200 {
			t.Errorf("valid page settings: %d %s", resp.StatusCode, resp.Body)
		}
	})
}

// Through the broker (INTAKE=broker): the accept refuses a closed room's
// newcomer with 403 room_closed, and an entry accepted before the close
// is applied as CLOSED: its receipt's position says so.
func TestCloseRoomThroughTheBroker(t *testing.T) {
	t.Parallel() // waits for the consumer; asserts answers, not timing (own store)
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newIntakeHarness(t, engine, waitroom.IntakeBroker, 30)
		withAdmin(h.harness, false)
		if resp := h.admin("PUT", "/admin/rooms/default", `{"ratePerSec":0.001}`); resp.StatusCode != 200 {
			t.Fatalf("PUT: %d %s", resp.StatusCode, resp.Body)
		}
		early := h.accepted(t, "early")
		if resp := h.admin("PATCH", "/admin/rooms/default", `{"closed":true,"message":"Sold out"}`); resp.StatusCode != 200 {
			t.Fatalf("close: %d %s", resp.StatusCode, resp.Body)
		}
		if r := h.enter("late"); r.StatusCode != 403 || !strings.Contains(r.Body, `"error":"room_closed"`) || !strings.Contains(r.Body, `"message":"Sold out"`) {
			t.Errorf("broker accept in a closed room: %d %s", r.StatusCode, r.Body)
		}
		h.run(t)
		deadline := time.Now().Add(10 * time.Second)
		for {
			r := h.receiptPosition(early)
			if strings.Contains(r.Body, `"status":"CLOSED"`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the entry accepted before the close: %d %s", r.StatusCode, r.Body)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}
