package orderrecord

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/waitroom/waitroom"
)

// maxBackoff bounds the client's pause between its 3 attempts of one call:
// the gate's own timeout per call (waitroom.StoreCallTimeout) must leave
// room for all of them.
const maxBackoff = 200 * time.Millisecond

// Open is the record that cfg names (ORDER_RECORD_TABLE, in the region of
// the AWS environment, or at ORDER_RECORD_ENDPOINT), or nil without a table.
// Nothing is fetched here.
func Open(ctx context.Context, cfg waitroom.Config) (*Record, error) {
	if cfg.OrderRecord.Table == "" {
		return nil, nil
	}
	opts := []func(*config.LoadOptions) error{config.WithRetryer(func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts, o.MaxBackoff = 3, maxBackoff })
	})}
	if cfg.OrderRecord.AnyCredentials {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("ORDER_RECORD_TABLE: AWS configuration: %w", err)
	}
	if awsCfg.Region == "" && cfg.OrderRecord.Endpoint != "" {
		awsCfg.Region = "us-east-1" // any name: the endpoint is given
	}
	if awsCfg.Region == "" {
		return nil, errors.New("ORDER_RECORD_TABLE: no AWS region (AWS_REGION is unset)")
	}
	db := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		if cfg.OrderRecord.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.OrderRecord.Endpoint)
		}
	})
	return New(db, cfg.OrderRecord.Table), nil
}

// CreateTable creates the record's table when it is missing, as the stack
// creates it in AWS (on demand; its TTL is the stack's): for the local
// runner and the tests, on a DynamoDB-compatible server.
func (r *Record) CreateTable(ctx context.Context) error {
	_, err := r.db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            &r.table,
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(attrKey), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(attrKey), KeyType: types.KeyTypeHash}},
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return err
	}
	// A new table is CREATING for a moment (dynalite too): wait until ACTIVE.
	return dynamodb.NewTableExistsWaiter(r.db, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 50*time.Millisecond, 500*time.Millisecond
	}).Wait(ctx, &dynamodb.DescribeTableInput{TableName: &r.table}, 30*time.Second)
}
