package redisstore

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Issue 12, defect 5: a malformed reply is reported without the entry
// tokens in it (the error ends up in the logs).
func TestMalformedRepliesHideTokens(t *testing.T) {
	const secret = "room.SECRETSECRETSECRET12"
	admit := redis.NewCmd(context.Background())
	admit.SetVal([]any{int64(0), int64(1), int64(0), int64(0), int64(0), int64(0), "u", secret})
	s := &Store{}
	if _, _, err := s.decodeAdmit(&admitCall{room: "room", cmd: admit}); err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("admit reply error: %v", err)
	}
	if _, err := standing("room", []any{"READY", "123:" + secret}); err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("standing reply error: %v", err)
	}
}
