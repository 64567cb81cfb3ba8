package lambdaenv

import "github.com/waitroom/waitroom/httpapi"

// Admin returns the admin routes' handler. It trusts API Gateway's IAM
// authorization: the stack gives every admin route AWS_IAM, so an event
// reaching this function carries a principal whose SigV4 signature API
// Gateway has checked. ADMIN_TOKEN, when set, is accepted as well.
func (e Env) Admin() *httpapi.Admin {
	return &httpapi.Admin{Config: e.Config, Rooms: e.Store, Token: e.Config.AdminToken, TrustIAM: true, Log: e.Log}
}
