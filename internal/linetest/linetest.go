// Package linetest reads a room's line for the tests of the packages
// above the store (redisstore.LineLength, failing the test on an error).
package linetest

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/redisstore"
)

// Length is how many users wait in room's line.
func Length(t testing.TB, rdb redis.Cmdable, room string) int64 {
	t.Helper()
	n, err := redisstore.LineLength(context.Background(), rdb, room)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
