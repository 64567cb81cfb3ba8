// Package sqs is the intake broker on Amazon SQS (or an SQS-compatible
// server): enter sends accepted entries to a FIFO queue, one message group
// per room and one deduplication id per room and identity; the local runner
// receives and deletes them. In AWS the consumer function gets its batches
// from Lambda's event source mapping instead.
package sqs

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/intake"
)

// Queue is one queue of entries.
type Queue struct {
	api *awssqs.Client
	url string
	// Batch is how many messages one receive asks for (1 to 10).
	Batch int32
	// WaitSeconds is the long poll of one receive.
	WaitSeconds int32
}

var (
	_ waitroom.Broker = (*Queue)(nil)
	_ intake.Source   = (*Queue)(nil)
)

// New returns the queue at queueURL with the default AWS configuration. A
// queue URL outside amazonaws.com names its own endpoint (an SQS-compatible
// server on this machine), which needs no credentials.
func New(ctx context.Context, queueURL string) (*Queue, error) {
	u, err := url.Parse(queueURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("sqs: %q is not a queue URL", queueURL)
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqs: AWS configuration: %w", err)
	}
	var opts []func(*awssqs.Options)
	if !strings.HasSuffix(u.Hostname(), ".amazonaws.com") {
		endpoint := u.Scheme + "://" + u.Host
		opts = append(opts, func(o *awssqs.Options) {
			o.BaseEndpoint = &endpoint
			o.Credentials = aws.AnonymousCredentials{}
			if o.Region == "" {
				o.Region = "us-east-1"
			}
		})
	}
	return &Queue{api: awssqs.NewFromConfig(cfg, opts...), url: queueURL, Batch: 10, WaitSeconds: 1}, nil
}

// Send accepts e: it is in the queue once SQS has answered.
func (q *Queue) Send(ctx context.Context, e waitroom.Entry) error {
	body, err := intake.Encode(e)
	if err != nil {
		return err
	}
	_, err = q.api.SendMessage(ctx, &awssqs.SendMessageInput{
		QueueUrl:               &q.url,
		MessageBody:            &body,
		MessageGroupId:         aws.String(e.Room),
		MessageDeduplicationId: aws.String(e.DedupID()),
	})
	if err != nil {
		return waitroom.Unavailable(fmt.Errorf("sqs send: %w", err))
	}
	return nil
}

// Receive long-polls for up to Batch messages.
func (q *Queue) Receive(ctx context.Context) ([]intake.Message, error) {
	out, err := q.api.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{
		QueueUrl: &q.url, MaxNumberOfMessages: q.Batch, WaitTimeSeconds: q.WaitSeconds,
	})
	if err != nil {
		return nil, fmt.Errorf("sqs receive: %w", err)
	}
	msgs := make([]intake.Message, len(out.Messages))
	for i, m := range out.Messages {
		msgs[i] = intake.Message{ID: aws.ToString(m.MessageId), Handle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body)}
	}
	return msgs, nil
}

// Delete deletes applied messages, in batches of ten (SQS's limit).
func (q *Queue) Delete(ctx context.Context, msgs []intake.Message) error {
	for len(msgs) > 0 {
		n := min(len(msgs), 10)
		entries := make([]types.DeleteMessageBatchRequestEntry, n)
		for i, m := range msgs[:n] {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: aws.String(m.Handle)}
		}
		out, err := q.api.DeleteMessageBatch(ctx, &awssqs.DeleteMessageBatchInput{QueueUrl: &q.url, Entries: entries})
		if err != nil {
			return fmt.Errorf("sqs delete: %w", err)
		}
		if len(out.Failed) > 0 {
			return fmt.Errorf("sqs delete: %d of %d failed: %s", len(out.Failed), n, aws.ToString(out.Failed[0].Message))
		}
		msgs = msgs[n:]
	}
	return nil
}
