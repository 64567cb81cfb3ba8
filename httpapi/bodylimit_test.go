package httpapi_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/waitroom/waitroom/httpapi"
)

// Issue 37: the body limit to the byte: a body of exactly MaxRequestBody
// reaches the handler whole, with a Content-Length or chunked; one byte
// more is refused 413 payload_too_large, either way, before the handler.
func TestBodyLimitToTheByte(t *testing.T) {
	srv := httptest.NewServer(httpapi.LimitBodies(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, strconv.Itoa(len(b)))
	})))
	t.Cleanup(srv.Close)
	for _, chunked := range []bool{false, true} {
		for size, want := range map[int]int{httpapi.MaxRequestBody: 200, httpapi.MaxRequestBody + 1: http.StatusRequestEntityTooLarge} {
			var body io.Reader = bytes.NewReader(make([]byte, size))
			if chunked {
				body = io.MultiReader(body) // no length: sent chunked
			}
			resp, err := http.Post(srv.URL, "application/octet-stream", body)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != want || (want == 200 && string(got) != strconv.Itoa(size)) {
				t.Errorf("%d bytes (chunked %v): %d %s; want %d", size, chunked, resp.StatusCode, got, want)
			}
		}
	}
}
