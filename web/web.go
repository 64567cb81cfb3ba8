// Package web serves the waiting page visitors see: one HTML page, a script
// and a style sheet, embedded in the binary, from the same origin as the API
// (no CORS), under a Content-Security-Policy that allows nothing but them.
// The same files are what the AWS deployment puts in S3 (infra/page.go).
package web

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
)

// Static holds the page: index.html at the root, the rest under waitroom/.
//
//go:embed static
var static embed.FS

// Files are the page's files, rooted like the site.
func Files() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embed directive guarantees the directory
	}
	return sub
}

// CSP allows the page's own script, style and API calls, and nothing else:
// no inline script, no other origin, no framing. worker-src names the proof
// of work's worker (pow.js) outright: browsers without worker-src fall back
// to child-src and then default-src 'none', not to script-src.
const CSP = "default-src 'none'; script-src 'self'; worker-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// CSPFor is CSP with images also allowed from imageOrigins: the origins a
// room's logoUrl may name (PAGE_IMAGE_ORIGINS; the stack's context
// pageImageOrigins). No origins: CSP itself.
func CSPFor(imageOrigins []string) string {
	if len(imageOrigins) == 0 {
		return CSP
	}
	return strings.Replace(CSP, "img-src 'self'", "img-src 'self' "+strings.Join(imageOrigins, " "), 1)
}

// Settings is what the page learns from /waitroom/config.json.
type Settings struct {
	// ContinueURL is where an admitted visitor goes; "{entryToken}" and
	// "{room}" are replaced. Empty: the page shows the entry token.
	ContinueURL string `json:"continueUrl"`
	// Stream: the host serves GET /queue/events; otherwise the page polls.
	Stream bool `json:"stream"`
	// ImageOrigins are the origins rooms' logos may come from, added to
	// the Content-Security-Policy's img-src (PAGE_IMAGE_ORIGINS).
	ImageOrigins []string `json:"-"`
}

// Languages are the page's translations, first the default.
var Languages = []string{"en", "ko"}

// Handler serves GET / (the page, its language from ?lang= or
// Accept-Language), GET /waitroom/* and GET /waitroom/config.json.
func Handler(s Settings) http.Handler {
	files := Files()
	index, err := fs.ReadFile(files, "index.html")
	if err != nil {
		panic(err)
	}
	config, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	assets := http.FileServerFS(files)
	csp := CSPFor(s.ImageOrigins)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w.Header(), csp)
		switch {
		case r.URL.Path == "/" || r.URL.Path == "/index.html":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Cache-Control", "no-cache")
			w.Header().Set("Vary", "Accept-Language")
			page := string(index)
			// data-lang only when the visitor asked for a language: otherwise
			// the room's language setting decides (app.js).
			if lang, ok := Asked(r.URL.Query().Get("lang"), r.Header.Get("Accept-Language")); ok {
				page = strings.Replace(page, `<html lang="en">`, `<html lang="`+lang+`" data-lang="`+lang+`">`, 1)
			}
			_, _ = w.Write([]byte(page))
		case r.URL.Path == "/waitroom/config.json":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-cache")
			_, _ = w.Write(config)
		case strings.HasPrefix(r.URL.Path, "/waitroom/") && !strings.HasSuffix(r.URL.Path, "/"): // files, never a listing
			w.Header().Set("Cache-Control", "public, max-age=300")
			assets.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}

// SecurityHeaders are set on every page response (and by CloudFront in AWS).
func SecurityHeaders(h http.Header) {
	securityHeaders(h, CSP)
}

func securityHeaders(h http.Header, csp string) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}

// Asked is the language the visitor asks for: ?lang= when it names one of
// Languages, else the first of Accept-Language that does (quality values
// are respected), else English; and false when it asks for none of
// Languages: then the room's language applies.
func Asked(query, acceptLanguage string) (string, bool) {
	if l := known(query); l != "" {
		return l, true
	}
	best, bestQ := Languages[0], 0.0
	for _, part := range strings.Split(acceptLanguage, ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				continue
			}
			q = f
		}
		if l := known(tag); l != "" && q > bestQ {
			best, bestQ = l, q
		}
	}
	return best, bestQ > 0
}

func known(tag string) string {
	tag = strings.ToLower(strings.TrimSpace(tag))
	for _, l := range Languages {
		if tag == l || strings.HasPrefix(tag, l+"-") {
			return l
		}
	}
	return ""
}
