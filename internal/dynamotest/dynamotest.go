// Package dynamotest starts a real DynamoDB-compatible server for tests:
// dynalite (npm, in memory) on a free loopback port, one per test. `make
// test` installs it (mk/dynalite.mk) into DYNALITE_DIR; without node or
// dynalite a test skips locally and fails under CI=true.
package dynamotest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/orderrecord"
)

// DirEnv names the directory dynalite is installed in (node_modules/dynalite
// below it); mk/dynalite.mk's default is DefaultDir.
const DirEnv = "DYNALITE_DIR"

// DefaultDir is where mk/dynalite.mk installs dynalite.
func DefaultDir() string {
	if d := os.Getenv(DirEnv); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "waitroom-dynalite")
}

// Server is one dynalite process.
type Server struct {
	URL string // http://127.0.0.1:port
	cmd *exec.Cmd
}

var tables atomic.Int64

// Start starts dynalite, stopped when the test ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	cli := filepath.Join(DefaultDir(), "node_modules", "dynalite", "cli.js")
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(cli)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("dynalite not found (%v): `make test` installs it (mk/dynalite.mk)", err)
		}
		tb.Skipf("dynalite not found (%v): skipping (`make dynalite` installs it; under CI=true this fails)", err)
	}
	addr := freeAddr(tb)
	_, port, _ := net.SplitHostPort(addr)
	s := &Server{URL: "http://" + addr, cmd: exec.Command(node, cli, "--port", port, "--host", "127.0.0.1")}
	if err := s.cmd.Start(); err != nil {
		tb.Fatalf("start dynalite: %v", err)
	}
	tb.Cleanup(s.Stop)
	waitReady(tb, s.URL)
	return s
}

// Stop ends the process: the record is then unreachable.
func (s *Server) Stop() {
	if s.cmd.Process != nil && s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

// Config is the configuration of a record on s in a new table.
func (s *Server) Config() waitroom.OrderRecord {
	return waitroom.OrderRecord{Table: fmt.Sprintf("orders-%d", tables.Add(1)), Endpoint: s.URL, AnyCredentials: true}
}

// Record opens a record on s in a new table, created.
func (s *Server) Record(tb testing.TB) (*orderrecord.Record, waitroom.OrderRecord) {
	tb.Helper()
	cfg := s.Config()
	r, err := orderrecord.Open(context.Background(), waitroom.Config{OrderRecord: cfg})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.CreateTable(ctx); err != nil {
		tb.Fatalf("create table: %v", err)
	}
	return r, cfg
}

func freeAddr(tb testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitReady waits for the server to answer HTTP (any answer: dynalite
// refuses an unsigned request, which is enough to know it listens).
func waitReady(tb testing.TB, url string) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Post(url, "application/x-amz-json-1.0", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("dynalite on %s did not answer: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Item is the record's item for a token, read strongly consistent with a
// client of the test's own: the attributes as DynamoDB's JSON would name
// them, numbers and strings as text; nil when there is none.
func Item(tb testing.TB, cfg waitroom.OrderRecord, room, token string) map[string]string {
	tb.Helper()
	awsCfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")}
	db := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(cfg.Endpoint) })
	out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(cfg.Table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: orderrecord.Key(room, token)}}})
	if err != nil {
		tb.Fatalf("read the record: %v", err)
	}
	if out.Item == nil {
		return nil
	}
	item := map[string]string{}
	for k, v := range out.Item {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			item[k] = v.Value
		case *types.AttributeValueMemberN:
			item[k] = v.Value
		}
	}
	return item
}

// Version is the installed dynalite's version ("" when unknown).
func Version() string {
	b, err := os.ReadFile(filepath.Join(DefaultDir(), "node_modules", "dynalite", "package.json"))
	if err != nil {
		return ""
	}
	var p struct{ Version string }
	_ = json.Unmarshal(b, &p)
	return p.Version
}
