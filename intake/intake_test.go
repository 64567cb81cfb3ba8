package intake_test

import (
	"context"
	"testing"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/intake"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/redisstore"
)

// An entry older than its receipt is dropped, not applied: its visitor has
// been told to enter again, and the applied record that would catch its
// redelivery has expired with the receipt.
func TestConsumerDropsEntriesOlderThanTheirReceipt(t *testing.T) {
	rdb := redistest.Start(t).Client()
	store := redisstore.New(rdb, waitroom.Config{QueueCapacity: 10, AdmitRatePerSec: 1, AdmitInterval: time.Second, OpenRooms: true})
	now := time.Now()
	c := &intake.Consumer{Store: store, Keep: time.Hour, Now: func() time.Time { return now }}
	var msgs []intake.Message
	for _, e := range []waitroom.Entry{
		{Room: "r", User: "stale", AcceptedAt: now.Add(-time.Hour)},
		{Room: "r", User: "fresh", AcceptedAt: now.Add(-59 * time.Minute)},
	} {
		body, err := intake.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, intake.Message{ID: e.User, Body: body})
	}
	done, err := c.Apply(context.Background(), msgs)
	if err != nil || done != 2 {
		t.Fatalf("apply: %d %v", done, err)
	}
	line, err := redisstore.Waiting(context.Background(), rdb, "r", []string{"stale", "fresh"})
	if n, _ := redisstore.LineLength(context.Background(), rdb, "r"); err != nil || n != 1 || len(line) != 1 || line[0] != "fresh" {
		t.Fatalf("line %v %v, want only the fresh entry", line, err)
	}
}
