package httpapi

import (
	"crypto/sha256"
	"encoding/base64"
)

// requestHash identifies an order's body for its Idempotency-Key: the
// same key with another body is refused instead of answered with the
// first order's answer (as Stripe and the IETF Idempotency-Key draft do).
func requestHash(body []byte) string {
	sum := sha256.Sum256(body)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
