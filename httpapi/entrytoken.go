package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/entrytoken"
)

// JWKSPath publishes the entry tokens' public keys.
const JWKSPath = "/.well-known/jwks.json"

// jwksMaxAge is how long origins may cache the JWKS: a rotation keeps the
// previous key published at least this long past the last token it signed.
const jwksMaxAge = "public, max-age=300"

// signedToken is what a READY user is given: with ENTRY_TOKEN_KEYS, a JWT
// whose jti is the store's token (the part after "<room>."), so that any
// origin can check it offline and the gate can still consume it once;
// without, the store's opaque token. The claims are the store's record
// (iat is the admission), and Ed25519 signatures are deterministic, so
// every answer for one admission carries the very same token.
func (a *API) signedToken(st waitroom.Standing, who Identity) string {
	keys := a.Config.Trust.EntryTokens
	if !keys.Enabled() {
		return st.Token
	}
	room, id, _ := strings.Cut(st.Token, ".")
	signed, err := keys.Sign(entrytoken.Claims{Subject: who.ID, Source: who.tokenSource(), Room: room, ID: id, IssuedAt: st.IssuedAt.Unix(), ExpiresAt: st.ExpiresAt.Unix()})
	if err != nil { // only a JSON encoding failure of plain strings and numbers
		return ""
	}
	return signed
}

// tokenSource is the entry token's src claim: tickets name visitors.
func (i Identity) tokenSource() string {
	if i.Ticketed() {
		return string(NewVisitor)
	}
	return string(i.Source)
}

// JWKS handles GET /.well-known/jwks.json: the current and previous public
// keys. Without ENTRY_TOKEN_KEYS there is nothing to publish: 404.
func (a *API) JWKS(ctx context.Context, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	return a.serve(ctx, func() outcome {
		keys := a.Config.Trust.EntryTokens
		if !keys.Enabled() {
			return refused(waitroom.Errorf(waitroom.ENotFound, "entry tokens are not signed here (no ENTRY_TOKEN_KEYS)"))
		}
		resp := jsonResponse(http.StatusOK, keys.JWKS())
		resp.Headers["Cache-Control"] = jwksMaxAge
		return outcome{resp: resp}
	})
}

// WithJWKS serves the JWKS route besides h: the position function answers
// both (a GET that needs no store), so the stack needs no function for it.
func (a *API) WithJWKS(h Handler) Handler {
	return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
		if req.RawPath == JWKSPath || (req.RawPath == "" && req.RequestContext.HTTP.Path == JWKSPath) {
			return a.JWKS(ctx, req)
		}
		return h(ctx, req)
	}
}
