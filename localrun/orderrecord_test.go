package localrun_test

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/dynamotest"
	"github.com/waitroom/waitroom/internal/runnertest"
)

// With ORDER_RECORD_TABLE and ORDER_RECORD_ENDPOINT the local runner's
// gate keeps the order record there, the table created at start (issue
// 33): an order leaves its token's item, with the token's expiry.
func TestLocalRunnerUsesTheOrderRecordEmbedded(t *testing.T) {
	rec := dynamotest.Start(t).Config()
	r := runnertest.Start(t, runnertest.Config(t, map[string]string{"ORDER_RECORD_TABLE": rec.Table, "ORDER_RECORD_ENDPOINT": rec.Endpoint}))
	code, body := do(t, "POST", r.URL+"/queue/enter?room=tv", "rita", nil)
	var a struct{ Status, EntryToken string }
	if code != 200 || json.Unmarshal([]byte(body), &a) != nil || a.Status != "READY" {
		t.Fatalf("enter: %d %s", code, body)
	}
	if code, body := do(t, "POST", r.URL+"/orders", "rita", map[string]string{"X-Entry-Token": a.EntryToken}); code != 201 {
		t.Fatalf("order: %d %s", code, body)
	}
	parts := strings.Split(a.EntryToken, ".")
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	var claims struct {
		Room, Jti string
		Exp       int64
	}
	if err != nil || len(parts) != 3 || json.Unmarshal(raw, &claims) != nil {
		t.Fatalf("entry token %q: %v", a.EntryToken, err)
	}
	item := dynamotest.Item(t, rec, claims.Room, claims.Room+"."+claims.Jti)
	if item == nil || item["expiresAt"] != strconv.FormatInt(claims.Exp, 10) {
		t.Fatalf("the order's item in the record: %v, want expiresAt the token's exp %d", item, claims.Exp)
	}
}
