package awslambda

import (
	"crypto/sha256"
	"crypto/subtle"

	"github.com/aws/aws-lambda-go/events"
)

// proxySecretHeader carries PROXY_SECRET from the trusted proxy.
const proxySecretHeader = "X-Proxy-Secret"

// fromTrustedProxy reports whether X-User-Id may be believed: always
// without PROXY_SECRET (the operator trusts every caller of the API), and
// otherwise only when the request carries the secret. Both sides are
// hashed first so that the comparison takes the same time whatever the
// length or the content of what was sent.
func (a *API) fromTrustedProxy(req events.APIGatewayV2HTTPRequest) bool {
	if a.Config.ProxySecret == "" {
		return true
	}
	sent, ok := lookupHeader(req, proxySecretHeader)
	want := sha256.Sum256([]byte(a.Config.ProxySecret))
	got := sha256.Sum256([]byte(sent))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1 && ok
}
