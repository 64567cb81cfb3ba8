// Package sqstest runs a real SQS-compatible server for tests: goaws
// (github.com/Admiral-Piett/goaws v0.4.5, pinned in go.mod), in this
// process, on 127.0.0.1 only, behind a translation of the SDK's AWS JSON
// protocol to goaws's query protocol (json.go).
//
// What goaws does and does not emulate, and what the tests do about it:
//   - FIFO: it keeps messages in arrival order and locks a message group while
//     one of its messages is in flight, so entries of one room are delivered
//     in order. But a receive that meets a second message of a locked group
//     marks it in flight without returning it; FIFO tests therefore receive
//     one message at a time (sqs.Queue.Batch = 1), and the consumer's batch
//     behaviour (stop at the first failure, redeliver the rest in order) is
//     tested on batches of several rooms, which goaws delivers together.
//   - Deduplication: on (EnableDuplicates), but a deleted message's id is
//     forgotten at once, where SQS keeps it for five minutes. Its periodic
//     task walks every id for every message (quadratic in a long queue), so
//     the measurements turn it off.
//   - Visibility timeouts: whole seconds, checked once per tick of its
//     periodic task (100 ms here), so a redelivery comes 1 to 1.1 s late.
//   - Dead-letter queues: only through a RedrivePolicy; not used here (the
//     CDK tests check the DLQ and its alarm are synthesized).
package sqstest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Admiral-Piett/goaws/app"
	"github.com/Admiral-Piett/goaws/app/gosqs"
	"github.com/Admiral-Piett/goaws/app/router"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/sirupsen/logrus"
)

const account = "100010001000"

var (
	createMu sync.Mutex
	once     sync.Once
	baseURL  string
	startErr error
)

// start runs the one server of this test process: goaws keeps its queues
// in package globals, so tests share it and each uses queues of its own.
func start() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		startErr = err
		return
	}
	logrus.SetLevel(logrus.WarnLevel)
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	app.CurrentEnvironment = app.Environment{Host: host, Port: port, AccountID: account, EnableDuplicates: true,
		QueueAttributeDefaults: app.EnvQueueAttributes{VisibilityTimeout: 30, MaximumMessageSize: 262144}}
	go gosqs.PeriodicTasks(100*time.Millisecond, make(chan struct{}))
	go func() { _ = http.Serve(ln, jsonToQuery(router.New())) }()
	baseURL = "http://" + ln.Addr().String()
}

// Queue creates a FIFO queue named after the test whose messages come back
// visibility seconds after a receive that did not delete them, and returns its URL.
func Queue(tb testing.TB, name string, visibility int) string {
	tb.Helper()
	url, err := NewQueue(name, visibility, true)
	if err != nil {
		tb.Fatal(err)
	}
	return url
}

// NewQueue is Queue for measurements outside tests (bench/intake). Without
// dedup the queue keeps no deduplication ids: goaws's periodic task walks
// every id once per message, a cost that grows as the square of a long queue.
func NewQueue(name string, visibility int, dedup bool) (string, error) {
	once.Do(start)
	if startErr != nil {
		return "", fmt.Errorf("goaws: %w", startErr)
	}
	createMu.Lock()
	defer createMu.Unlock()
	app.CurrentEnvironment.EnableDuplicates = dedup // read by CreateQueue
	name = strings.NewReplacer("/", "-", " ", "-").Replace(name) + ".fifo"
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion("us-east-1"), config.WithCredentialsProvider(aws.AnonymousCredentials{}))
	if err != nil {
		return "", err
	}
	api := awssqs.NewFromConfig(cfg, func(o *awssqs.Options) { o.BaseEndpoint = &baseURL })
	_, err = api.CreateQueue(context.Background(), &awssqs.CreateQueueInput{QueueName: &name,
		Attributes: map[string]string{"VisibilityTimeout": strconv.Itoa(visibility)}})
	if err != nil {
		return "", fmt.Errorf("goaws create queue: %w", err)
	}
	return baseURL + "/" + account + "/" + name, nil
}
