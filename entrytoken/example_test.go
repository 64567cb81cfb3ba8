package entrytoken_test

import (
	"fmt"
	"net/http"

	"github.com/waitroom/waitroom/entrytoken"
)

// A shop checks the entry token on its own checkout page: no call to the
// waiting room per request, only a JWKS fetch every few minutes.
func Example() {
	checkout := &entrytoken.Verifier{
		JWKSURL: "https://queue.shop.example/.well-known/jwks.json",
		Issuer:  "https://queue.shop.example",
		Room:    "tv-launch",
	}
	http.HandleFunc("POST /checkout", func(w http.ResponseWriter, r *http.Request) {
		claims, err := checkout.Verify(r.Context(), r.Header.Get("X-Entry-Token"))
		if err != nil {
			http.Error(w, "join the queue first", http.StatusForbidden)
			return
		}
		// claims.Subject is the shopper the waiting room admitted; record
		// claims.ID to take each token once.
		fmt.Fprintf(w, "welcome %s", claims.Subject)
	})
}
