// Package secrets reads the cache credentials from AWS Secrets Manager.
package secrets

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/waitroom/waitroom/redisstore"
)

// GetSecretValuer is the one Secrets Manager call used.
type GetSecretValuer interface {
	GetSecretValue(context.Context, *secretsmanager.GetSecretValueInput, ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// RedisCredentials reads {"username": ..., "password": ...} from the secret arn.
func RedisCredentials(ctx context.Context, sm GetSecretValuer, arn string) (redisstore.Credentials, error) {
	out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
	if err != nil {
		return redisstore.Credentials{}, fmt.Errorf("REDIS_SECRET_ARN: %w", err)
	}
	var v struct {
		Username string `json:"username"`
		Password string `json:"password"`
	}
	if err := json.Unmarshal([]byte(aws.ToString(out.SecretString)), &v); err != nil || v.Password == "" {
		return redisstore.Credentials{}, fmt.Errorf("REDIS_SECRET_ARN: the secret must be JSON with \"username\" and \"password\"")
	}
	return redisstore.Credentials{Username: v.Username, Password: v.Password}, nil
}

// NewClient returns a Secrets Manager client from the function's environment.
func NewClient(ctx context.Context) (*secretsmanager.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	return secretsmanager.NewFromConfig(cfg), nil
}
