package web_test

import (
	"bytes"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/web"
)

func get(t *testing.T, h http.Handler, path string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	b, _ := io.ReadAll(w.Result().Body)
	return w.Result(), string(b)
}

func TestPageLanguageAndHeaders(t *testing.T) {
	h := web.Handler(web.Settings{ContinueURL: "/checkout#entryToken={entryToken}", Stream: true})
	for _, c := range []struct {
		path, accept, want string
	}{
		{"/", "", ""},
		{"/", "fr-FR,fr", ""},
		{"/", "ko-KR,ko;q=0.9,en-US;q=0.8", "ko"},
		{"/?room=tv", "en-US,en;q=0.9,ko;q=0.8", "en"},
		{"/", "fr-FR, ko;q=0.5, en;q=0.4", "ko"},
		{"/?lang=ko", "en", "ko"},
		{"/?lang=xx", "ko", "ko"},
		{"/index.html?lang=en", "ko", "en"},
	} {
		resp, body := get(t, h, c.path, map[string]string{"Accept-Language": c.accept})
		want := `<html lang="` + c.want + `" data-lang="` + c.want + `">`
		if c.want == "" { // nobody asked: no data-lang, the room's language applies
			want = `<html lang="en">`
		}
		if resp.StatusCode != 200 || !strings.Contains(body, want) {
			t.Errorf("%s with %q: %d, want lang %s", c.path, c.accept, resp.StatusCode, c.want)
		}
		if resp.Header.Get("Content-Security-Policy") != web.CSP || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: security headers %v", c.path, resp.Header)
		}
	}
	resp, body := get(t, h, "/waitroom/config.json", nil)
	if resp.StatusCode != 200 || body != `{"continueUrl":"/checkout#entryToken={entryToken}","stream":true}` {
		t.Errorf("config.json: %d %s", resp.StatusCode, body)
	}
	for path, ct := range map[string]string{"/waitroom/app.js": "javascript", "/waitroom/app.css": "text/css"} {
		resp, _ := get(t, h, path, nil)
		if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), ct) || resp.Header.Get("Content-Security-Policy") == "" {
			t.Errorf("%s: %d %v", path, resp.StatusCode, resp.Header)
		}
	}
	for _, path := range []string{"/waitroom/../web.go", "/waitroom/", "/static/index.html", "/other"} {
		if resp, _ := get(t, h, path, nil); resp.StatusCode == 200 {
			t.Errorf("%s is served", path)
		}
	}
}

// The page stays small and self-contained: no other origin, no inline
// script or style (the CSP would block them), every text in both languages.
func TestPageIsSmallAndSelfContained(t *testing.T) {
	total := 0
	external := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//|url\(\s*["']?(https?:)?//|@import|https?://`)
	err := fs.WalkDir(web.Files(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(web.Files(), path)
		if err != nil {
			return err
		}
		total += len(b)
		// An SVG names its XML namespace with a URL; nothing is fetched from it.
		if m := external.Find(bytes.ReplaceAll(b, []byte(`xmlns="http://www.w3.org/2000/svg"`), nil)); m != nil {
			t.Errorf("%s refers outside the origin: %s", path, m)
		}
		if strings.HasSuffix(path, ".html") && (regexp.MustCompile(`<script>|<script [^>]*>[^<]|<style|style=|\son[a-z]+=`).Match(b)) {
			t.Errorf("%s has inline script or style", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// 24 KB since the proof of work (pow.js and the page's solving state,
	// about 3 KB: the worker is fetched only by a visitor asked to solve
	// one) and issue 22 (the room's branding, its message, the sold-out
	// state, in both languages: 23.1 KB together, 23,678 bytes); it was 20 KB.
	// 25 KB since issue 34 (the load held for the first state, headless
	// browsers polling, a failing logo hidden, the Korean fonts and line
	// breaking: 1.5 KB, 25,223 bytes). 27 KB since issue 36 (the page
	// follows the room's public line: 2.2 KB, 27,477 bytes).
	const budget = 27 << 10
	t.Logf("page: %d bytes uncompressed", total)
	if total > budget {
		t.Errorf("the page is %d bytes; budget %d", total, budget)
	}
	js, _ := fs.ReadFile(web.Files(), "waitroom/app.js")
	keys := func(lang string) []string {
		block := regexp.MustCompile(`(?s)\n    ` + lang + `: \{(.*?)\n    \}`).FindSubmatch(js)
		if block == nil {
			t.Fatalf("no %s block in app.js", lang)
		}
		var out []string
		for _, m := range regexp.MustCompile(`(?:,|\n)\s*"?([a-z][a-z0-9._]*)"?\s*:\s*"`).FindAllSubmatch(block[1], -1) {
			out = append(out, string(m[1]))
		}
		return out
	}
	en, ko := keys("en"), keys("ko")
	if strings.Join(en, ",") != strings.Join(ko, ",") || len(en) < 30 {
		t.Errorf("translations differ:\nen %v\nko %v", en, ko)
	}
}

func TestLanguage(t *testing.T) {
	for _, c := range [][3]string{
		{"", "", "en"}, {"", "ko", "ko"}, {"", "KO-kr", "ko"}, {"", "en;q=0.2, ko;q=0.8", "ko"},
		{"", "kok", "en"}, {"", "ko;q=abc", "en"}, {"ko", "", "ko"}, {"EN", "ko", "en"},
	} {
		if got := web.Language(c[0], c[1]); got != c[2] {
			t.Errorf("Language(%q, %q) = %s, want %s", c[0], c[1], got, c[2])
		}
	}
}

// PAGE_IMAGE_ORIGINS widen img-src, and nothing else.
func TestImageOriginsInCSP(t *testing.T) {
	h := web.Handler(web.Settings{ImageOrigins: []string{"https://img.example", "https://cdn.example:8443"}})
	resp, _ := get(t, h, "/", nil)
	want := strings.Replace(web.CSP, "img-src 'self'", "img-src 'self' https://img.example https://cdn.example:8443", 1)
	if got := resp.Header.Get("Content-Security-Policy"); got != want || web.CSPFor(nil) != web.CSP {
		t.Errorf("CSP %q, want %q", got, want)
	}
}

// Issue 37: the language asked for in the link is written into the page
// as one of the page's languages, never as asked: markup after a known
// prefix stays out of the HTML.
func TestAskedLanguageIsNeverWrittenAsAsked(t *testing.T) {
	h := web.Handler(web.Settings{})
	for _, path := range []string{`/?lang=ko-%22%3E%3Cb%20data-injected%3Ex%3C/b%3E`, `/?lang=KO-x%22%20onload%3D%22alert(1)`} {
		resp, body := get(t, h, path, nil)
		if resp.StatusCode != 200 || !strings.Contains(body, `<html lang="ko" data-lang="ko">`) || strings.Contains(body, "data-injected") || strings.Contains(body, "onload") {
			t.Errorf("%s: %d, page begins %.80q", path, resp.StatusCode, body)
		}
	}
}
