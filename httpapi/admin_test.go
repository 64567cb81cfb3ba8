package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/httpapi"
	"github.com/waitroom/waitroom/internal/redistest"
)

const testAdminToken = "test-admin-token-0123456789"

// withAdmin serves the admin routes through the harness's router and
// returns the audit log.
func withAdmin(h *harness, trustIAM bool) *bytes.Buffer {
	var audit bytes.Buffer
	h.api.Admin = &httpapi.Admin{Config: h.cfg, Rooms: h.store, Token: testAdminToken, TrustIAM: trustIAM,
		Log: slog.New(slog.NewJSONHandler(&audit, nil))}
	return &audit
}

func adminRequest(method, path, body string, token string) events.APIGatewayV2HTTPRequest {
	req := request(method, path, "", nil)
	if token != "" {
		req.Headers["authorization"] = "Bearer " + token
	}
	req.Body = body
	return req
}

func (h *harness) admin(method, path, body string) events.APIGatewayV2HTTPResponse {
	return h.call(adminRequest(method, path, body, testAdminToken))
}

func TestAdminAuthentication(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		audit := withAdmin(h, false)
		for name, req := range map[string]events.APIGatewayV2HTTPRequest{
			"no header":      adminRequest("GET", "/admin/rooms", "", ""),
			"wrong token":    adminRequest("GET", "/admin/rooms", "", "test-admin-token-0123456780"),
			"a prefix of it": adminRequest("GET", "/admin/rooms", "", testAdminToken[:10]),
			"another scheme": func() events.APIGatewayV2HTTPRequest {
				r := adminRequest("GET", "/admin/rooms", "", "")
				r.Headers["authorization"] = "Basic " + testAdminToken
				return r
			}(),
			"a visitor's identity":    adminRequest("PUT", "/admin/rooms/sale", `{}`, ""),
			"IAM without trusting it": iamRequest("GET", "/admin/rooms"),
		} {
			t.Run(name, func(t *testing.T) {
				resp := h.call(req)
				wantError(t, resp, 401, "unauthenticated")
				if resp.Headers["WWW-Authenticate"] == "" {
					t.Fatal("401 without WWW-Authenticate")
				}
			})
		}
		if r := h.admin("GET", "/admin/rooms", ""); r.StatusCode != 200 || decode(t, r)["rooms"] == nil {
			t.Fatalf("valid token: %d %s", r.StatusCode, r.Body)
		}
		if r := h.call(adminRequest("GET", "/admin/rooms", "", "  "+testAdminToken)); r.StatusCode != 200 {
			t.Fatalf("spaces around the token: %d %s", r.StatusCode, r.Body)
		}

		// The admin function trusts the principal API Gateway's AWS_IAM put there.
		withAdmin(h, true)
		if r := h.call(iamRequest("PUT", "/admin/rooms/sale")); r.StatusCode != 200 {
			t.Fatalf("IAM principal: %d %s", r.StatusCode, r.Body)
		}
		if audit.Len() != 0 {
			t.Fatalf("refused requests wrote audit lines: %s", audit)
		}
	})
}

func iamRequest(method, path string) events.APIGatewayV2HTTPRequest {
	req := adminRequest(method, path, "", "")
	if method == "PUT" {
		req.Body = `{"ratePerSec": 5}`
	}
	req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:iam::123456789012:user/ops", AccountID: "123456789012"},
	}
	return req
}

func TestAdminValidation(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		withAdmin(h, false)
		for body, field := range map[string]string{
			`{"ratePerSec": -1}`:                         "ratePerSec",
			`{"ratePerSec": "fast"}`:                     "ratePerSec",
			`{"ratePerSec": null}`:                       "ratePerSec",
			`{"capacity": 0}`:                            "capacity",
			`{"capacity": 2.5}`:                          "capacity",
			`{"entryTokenTtlSeconds": 0}`:                "entryTokenTtlSeconds",
			`{"maxActive": -3}`:                          "maxActive",
			`{"paused": "yes"}`:                          "paused",
			`{"opensAt": "tomorrow at noon"}`:            "opensAt",
			`{"opensAt": "2026-11-27 00:00:00"}`:         "opensAt",
			`{"rate": 40}`:                               "rate",
			`{"ratePerSec": 40, "capacity": 10, "x": 1}`: "x",
			`{"adaptive": {"targetP95Ms": 0, "minRatePerSec": 1, "maxRatePerSec": 2}}`:     "adaptive.targetP95Ms",
			`{"adaptive": {"targetP95Ms": 250, "minRatePerSec": 0, "maxRatePerSec": 2}}`:   "adaptive.minRatePerSec",
			`{"adaptive": {"targetP95Ms": 250, "minRatePerSec": 5, "maxRatePerSec": 2}}`:   "adaptive.minRatePerSec",
			`{"adaptive": {"targetP95Ms": 250, "minRatePerSec": 1, "maxRatePerSec": 2e6}}`: "adaptive.maxRatePerSec",
			`{"adaptive": {"targetP95Ms": 250}}`:                                           "adaptive",
			`{"adaptive": "on"}`:                                                           "adaptive",
			`[1, 2]`:                                                                       "JSON object",
			`not json`:                                                                     "JSON object",
			`{"ratePerSec": 40} {"ratePerSec": 50}`:                                        "JSON object",
			``:                                                                             "JSON object",
		} {
			for _, method := range []string{"PUT", "PATCH"} {
				r := h.admin(method, "/admin/rooms/sale", body)
				wantError(t, r, 400, "invalid_settings")
				if msg, _ := decode(t, r)["message"].(string); !strings.Contains(msg, field) {
					t.Errorf("%s %s: message %q does not name %q", method, body, msg, field)
				}
			}
		}
		wantError(t, h.admin("GET", "/admin/rooms/sale", ""), 404, "room_not_found")
		wantError(t, h.admin("PATCH", "/admin/rooms/sale", `{"ratePerSec": 4}`), 404, "room_not_found")
		wantError(t, h.admin("POST", "/admin/rooms/sale/pause", ""), 404, "room_not_found")
		wantError(t, h.admin("GET", "/admin/rooms/Bad_Room", ""), 400, "invalid_room")
		wantError(t, h.admin("GET", "/admin/rooms/sale/stop", ""), 404, "not_found")
		r := h.admin("DELETE", "/admin/rooms/sale", "")
		wantError(t, r, 405, "method_not_allowed")
		if r.Headers["Allow"] != "GET, PUT, PATCH" {
			t.Fatalf("Allow %q", r.Headers["Allow"])
		}
		wantError(t, h.admin("GET", "/admin/rooms/sale/pause", ""), 405, "method_not_allowed")
	})
}

// An operator's whole sale through the API: create, pause, resume, change
// the rate, schedule an opening; visitors see each change at once.
func TestAdminSteersASale(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine, func(c *waitroom.Config) { c.OpenRooms = false })
		audit := withAdmin(h, false)
		wantError(t, h.call(withRoom(request("POST", "/queue/enter", "alice", nil), "sale")), 404, "room_not_found")
		wantError(t, h.call(withRoom(request("GET", "/queue/position", "alice", nil), "sale")), 404, "room_not_found")

		r := h.admin("PUT", "/admin/rooms/sale", `{"ratePerSec": 0.5, "maxActive": 3}`)
		st := decode(t, r)
		if r.StatusCode != 200 || st["ratePerSec"] != 0.5 || st["maxActive"] != 3.0 || st["capacity"] != float64(h.cfg.QueueCapacity) ||
			st["state"] != "open" || st["opensAt"] != nil || st["paused"] != false {
			t.Fatalf("PUT: %d %s", r.StatusCode, r.Body)
		}
		enter := func(user string) map[string]any {
			return decode(t, h.call(withRoom(request("POST", "/queue/enter", user, nil), "sale")))
		}
		for _, u := range []string{"alice", "bob", "carol"} {
			enter(u)
		}
		if w := enter("carol"); w["status"] != "WAITING" || w["position"] != 3.0 || w["estimatedWaitSeconds"] != 6.0 || w["paused"] != nil {
			t.Fatalf("the room's own rate (0.5/s) sets the estimate: %v", w)
		}

		r = h.admin("POST", "/admin/rooms/sale/pause", "")
		if st := decode(t, r); r.StatusCode != 200 || st["state"] != "paused" || st["paused"] != true || st["waiting"] != 3.0 {
			t.Fatalf("pause: %d %s", r.StatusCode, r.Body)
		}
		w := decode(t, h.call(withRoom(request("GET", "/queue/position", "alice", nil), "sale")))
		if poll := w["pollAfterMs"].(float64); w["paused"] != true || w["position"] != 1.0 || !farTier(h, poll) {
			t.Fatalf("a paused room's first in line polls at the far tier: %v", w)
		}
		r = h.admin("POST", "/admin/rooms/sale/resume", "")
		if st := decode(t, r); st["state"] != "open" || st["paused"] != false {
			t.Fatalf("resume: %s", r.Body)
		}
		r = h.admin("PATCH", "/admin/rooms/sale", `{"ratePerSec": 40}`)
		if st := decode(t, r); st["ratePerSec"] != 40.0 || st["maxActive"] != 3.0 {
			t.Fatalf("PATCH changes only the given field: %s", r.Body)
		}

		opens := time.Now().Add(time.Minute).UTC().Truncate(time.Second)
		r = h.admin("PATCH", "/admin/rooms/sale", `{"opensAt": "`+opens.Format(time.RFC3339)+`"}`)
		if st := decode(t, r); st["state"] != "prequeue" || st["opensAt"] != opens.Format(time.RFC3339) {
			t.Fatalf("scheduled opening: %s", r.Body)
		}
		p := enter("dave")
		if poll := p["pollAfterMs"].(float64); p["status"] != "PREQUEUE" || p["opensAt"] != opens.Format(time.RFC3339) || poll < 55_000 || poll > 65_200 {
			t.Fatalf("pre-queue answer: %v", p)
		}
		r = h.admin("GET", "/admin/rooms", "")
		rooms, _ := decode(t, r)["rooms"].([]any)
		if len(rooms) != 1 || rooms[0].(map[string]any)["prequeued"] != 1.0 || rooms[0].(map[string]any)["waiting"] != 3.0 {
			t.Fatalf("list: %s", r.Body)
		}

		log := audit.String()
		if strings.Count(log, `"msg":"admin change"`) != 5 || !strings.Contains(log, `"who":"admin token"`) ||
			!strings.Contains(log, `"old":"{\"ratePerSec\":0.5,`) || !strings.Contains(log, `"room":"sale"`) {
			t.Fatalf("audit log:\n%s", log)
		}
		if strings.Contains(log, testAdminToken) {
			t.Fatal("the admin token is in the log")
		}
	})
}

// farTier: ms is the farthest POLL_TIERS tier ±20%.
func farTier(h *harness, ms float64) bool {
	return ms >= float64(h.cfg.FarPollMs(0)) && ms <= float64(h.cfg.FarPollMs(0.9999))
}

// When admission stalls (no batch for five intervals) or live tokens fill
// maxActive, the front of the line polls at the far tier, not at its turn.
func TestStalledAdmissionBacksOff(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine)
		withAdmin(h, false)
		for i := range 15 {
			h.enter(fmt.Sprintf("u%02d", i))
		}
		if _, err := h.store.AdmitBatch(context.Background()); err != nil { // 10 admitted
			t.Fatal(err)
		}
		poll := func() float64 {
			m := decode(t, h.position("u10"))
			if m["position"] != 1.0 {
				t.Fatalf("position %v", m)
			}
			return m["pollAfterMs"].(float64)
		}
		if p := poll(); p > 200 {
			t.Fatalf("admission runs: the front polls at its turn, got %v ms", p)
		}
		time.Sleep(6 * h.cfg.AdmitInterval)
		if p := poll(); !farTier(h, p) {
			t.Fatalf("no batch for 6 intervals: far tier expected, got %v ms", p)
		}
		h.admin("PUT", "/admin/rooms/default", `{"maxActive": 10}`)
		if _, err := h.store.AdmitBatch(context.Background()); err != nil { // a batch runs, admits nobody
			t.Fatal(err)
		}
		if p := poll(); !farTier(h, p) {
			t.Fatalf("maxActive reached: far tier expected, got %v ms", p)
		}
	})
}

// An adaptive room over HTTP: the status carries the setting, the rate
// admission uses and the downstream figures (null before any order), the
// answers' estimates use the effective rate, and null turns it off.
func TestAdminAdaptiveRoom(t *testing.T) {
	redistest.Each(t, func(t *testing.T, engine redistest.Engine) {
		h := newHarness(t, engine, func(c *waitroom.Config) { c.OpenRooms = false })
		withAdmin(h, false)
		r := h.admin("PUT", "/admin/rooms/sale", `{"ratePerSec": 500, "adaptive": {"targetP95Ms": 250, "minRatePerSec": 10, "maxRatePerSec": 200}}`)
		st := decode(t, r)
		adaptive, _ := st["adaptive"].(map[string]any)
		if r.StatusCode != 200 || adaptive["targetP95Ms"] != 250.0 || adaptive["maxRatePerSec"] != 200.0 || st["ratePerSec"] != 500.0 ||
			st["effectiveRatePerSec"] != 200.0 || st["downstreamP95Ms"] != nil || st["downstreamErrorRate"] != nil {
			t.Fatalf("PUT: %d %s", r.StatusCode, r.Body)
		}
		for i := range 250 {
			if _, err := h.store.Enter(context.Background(), "sale", waitroom.Unlimited(fmt.Sprint("u", i))); err != nil {
				t.Fatal(err)
			}
		}
		w := decode(t, h.call(withRoom(request("POST", "/queue/enter", "last", nil), "sale")))
		if w["position"] != 251.0 || w["estimatedWaitSeconds"] != 2.0 {
			t.Fatalf("the estimate at the effective 200/s, not 500/s: %v", w)
		}
		r = h.admin("PATCH", "/admin/rooms/sale", `{"adaptive": {"targetP95Ms": 250, "minRatePerSec": 10, "maxRatePerSec": 20}}`)
		if st = decode(t, r); st["effectiveRatePerSec"] != 20.0 || st["ratePerSec"] != 500.0 {
			t.Fatalf("narrower bounds: %s", r.Body)
		}
		r = h.admin("PATCH", "/admin/rooms/sale", `{"adaptive": null}`)
		if st = decode(t, r); st["effectiveRatePerSec"] != 500.0 || st["adaptive"] != nil {
			t.Fatalf("off: %s", r.Body)
		}
		r = h.admin("GET", "/admin/rooms", "")
		rooms, _ := decode(t, r)["rooms"].([]any)
		if len(rooms) != 1 || rooms[0].(map[string]any)["effectiveRatePerSec"] != 500.0 {
			t.Fatalf("list: %s", r.Body)
		}
	})
}
