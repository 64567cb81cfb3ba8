package waitroom

import (
	"encoding/base64"
	"regexp"
	"strings"
)

// DefaultRoom is the room of requests that name none.
const DefaultRoom = "default"

var roomPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// ValidRoom reports whether name may be used as a room.
func ValidRoom(name string) bool { return roomPattern.MatchString(name) }

// CheckUser validates a user id: 1 to 128 printable ASCII characters.
func CheckUser(id string) error {
	if !Printable(id, 128) {
		return Errorf(EInvalidUser, "a user id is 1 to 128 printable ASCII characters")
	}
	return nil
}

// CheckStoreUser validates a user as the store keeps it: a user id in its
// source's namespace (a prefix of at most 2 characters, awslambda's
// identity), so at most 130 printable ASCII characters.
func CheckStoreUser(user string) error {
	if !Printable(user, 130) {
		return Errorf(EInvalidUser, "a user is 1 to 130 printable ASCII characters")
	}
	return nil
}

// CheckIdempotencyKey validates an Idempotency-Key: 1 to 128 printable ASCII characters.
func CheckIdempotencyKey(key string) error {
	if !Printable(key, 128) {
		return Errorf(EInvalidIdemKey, "Idempotency-Key must be 1 to 128 printable ASCII characters")
	}
	return nil
}

// Printable reports whether s is 1 to max visible ASCII characters or
// spaces: what an identifier or a header value may hold.
func Printable(s string, max int) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// TokenRoom returns the room an entry token was issued for. Tokens are
// "<room>.<128 random bits as 22 URL-safe base64 characters>": the order gate
// learns the room from the token itself. ok is false for anything else.
func TokenRoom(token string) (room string, ok bool) {
	room, random, found := strings.Cut(token, ".")
	if !found || !ValidRoom(room) || len(random) != 22 {
		return "", false
	}
	if _, err := base64.RawURLEncoding.DecodeString(random); err != nil {
		return "", false
	}
	return room, true
}
