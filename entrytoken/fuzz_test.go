package entrytoken_test

import (
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/entrytoken"
)

// Parsing never panics, and whatever verifies is exactly a token the key
// signed: no re-spelling (strict base64), no other claims, no other key.
func FuzzParse(f *testing.F) {
	ks, err := entrytoken.ParseKeys("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", issuer)
	if err != nil {
		f.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	good, _ := ks.Sign(entrytoken.Claims{Subject: "u", Room: "tv", ID: "AAAAAAAAAAAAAAAAAAAAAA", IssuedAt: now.Unix(), ExpiresAt: now.Unix() + 300})
	parts := strings.Split(good, ".")
	f.Add(good)
	f.Add(parts[0] + "." + parts[1] + ".")
	f.Add("eyJhbGciOiJub25lIn0." + parts[1] + ".")
	f.Add("eyJhbGciOiJIUzI1NiJ9." + parts[1] + "." + parts[2][:43])
	f.Add("..")
	f.Fuzz(func(t *testing.T, token string) {
		// The key signed one token only: anything else that verifies is a forgery.
		if c, err := ks.Verify(token, now); err == nil && token != good {
			t.Fatalf("%q verifies (claims %+v) but the key never signed it", token, c)
		}
	})
}
