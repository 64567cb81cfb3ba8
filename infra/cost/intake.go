package cost

import (
	"fmt"
	"strings"
)

// Queue is an SQS queue of the template.
type Queue struct {
	ID   string
	Fifo bool
}

// QueueConsumer is a Lambda event source mapping reading a queue.
type QueueConsumer struct {
	Function, Queue string // logical ids
	BatchSize       int
}

// The intake consumer's side of the model (INTAKE broker or fallback).
const (
	// MeasuredConsumerBatchMs is one batch of 10 entries applied to the
	// store: `make bench-intake` applied 10,000 entries in batches of 10 in
	// 1.116 s against a local redis-server (docs/bench/intake-results.json).
	MeasuredConsumerBatchMs = 1.12
	// ESMPollers long-poll an idle queue, each ReceiveMessage waiting
	// ESMLongPollSeconds: AWS documents about five pollers for an SQS event
	// source mapping at rest; each empty receive is a billed request.
	ESMPollers         = 5
	ESMLongPollSeconds = 20
	// ECPUApplyRecord is what applying costs beyond enter's commands: the
	// GET and SET of the user's applied record (redisstore/apply_*.lua).
	ECPUApplyRecord = 2
	// SendExchangeBytes is one SendMessage and its answer through the SQS
	// interface endpoint (SigV4 headers, the entry's JSON each way, TLS):
	// an allowance like OrderExchangeBytes, not a measurement.
	SendExchangeBytes = 4096
)

// intakeMode is the enter function's INTAKE ("" when direct by default).
func intakeMode(fns roles) string { return fns.enter.Env["INTAKE"] }

// queueReader is a function an event source mapping feeds from a queue.
type queueReader struct {
	fn    Function
	queue Queue
	batch int
}

// queueReaders are the event source mappings that read an SQS queue.
func (inv Inventory) queueReaders() []queueReader {
	var out []queueReader
	for _, c := range inv.QueueConsumers {
		for _, q := range inv.Queues {
			if f, ok := inv.Functions[c.Function]; ok && q.ID == c.Queue {
				out = append(out, queueReader{fn: f, queue: q, batch: max(1, c.BatchSize)})
			}
		}
	}
	return out
}

// sqsRequest is the request price of a queue (FIFO or standard).
func (p Prices) sqsRequest(q Queue) Price {
	if q.Fifo {
		return p.SQSFifoRequest
	}
	return p.SQSStandardRequest
}

// intakeIdleItems: an event source mapping polls its queue while nobody
// sends, and every empty receive is billed. Queues themselves cost nothing.
func intakeIdleItems(inv Inventory, p Prices) []Item {
	var items []Item
	for _, c := range inv.queueReaders() {
		receives := float64(ESMPollers) * 3600 / ESMLongPollSeconds * HoursPerMonth
		pr := p.sqsRequest(c.queue)
		items = append(items, Item{"SQS polling (event source mapping)",
			fmt.Sprintf("%s: %d pollers × %d-s long polls × %d h = %.0f receives × $%.2f per million", c.fn.ID, ESMPollers, ESMLongPollSeconds, HoursPerMonth, receives, pr.USD*1e6),
			receives * pr.USD})
	}
	return items
}

// intakePerMillionItems is what INTAKE=broker adds per million visitors:
// each enter is a SendMessage, each batch a receive, a delete and a
// consumer invocation, each visitor one PROCESSING poll more (position asks
// again after a second, and the consumer applies in about that); enter
// sends from the VPC, so each SendMessage is data through the SQS interface
// endpoint when the template has one. In fallback the broker carries only
// an outage's enters: a note, no item.
func intakePerMillionItems(inv Inventory, fns roles, m Measured, p Prices) ([]Item, []string) {
	cs := inv.queueReaders()
	switch {
	case len(cs) == 0:
		return nil, nil
	case intakeMode(fns) != "broker":
		return nil, []string{fmt.Sprintf("INTAKE=%s: the intake queue carries only the enters made while the store is down; per million priced as direct", intakeMode(fns))}
	}
	c := cs[0]
	batches := Visitors / float64(c.batch)
	sqs := Visitors + 2*batches
	gbs := batches * billedMs(MeasuredConsumerBatchMs) / 1000 * c.fn.MemoryGB()
	pollGBs := Visitors * billedMs(MeasuredPositionMs) / 1000 * fns.position.MemoryGB()
	items := []Item{
		{"SQS requests (intake)", fmt.Sprintf("%.1f a visitor: SendMessage, and a receive and a delete per batch of %d", sqs/Visitors, c.batch),
			sqs * p.sqsRequest(c.queue).USD},
		{"Lambda requests intake consumer", fmt.Sprintf("%.0f batches", batches), batches * p.LambdaRequest.USD},
		{"Lambda duration intake consumer", fmt.Sprintf("%.0f × %.0f ms × %d MB %s = %.0f GB-s", batches, billedMs(MeasuredConsumerBatchMs), c.fn.MemoryMB, c.fn.Arch, gbs),
			gbs * p.lambdaGBSecond(c.fn.Arch).USD},
		{"CloudWatch Logs intake consumer", fmt.Sprintf("platform lines: %v", c.fn.PlatformLines()),
			logCost(p, batches*platformBytes(c.fn), inv.retentionDays(c.fn.LogGroup))},
		{"PROCESSING poll (one a visitor)", "API Gateway, Lambda request and duration of one position call",
			Visitors*(p.HTTPAPIRequest.USD+p.LambdaRequest.USD) + pollGBs*p.lambdaGBSecond(fns.position.Arch).USD},
	}
	for _, e := range inv.InterfaceEndpoints {
		if e.Service == "sqs" {
			items = append(items, Item{"VPC interface endpoint data (intake)", fmt.Sprintf("%d B a SendMessage", SendExchangeBytes),
				Visitors * SendExchangeBytes / gb * p.InterfaceEndpointGB.USD})
		}
	}
	items = append(items, intakeDecrypts(fns.position, c.fn, batches, p)...)
	if m.AccessLog > 0 {
		items = append(items, Item{"CloudWatch Logs access log (PROCESSING polls)", fmt.Sprintf("%.0f lines of %.0f B", Visitors, m.AccessLog),
			logCost(p, Visitors*m.AccessLog, inv.retentionDays(inv.API.AccessLogGroup))})
	}
	if len(inv.ServerlessCaches) > 0 {
		_, ecpu, _ := p.cache(inv.ServerlessCaches[0].Engine)
		items = append(items, Item{"ElastiCache ECPU (applied records)", fmt.Sprintf("%d a visitor", ECPUApplyRecord), Visitors * ECPUApplyRecord * ecpu.USD})
	}
	return items, nil
}

// intakeDecrypts: the PROCESSING poll (a position call a visitor) and the
// consumer's batches start environments too; under the environment key each
// cold start is a Decrypt (environmentDecrypts), at most ColdStartShare of
// those invocations.
func intakeDecrypts(position, consumer Function, batches float64, p Prices) []Item {
	var invocations float64
	var what []string
	if position.EnvironmentKey {
		invocations += Visitors
		what = append(what, "the PROCESSING polls")
	}
	if consumer.EnvironmentKey {
		invocations += batches
		what = append(what, "the consumer's batches")
	}
	if invocations == 0 {
		return nil
	}
	decrypts := invocations * ColdStartShare
	return []Item{{"KMS requests (environment key, intake)", fmt.Sprintf("%s: %.0f invocations × at most %.0f%% cold starts, one Decrypt each = %.0f",
		strings.Join(what, " and "), invocations, ColdStartShare*100, decrypts), decrypts * p.KMSRequest.USD}}
}
