package cost

import "fmt"

// Table is a DynamoDB table of the template (the order record, issue 33).
type Table struct {
	ID                  string
	OnDemand            bool
	PointInTimeRecovery bool
}

// The order record's side of the model: DynamoDB on demand, per order.
const (
	// OrderRecordWrites are the write request units of one order: the
	// claim (PutItem, an item under 1 KB), and with an Idempotency-Key the
	// answer kept for replays (UpdateItem, 1 unit per KB of the item; an
	// answer under 1 KB counted). Every order is taken to carry a key.
	OrderRecordWrites = 2
	// OrderRecordItemBytes is an item with its answer: the key (room and a
	// SHA-256), the attempt, the expiry, two hashes, a small JSON answer.
	OrderRecordItemBytes = 600
	// TTLDeletionDays is how long an expired item may stay before
	// DynamoDB's TTL deletes it (AWS documents "within a few days"; the
	// deletes themselves are free): the storage a million orders hold.
	TTLDeletionDays = 2.0
)

// orderRecordIdleItems: an idle on-demand table bills nothing but its
// storage (and its point-in-time backups), and an idle record holds none.
func orderRecordIdleItems(inv Inventory, p Prices) []Item {
	var items []Item
	for _, t := range inv.Tables {
		detail := "on demand: no request, no item (expired tokens' items are deleted by TTL)"
		if t.PointInTimeRecovery {
			detail += "; point-in-time recovery of 0 GB"
		}
		items = append(items, Item{"DynamoDB " + t.ID, detail, 0})
	}
	return items
}

// orderRecordPerMillionItems: a million visitors' orders, one each, write
// OrderRecordWrites units each, and their items are stored until TTL
// deletes them.
func orderRecordPerMillionItems(inv Inventory, p Prices) []Item {
	var items []Item
	for _, t := range inv.Tables {
		writes := Visitors * OrderRecordWrites
		items = append(items, Item{"DynamoDB writes (" + t.ID + ")", fmt.Sprintf("%d write units an order (claim, answer) × %.0f orders", OrderRecordWrites, float64(Visitors)),
			writes * p.DynamoDBWriteUnit.USD})
		gbMonths := Visitors * OrderRecordItemBytes / gb * TTLDeletionDays / 30
		perGB := p.DynamoDBStorageGBMonth.USD
		detail := fmt.Sprintf("%d B an order, kept up to %g days after the token (TTL)", OrderRecordItemBytes, TTLDeletionDays)
		if t.PointInTimeRecovery {
			perGB += p.DynamoDBPITRGBMonth.USD
			detail += ", with point-in-time recovery"
		}
		items = append(items, Item{"DynamoDB storage (" + t.ID + ")", detail, gbMonths * perGB})
	}
	return items
}
