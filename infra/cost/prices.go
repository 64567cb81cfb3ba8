package cost

import "fmt"

// HoursPerMonth is AWS's own convention for monthly figures (24 × 365 / 12).
const HoursPerMonth = 730

// Price is one list price with where it comes from.
type Price struct {
	USD    float64
	Unit   string
	Source string
	// Unconfirmed says the figure could not be checked against AWS's own
	// page when the table was taken (docs/cost.md says why).
	Unconfirmed bool
}

// Prices is the price table the model uses: on-demand, first tier, no free tier.
type Prices struct {
	Region, Taken string

	LambdaRequest, LambdaArmGBSecond, LambdaX86GBSecond Price
	HTTPAPIRequest                                      Price

	ValkeyStorageGBHour, ValkeyECPU Price
	RedisStorageGBHour, RedisECPU   Price
	SnapshotGBMonth                 Price
	// Node-hour prices of node-based caches, by engine/node type.
	NodeHour map[string]Price

	CustomMetricMonth, AlarmMetricMonth, HighResAlarmMetricMonth, CompositeAlarmMonth Price
	DashboardMonth, LogsIngestGB, LogsStorageGBMonth                                  Price

	InterfaceEndpointAZHour, InterfaceEndpointGB Price
	NATGatewayHour, NATGatewayGB, PublicIPv4Hour Price

	SecretMonth, KMSKeyMonth, BudgetActionDay Price
	// KMSRequest is a symmetric request (Decrypt); the free 20,000 a month
	// are left out, as the other free tiers (an upper bound).
	KMSRequest Price

	// CloudFront's rates are by region: CloudFrontRegions (cloudfront.go).
	S3StorageGBMonth Price

	// AWS WAF: a web ACL and each of its rules by the month, and each
	// request it inspects.
	WAFWebACLMonth, WAFRuleMonth, WAFRequest Price

	// DynamoDB on demand: a write request unit (1 KB), storage and
	// point-in-time recovery by the GB-month.
	DynamoDBWriteUnit, DynamoDBStorageGBMonth, DynamoDBPITRGBMonth Price

	// SQS requests (each 64 KB chunk of a payload is one).
	SQSStandardRequest, SQSFifoRequest Price

	// Data out to the internet from a region (API answers without the
	// page: not in the bills, docs/cost.md), and Step Functions Express
	// (the admission design it was weighed against, infra/README.md).
	InternetOutGB                                             Price
	StepFunctionsExpressRequest, StepFunctionsExpressGBSecond Price
}

// Minimum storage metered by ElastiCache Serverless, by engine.
const (
	ValkeyMinStorageGB = 0.1
	RedisMinStorageGB  = 1.0
)

// Source pages of the price table (us-east-1).
const (
	srcLambda      = "https://aws.amazon.com/lambda/pricing/"
	srcAPIGateway  = "https://aws.amazon.com/api-gateway/pricing/"
	srcElastiCache = "https://aws.amazon.com/elasticache/pricing/"
	srcCloudWatch  = "https://aws.amazon.com/cloudwatch/pricing/"
	srcPrivateLink = "https://aws.amazon.com/privatelink/pricing/"
	srcVPC         = "https://aws.amazon.com/vpc/pricing/"
	srcSecrets     = "https://aws.amazon.com/secrets-manager/pricing/"
	srcKMS         = "https://aws.amazon.com/kms/pricing/"
	srcBudgets     = "https://aws.amazon.com/aws-cost-management/aws-budgets/pricing/"
	srcCloudFront  = "https://aws.amazon.com/cloudfront/pricing/"
	srcS3          = "https://aws.amazon.com/s3/pricing/"
	srcSQS         = "https://aws.amazon.com/sqs/pricing/"
	srcDynamoDB    = "https://aws.amazon.com/dynamodb/pricing/on-demand/"
	srcEC2         = "https://aws.amazon.com/ec2/pricing/on-demand/"
	srcSteps       = "https://aws.amazon.com/step-functions/pricing/"
	srcWAF         = "https://aws.amazon.com/waf/pricing/"
)

// USEast1 is the table for us-east-1, taken on the date in Taken.
var USEast1 = Prices{
	Region: "us-east-1",
	Taken:  "2026-11-30",

	LambdaRequest:     Price{0.20 / 1e6, "request", srcLambda, false},
	LambdaArmGBSecond: Price{0.0000133334, "GB-second (arm64)", srcLambda, false},
	LambdaX86GBSecond: Price{0.0000166667, "GB-second (x86_64)", srcLambda, false},
	HTTPAPIRequest:    Price{1.00 / 1e6, "request (HTTP API, first 300 M a month)", srcAPIGateway, false},

	ValkeyStorageGBHour: Price{0.084, "GB-hour (Serverless Valkey)", srcElastiCache, false},
	ValkeyECPU:          Price{0.0023 / 1e6, "ECPU (Serverless Valkey)", srcElastiCache, false},
	RedisStorageGBHour:  Price{0.125, "GB-hour (Serverless Redis OSS)", srcElastiCache, false},
	RedisECPU:           Price{0.0034 / 1e6, "ECPU (Serverless Redis OSS)", srcElastiCache, false},
	SnapshotGBMonth:     Price{0.085, "GB-month of snapshots (Serverless)", srcElastiCache, true},
	NodeHour: map[string]Price{
		"redis/cache.r7g.large":  {0.219, "node-hour", srcElastiCache, true},
		"valkey/cache.r7g.large": {0.1752, "node-hour", srcElastiCache, true},
		"redis/cache.t4g.micro":  {0.016, "node-hour", srcElastiCache, true},
		"valkey/cache.t4g.micro": {0.0128, "node-hour", srcElastiCache, true},
	},

	CustomMetricMonth:       Price{0.30, "custom metric-month (first 10,000)", srcCloudWatch, false},
	AlarmMetricMonth:        Price{0.10, "alarm metric-month (standard resolution)", srcCloudWatch, false},
	HighResAlarmMetricMonth: Price{0.30, "alarm metric-month (high resolution)", srcCloudWatch, false},
	CompositeAlarmMonth:     Price{0.50, "composite alarm-month", srcCloudWatch, false},
	DashboardMonth:          Price{3.00, "dashboard-month", srcCloudWatch, false},
	LogsIngestGB:            Price{0.50, "GB ingested (standard class)", srcCloudWatch, false},
	LogsStorageGBMonth:      Price{0.03, "GB-month stored", srcCloudWatch, false},

	InterfaceEndpointAZHour: Price{0.01, "endpoint-AZ-hour", srcPrivateLink, false},
	InterfaceEndpointGB:     Price{0.01, "GB processed", srcPrivateLink, false},
	NATGatewayHour:          Price{0.045, "NAT gateway-hour", srcVPC, false},
	NATGatewayGB:            Price{0.045, "GB processed", srcVPC, false},
	PublicIPv4Hour:          Price{0.005, "public IPv4 address-hour", srcVPC, false},

	SecretMonth:     Price{0.40, "secret-month", srcSecrets, false},
	KMSKeyMonth:     Price{1.00, "customer managed key-month", srcKMS, false},
	KMSRequest:      Price{0.03 / 1e4, "request (symmetric: Decrypt)", srcKMS, false},
	BudgetActionDay: Price{0.10, "action-enabled budget-day beyond the first two", srcBudgets, true},

	S3StorageGBMonth: Price{0.023, "GB-month (S3 Standard, first 50 TB)", srcS3, false},

	WAFWebACLMonth: Price{5.00, "web ACL-month", srcWAF, true},
	WAFRuleMonth:   Price{1.00, "rule-month", srcWAF, true},
	WAFRequest:     Price{0.60 / 1e6, "request inspected (allowed or blocked)", srcWAF, true},

	DynamoDBWriteUnit:      Price{0.625 / 1e6, "write request unit (on demand, 1 KB)", srcDynamoDB, true},
	DynamoDBStorageGBMonth: Price{0.25, "GB-month (Standard table class, beyond 25 GB free)", srcDynamoDB, true},
	DynamoDBPITRGBMonth:    Price{0.20, "GB-month of continuous backups (point-in-time recovery)", srcDynamoDB, true},

	// Beyond the free first million a month (not counted), first 100 B.
	SQSStandardRequest: Price{0.40 / 1e6, "request (SQS standard, 64 KB chunk)", srcSQS, false},
	SQSFifoRequest:     Price{0.50 / 1e6, "request (SQS FIFO, 64 KB chunk)", srcSQS, false},

	InternetOutGB:                Price{0.09, "GB out to the internet (first 10 TB, beyond 100 GB free)", srcEC2, true},
	StepFunctionsExpressRequest:  Price{1.00 / 1e6, "Express workflow request", srcSteps, true},
	StepFunctionsExpressGBSecond: Price{0.00001667, "Express workflow GB-second (first tier, 64 MB minimum)", srcSteps, true},
}

// node returns the node-hour price of a node-based cache.
func (p Prices) node(c NodeCache) (Price, error) {
	pr, ok := p.NodeHour[c.Engine+"/"+c.NodeType]
	if !ok {
		return Price{}, fmt.Errorf("cost: no price for %s node type %s in the table (add it to cost.USEast1.NodeHour)", c.Engine, c.NodeType)
	}
	return pr, nil
}

// cache returns the storage and ECPU prices and the metered minimum of a
// serverless engine.
func (p Prices) cache(engine string) (storage, ecpu Price, minGB float64) {
	if engine == "valkey" {
		return p.ValkeyStorageGBHour, p.ValkeyECPU, ValkeyMinStorageGB
	}
	return p.RedisStorageGBHour, p.RedisECPU, RedisMinStorageGB
}

// lambdaGBSecond is the duration price of an architecture.
func (p Prices) lambdaGBSecond(arch string) Price {
	if arch == "arm64" {
		return p.LambdaArmGBSecond
	}
	return p.LambdaX86GBSecond
}
