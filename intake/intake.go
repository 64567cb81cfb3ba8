// Package intake is the consumer of the broker: it applies the entries enter
// accepted to the line, in the order the broker delivers them (acceptance
// order per room with an SQS FIFO queue grouped by room), exactly once in
// effect. The Lambda consumer function and the local runner both run it.
package intake

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/metrics"
)

// Message is one delivery from the broker: its body, and what the broker
// needs to delete it or to name it in a batch failure.
type Message struct {
	ID     string // message id (the Lambda batch item identifier)
	Handle string // receipt handle (deletes it)
	Body   string
}

// Encode is the body of an entry's message.
func Encode(e waitroom.Entry) (string, error) {
	b, err := json.Marshal(e)
	return string(b), err
}

// Consumer applies accepted entries to the store.
type Consumer struct {
	Store waitroom.Applier
	// Keep is how long an entry stays worth applying, and how long the
	// store keeps its applied record: the receipt's lifetime. An older entry
	// is dropped, since its visitor has been told to enter again.
	Keep time.Duration
	Log  *slog.Logger     // nil logs nothing
	Now  func() time.Time // nil means time.Now
	// Metrics counts Entered and QueueFull as enter does in direct mode,
	// once per entry (a redelivery counts nothing); nil records nothing.
	Metrics *metrics.Recorder
}

// Apply applies msgs in order and returns how many from the front are done:
// applied, found applied before (a redelivery), met a full line, or too old.
// It stops at the first message it cannot apply (the store is down, or the
// body is not an entry); msgs[done:] must then be delivered again, never
// deleted, and in the same order, so that nobody behind moves ahead.
func (c *Consumer) Apply(ctx context.Context, msgs []Message) (done int, err error) {
	for i, m := range msgs {
		if err := c.apply(ctx, m); err != nil {
			c.warn(ctx, "entry not applied; it will be delivered again", m, err)
			return i, err
		}
	}
	return len(msgs), nil
}

func (c *Consumer) apply(ctx context.Context, m Message) error {
	var e waitroom.Entry
	if err := json.Unmarshal([]byte(m.Body), &e); err != nil || !waitroom.ValidRoom(e.Room) || waitroom.CheckUser(e.User) != nil {
		// Only enter writes to the queue: this is a bug, and the message
		// goes to the dead-letter queue after its retries, for a person to see.
		return errors.New("message is not an entry")
	}
	if c.now().Sub(e.AcceptedAt) >= c.keep() {
		c.warn(ctx, "entry older than its receipt dropped", m, nil)
		return nil
	}
	st, redelivered, err := c.Store.Apply(ctx, e, c.keep())
	switch {
	case waitroom.ErrorCode(err) == waitroom.EQueueFull: // a redelivery of it answers redelivered, no error
		c.Metrics.Record(e.Room, metrics.Of(metrics.QueueFull, metrics.Count, 1))
		return nil // recorded: position tells the receipt's holder
	case waitroom.ErrorCode(err) == waitroom.ERoomNotFound:
		return nil // recorded likewise
	case err == nil && st.AdmittedNow && !redelivered:
		c.Metrics.Record(e.Room, metrics.InstantAdmission()...)
	case err == nil && st.Joined && !redelivered:
		c.Metrics.Record(e.Room, metrics.Of(metrics.Entered, metrics.Count, 1))
	}
	return err
}

// keep is Keep, or the receipt's default lifetime for a hand-built Consumer.
func (c *Consumer) keep() time.Duration {
	if c.Keep > 0 {
		return c.Keep
	}
	return waitroom.DefaultTicketTTLSeconds * time.Second
}

func (c *Consumer) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Consumer) warn(ctx context.Context, msg string, m Message, err error) {
	if c.Log != nil {
		c.Log.WarnContext(ctx, msg, "messageId", m.ID, "err", err)
	}
}

// Source is a broker as a poller sees it (the local runner's SQS client).
type Source interface {
	Receive(ctx context.Context) ([]Message, error)
	Delete(ctx context.Context, msgs []Message) error
}

// retryPause is how long Run waits after a failed receive or apply before
// polling again; the undeleted messages come back after their visibility timeout.
const retryPause = time.Second

// Run polls src until ctx ends, as Lambda's event source mapping does in
// AWS: apply a batch in order, delete what was done, leave the rest to be
// delivered again.
func (c *Consumer) Run(ctx context.Context, src Source) {
	for ctx.Err() == nil {
		msgs, err := src.Receive(ctx)
		if err != nil {
			c.warn(ctx, "receive failed", Message{}, err)
			sleep(ctx, retryPause)
			continue
		}
		done, err := c.Apply(ctx, msgs)
		if done > 0 {
			if derr := src.Delete(ctx, msgs[:done]); derr != nil {
				c.warn(ctx, "delete failed; the applied entries come back and are found applied", Message{}, derr)
			}
		}
		if err != nil {
			sleep(ctx, retryPause)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
