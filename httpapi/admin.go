package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
)

// Admin serves the operators' routes under /admin (docs/API.md, "Admin
// API"): room settings, pause and resume, and each room's status.
type Admin struct {
	Config waitroom.Config // the defaults of rooms without stored settings
	Rooms  waitroom.Rooms
	// Token is the bearer token operators send outside AWS (ADMIN_TOKEN);
	// empty accepts no bearer token at all.
	Token waitroom.Secret
	// TrustIAM accepts the caller API Gateway's AWS_IAM authorization put in
	// requestContext.authorizer.iam. Only the admin function sets it: its
	// routes are all AWS_IAM, and API Gateway builds that context after
	// checking the SigV4 signature, so no caller can write it. Hosts that
	// build events from plain HTTP (the local runner) never fill it either.
	TrustIAM     bool
	Log          *slog.Logger // the audit lines; nil logs nothing
	StoreTimeout time.Duration
}

// adminTokenWho names a bearer-token caller in the audit log: the token
// itself is never logged.
const adminTokenWho = "admin token"

// adminRoute is one room route: its method and what it does.
type adminRoute struct {
	method string
	serve  adminHandler
}

// Route dispatches on path and method, then authenticates the caller: the
// routes are public knowledge (docs/API.md), so 404 and 405 come first, as
// they do from API Gateway.
func (a *Admin) Route(ctx context.Context, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	room, serve, refused := a.route(req)
	if serve == nil {
		return refused
	}
	who, ok := a.caller(req)
	if !ok {
		resp := ErrorResponse(waitroom.Errorf(waitroom.EUnauthenticated, "the admin API takes Authorization: Bearer <ADMIN_TOKEN> (or, in AWS, a SigV4-signed request)"))
		resp.Headers["WWW-Authenticate"] = `Bearer realm="waitroom-admin"`
		return resp
	}
	return serve(ctx, who, room, req)
}

type adminHandler = func(ctx context.Context, who, room string, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse

// route finds the handler of req, or the answer refusing it.
func (a *Admin) route(req events.APIGatewayV2HTTPRequest) (string, adminHandler, events.APIGatewayV2HTTPResponse) {
	path := strings.TrimSuffix(req.RawPath, "/")
	if path == "" {
		path = req.RequestContext.HTTP.Path
	}
	method := req.RequestContext.HTTP.Method
	if path == "/admin/rooms" {
		if method != http.MethodGet {
			return "", nil, notAllowed(path, http.MethodGet)
		}
		return "", a.list, events.APIGatewayV2HTTPResponse{}
	}
	rest, found := strings.CutPrefix(path, "/admin/rooms/")
	room, action, _ := strings.Cut(rest, "/")
	routes := map[string][]adminRoute{
		"":       {{http.MethodGet, a.get}, {http.MethodPut, a.put}, {http.MethodPatch, a.patch}},
		"pause":  {{http.MethodPost, a.pause(true)}},
		"resume": {{http.MethodPost, a.pause(false)}},
	}
	candidates, known := routes[action]
	switch {
	case !found || !known || room == "":
		return "", nil, ErrorResponse(waitroom.Errorf(waitroom.ENotFound, "no route %s", path))
	case !waitroom.ValidRoom(room):
		return "", nil, ErrorResponse(waitroom.Errorf(waitroom.EInvalidRoom, "room must match ^[a-z0-9][a-z0-9-]{0,63}$"))
	}
	allowed := make([]string, 0, len(candidates))
	for _, r := range candidates {
		if r.method == method {
			return room, r.serve, events.APIGatewayV2HTTPResponse{}
		}
		allowed = append(allowed, r.method)
	}
	return "", nil, notAllowed(path, strings.Join(allowed, ", "))
}

func notAllowed(path, allow string) events.APIGatewayV2HTTPResponse {
	resp := ErrorResponse(waitroom.Errorf(waitroom.EMethodNotAllowed, "%s takes %s", path, allow))
	resp.Headers["Allow"] = allow
	return resp
}

// caller names who sends req: the IAM principal, or the bearer of the admin
// token, compared in constant time (of the hashes, so that the length
// leaks nothing either).
func (a *Admin) caller(req events.APIGatewayV2HTTPRequest) (string, bool) {
	if auth := req.RequestContext.Authorizer; a.TrustIAM && auth != nil && auth.IAM != nil && auth.IAM.UserARN != "" {
		return auth.IAM.UserARN, true
	}
	scheme, token, ok := strings.Cut(header(req, "Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || a.Token == "" {
		return "", false
	}
	got, want := sha256.Sum256([]byte(strings.TrimSpace(token))), sha256.Sum256([]byte(string(a.Token)))
	return adminTokenWho, subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

func (a *Admin) list(ctx context.Context, _, _ string, _ events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	rooms, err := withTimeout(ctx, a.storeTimeout(), a.Rooms.List)
	if err != nil {
		return ErrorResponse(err)
	}
	return jsonResponse(http.StatusOK, map[string]any{"rooms": rooms})
}

func (a *Admin) get(ctx context.Context, _, room string, _ events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	st, err := withTimeout(ctx, a.storeTimeout(), func(ctx context.Context) (waitroom.RoomStatus, error) {
		return a.Rooms.Status(ctx, room)
	})
	if err != nil {
		return ErrorResponse(err)
	}
	return jsonResponse(http.StatusOK, st)
}

// put creates the room or replaces its settings; omitted fields take the
// defaults. The body is checked before the store is asked anything.
func (a *Admin) put(ctx context.Context, who, room string, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	body, err := requestBody(req)
	if err != nil {
		return ErrorResponse(err)
	}
	next, err := waitroom.ApplySettingsJSON(a.Config.RoomDefaults(), body, time.Now())
	if err == nil {
		err = next.CheckLogoOrigin(a.Config.PageImageOrigins)
	}
	if err != nil {
		return ErrorResponse(err)
	}
	return a.change(ctx, who, room, "put", true, func(waitroom.Settings) (waitroom.Settings, error) { return next, nil })
}

// patch changes only the fields the body names.
func (a *Admin) patch(ctx context.Context, who, room string, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	body, err := requestBody(req)
	if err != nil {
		return ErrorResponse(err)
	}
	if _, err := waitroom.ApplySettingsJSON(a.Config.RoomDefaults(), body, time.Now()); err != nil {
		return ErrorResponse(err) // unknown fields and wrong types, before any store call
	}
	return a.change(ctx, who, room, "patch", false, func(old waitroom.Settings) (waitroom.Settings, error) {
		next, err := waitroom.ApplySettingsJSON(old, body, time.Now())
		if err == nil && next.LogoURL != old.LogoURL {
			err = next.CheckLogoOrigin(a.Config.PageImageOrigins)
		}
		return next, err
	})
}

func (a *Admin) pause(paused bool) adminHandler {
	action := map[bool]string{true: "pause", false: "resume"}[paused]
	return func(ctx context.Context, who, room string, _ events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
		return a.change(ctx, who, room, action, false, func(old waitroom.Settings) (waitroom.Settings, error) {
			old.Paused = paused
			return old, nil
		})
	}
}

// change stores a settings change, writes the audit line and answers the
// room's status after it.
func (a *Admin) change(ctx context.Context, who, room, action string, create bool, f func(waitroom.Settings) (waitroom.Settings, error)) events.APIGatewayV2HTTPResponse {
	ch, err := withTimeout(ctx, a.storeTimeout(), func(ctx context.Context) (waitroom.SettingsChange, error) {
		return a.Rooms.Update(ctx, room, create, f)
	})
	if err != nil {
		return ErrorResponse(err)
	}
	if a.Log != nil {
		a.Log.InfoContext(ctx, "admin change", "audit", true, "who", who, "room", room, "action", action,
			"created", ch.Created, "old", settingsJSON(ch.Old), "new", settingsJSON(ch.New))
	}
	return a.get(ctx, who, room, events.APIGatewayV2HTTPRequest{})
}

// settingsJSON spells settings in the audit line as the API does.
func settingsJSON(s waitroom.Settings) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (a *Admin) storeTimeout() time.Duration {
	if a.StoreTimeout > 0 {
		return a.StoreTimeout
	}
	return DefaultStoreTimeout
}
