// Package checkout is the local runner's demo shop page: where the waiting
// page's Continue button leads when CONTINUE_URL is unset, so that `make run`
// walks a visitor from the line to a placed order in a browser.
package checkout

import (
	"embed"
	"io/fs"
	"net/http"

	"github.com/waitroom/waitroom/web"
)

//go:embed static
var static embed.FS

// ContinueURL is the waiting page's continue URL for this page. The entry
// token travels in the fragment, which browsers never send to a server.
const ContinueURL = "/checkout?room={room}#entryToken={entryToken}"

// Handler serves GET /checkout and GET /checkout/checkout.js.
func Handler() http.Handler {
	page, err := fs.ReadFile(static, "static/checkout.html")
	if err != nil {
		panic(err)
	}
	script, err := fs.ReadFile(static, "static/checkout.js")
	if err != nil {
		panic(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		web.SecurityHeaders(w.Header())
		w.Header().Set("Cache-Control", "no-cache")
		switch r.URL.Path {
		case "/checkout":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write(page)
		case "/checkout/checkout.js":
			w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
			_, _ = w.Write(script)
		default:
			http.NotFound(w, r)
		}
	})
}
