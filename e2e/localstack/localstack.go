// Package localstack deploys the four functions to LocalStack with
// aws-sdk-go-v2 (Lambda and EventBridge: both in LocalStack's free plan) and invokes them through the Lambda Invoke API, so that the
// end-to-end scenario runs against them unchanged. API Gateway HTTP API and
// ElastiCache need a paid plan: the test gateway stands in for the first,
// and a Redis the Lambda containers can reach for the second (its password,
// if any, in REDIS_URL: LocalStack cannot check ElastiCache IAM tokens).
package localstack

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/waitroom/waitroom/e2e/gateway"
)

// Options say what to deploy where.
type Options struct {
	Endpoint string            // e.g. http://localhost:4566
	Region   string            // default us-east-1
	Prefix   string            // function and rule names start with it
	Arch     string            // amd64 or arm64 (GOARCH of the bootstraps)
	BuildDir string            // holds <function>/bootstrap
	Env      map[string]string // every function's environment
}

// Deployment is what Deploy created.
type Deployment struct {
	Functions map[string]string // function → deployed name
	RuleName  string

	lambda *lambda.Client
	events *eventbridge.Client
}

var _ gateway.Invoker = (*Deployment)(nil)

// Probe reports whether LocalStack answers at endpoint with Lambda available.
func Probe(ctx context.Context, endpoint string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(endpoint, "/")+"/_localstack/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var health struct {
		Services map[string]string `json:"services"`
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health answered %s", resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&health); err != nil {
		return fmt.Errorf("health: %w", err)
	}
	for _, svc := range []string{"lambda", "events"} {
		if s := health.Services[svc]; s != "available" && s != "running" {
			return fmt.Errorf("service %s is %q", svc, s)
		}
	}
	return nil
}

func awsConfig(ctx context.Context, opt Options) (aws.Config, error) {
	region := opt.Region
	if region == "" {
		region = "us-east-1"
	}
	// LocalStack takes any credentials; fixed ones keep the machine's own
	// AWS configuration out of the test.
	return config.LoadDefaultConfig(ctx,
		config.WithRegion(region),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		config.WithBaseEndpoint(opt.Endpoint),
	)
}

// Deploy creates the four functions and the admit schedule.
// On error, whatever was created is left for Destroy.
func Deploy(ctx context.Context, opt Options) (*Deployment, error) {
	cfg, err := awsConfig(ctx, opt)
	if err != nil {
		return nil, err
	}
	d := &Deployment{
		Functions: map[string]string{},
		lambda:    lambda.NewFromConfig(cfg),
		events:    eventbridge.NewFromConfig(cfg),
	}
	arch := ltypes.ArchitectureX8664
	if opt.Arch == "arm64" {
		arch = ltypes.ArchitectureArm64
	}
	for _, fn := range gateway.Functions {
		code, err := ZipBootstrap(filepath.Join(opt.BuildDir, fn, "bootstrap"))
		if err != nil {
			return d, err
		}
		name := opt.Prefix + "-" + fn
		timeout := int32(30)
		if fn == gateway.Admit {
			timeout = 120
		}
		if _, err := d.lambda.CreateFunction(ctx, &lambda.CreateFunctionInput{
			FunctionName:  aws.String(name),
			Runtime:       ltypes.RuntimeProvidedal2023,
			Handler:       aws.String("bootstrap"),
			Role:          aws.String("arn:aws:iam::000000000000:role/waitroom-e2e"),
			Code:          &ltypes.FunctionCode{ZipFile: code},
			Architectures: []ltypes.Architecture{arch},
			MemorySize:    aws.Int32(256),
			Timeout:       aws.Int32(timeout),
			Environment:   &ltypes.Environment{Variables: opt.Env},
		}); err != nil {
			return d, fmt.Errorf("create function %s: %w", name, err)
		}
		d.Functions[fn] = name
	}
	for fn, name := range d.Functions {
		if err := lambda.NewFunctionActiveV2Waiter(d.lambda).Wait(ctx, &lambda.GetFunctionInput{FunctionName: aws.String(name)}, 3*time.Minute); err != nil {
			return d, fmt.Errorf("%s did not become active: %w", fn, err)
		}
	}

	// The schedule, as the CDK stack has it, but DISABLED: the scenario
	// drives admission itself with the very payload the rule would send,
	// and a rule firing mid-scenario would disturb its measurements.
	d.RuleName = opt.Prefix + "-admit"
	rule, err := d.events.PutRule(ctx, &eventbridge.PutRuleInput{
		Name:               aws.String(d.RuleName),
		ScheduleExpression: aws.String("rate(1 minute)"),
		State:              ebtypes.RuleStateDisabled,
		Description:        aws.String("Waitroom e2e: admission schedule"),
	})
	if err != nil {
		return d, fmt.Errorf("put rule: %w", err)
	}
	admit, err := d.lambda.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String(d.Functions[gateway.Admit])})
	if err != nil {
		return d, err
	}
	if _, err := d.lambda.AddPermission(ctx, &lambda.AddPermissionInput{
		FunctionName: aws.String(d.Functions[gateway.Admit]),
		StatementId:  aws.String("admit-schedule"),
		Action:       aws.String("lambda:InvokeFunction"),
		Principal:    aws.String("events.amazonaws.com"),
		SourceArn:    rule.RuleArn,
	}); err != nil {
		return d, fmt.Errorf("add permission: %w", err)
	}
	if _, err := d.events.PutTargets(ctx, &eventbridge.PutTargetsInput{
		Rule:    aws.String(d.RuleName),
		Targets: []ebtypes.Target{{Id: aws.String("admit"), Arn: admit.Configuration.FunctionArn}},
	}); err != nil {
		return d, fmt.Errorf("put targets: %w", err)
	}
	return d, nil
}

// CheckSchedule verifies that the admit rule exists and targets admit.
func (d *Deployment) CheckSchedule(ctx context.Context) error {
	targets, err := d.events.ListTargetsByRule(ctx, &eventbridge.ListTargetsByRuleInput{Rule: aws.String(d.RuleName)})
	if err != nil {
		return err
	}
	for _, t := range targets.Targets {
		if strings.HasSuffix(aws.ToString(t.Arn), ":"+d.Functions[gateway.Admit]) {
			return nil
		}
	}
	return fmt.Errorf("rule %s does not target %s", d.RuleName, d.Functions[gateway.Admit])
}

// Invoke calls a deployed function synchronously through the Invoke API.
func (d *Deployment) Invoke(ctx context.Context, fn string, payload []byte) (gateway.Result, error) {
	name, ok := d.Functions[fn]
	if !ok {
		return gateway.Result{}, fmt.Errorf("no function %q", fn)
	}
	out, err := d.lambda.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(name), Payload: payload})
	if err != nil {
		return gateway.Result{}, err
	}
	return gateway.Result{Payload: out.Payload, FunctionError: aws.ToString(out.FunctionError)}, nil
}

// Destroy removes everything Deploy created.
func (d *Deployment) Destroy(ctx context.Context) error {
	var errs []error
	if d.RuleName != "" {
		_, err := d.events.RemoveTargets(ctx, &eventbridge.RemoveTargetsInput{Rule: aws.String(d.RuleName), Ids: []string{"admit"}})
		errs = append(errs, err)
		_, err = d.events.DeleteRule(ctx, &eventbridge.DeleteRuleInput{Name: aws.String(d.RuleName)})
		errs = append(errs, err)
	}
	for _, name := range d.Functions {
		_, err := d.lambda.DeleteFunction(ctx, &lambda.DeleteFunctionInput{FunctionName: aws.String(name)})
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ZipBootstrap packs a bootstrap binary the way Lambda expects it: one
// executable file named bootstrap at the root of the archive.
func ZipBootstrap(path string) ([]byte, error) {
	bin, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate, Modified: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(bin); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
