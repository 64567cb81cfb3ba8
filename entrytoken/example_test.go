package entrytoken_test

import (
	"errors"
	"fmt"
	"log"
	"net/http"

	"github.com/waitroom/waitroom/entrytoken"
)

// A shop checks the entry token on its own checkout page: no call to the
// waiting room per request, only a JWKS fetch every few minutes.
func Example() {
	checkout := &entrytoken.Verifier{
		JWKSURL: "https://queue.shop.example/.well-known/jwks.json",
		Issuer:  "https://queue.shop.example",
		Room:    "tv-launch", // required; AnyRoom: true takes every room's tokens
	}
	// The JWKS saved when the shop was deployed (curl it into a file the
	// build embeds), so that an instance that starts while the waiting
	// room is unreachable or throttled still verifies.
	if err := checkout.Seed(deployedJWKS); err != nil {
		log.Fatal(err)
	}
	http.HandleFunc("POST /checkout", func(w http.ResponseWriter, r *http.Request) {
		claims, err := checkout.Verify(r.Context(), r.Header.Get("X-Entry-Token"))
		if errors.Is(err, entrytoken.ErrUnavailable) { // no key yet: the token was not judged
			http.Error(w, "try again in a moment", http.StatusServiceUnavailable)
			return
		}
		if err != nil {
			http.Error(w, "join the queue first", http.StatusForbidden)
			return
		}
		// claims.Subject is the shopper the waiting room admitted; record
		// claims.ID to take each token once.
		fmt.Fprintf(w, "welcome %s", claims.Subject)
	})
}

// deployedJWKS stands for the file a shop embeds (//go:embed jwks.json).
var deployedJWKS = []byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik","kid":"Vtq8dHlQ","alg":"EdDSA","use":"sig"}]}`)
