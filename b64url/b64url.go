// Package b64url spells bytes one way only, in unpadded base64url: the
// encoding of every signed format (tickets, receipts and challenges in the
// root package, entry tokens in entrytoken), where a second spelling of one
// signed value would verify too.
package b64url

import "encoding/base64"

// strict refuses padding bits that are not zero (a re-spelling that
// decodes to the same bytes).
var strict = base64.RawURLEncoding.Strict()

// Encode spells b.
func Encode(b []byte) string { return strict.EncodeToString(b) }

// Decode decodes unpadded base64url and refuses anything else: Go's
// decoders skip '\r' and '\n' even in strict mode, which would let one
// signed value be spelled many ways.
func Decode(s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return nil, base64.CorruptInputError(i)
		}
	}
	return strict.DecodeString(s)
}
