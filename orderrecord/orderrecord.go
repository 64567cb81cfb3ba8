// Package orderrecord is the durable record of consumed entry tokens: one
// DynamoDB item per token the order gate lets through, written with a
// conditional put before the order goes downstream (docs/design.md, "The
// order record"). Redis keeps the hot path (the lock, idempotent replays);
// this record is what a failover of the cache cannot lose, because
// DynamoDB acknowledges a write only once it is durable in several
// availability zones, and reads it back strongly consistent.
package orderrecord

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/waitroom/waitroom"
)

// Attribute names. KeyPrefix starts every partition key, so that the
// gate's IAM policy can grant exactly these items (dynamodb:LeadingKeys
// token#*, infra/orderrecord.go).
const (
	KeyPrefix   = waitroom.OrderRecordKeyPrefix
	attrKey     = "pk"
	attrAttempt = "attempt"
	// AttrExpires is the table's TTL attribute: the token's expiry, in Unix
	// seconds. Past it the token cannot order anyway, so DynamoDB may
	// delete the item.
	AttrExpires     = waitroom.OrderRecordTTLAttribute
	attrKeyHash     = "keyHash"
	attrRequestHash = "requestHash"
	attrAnswer      = "answer"
)

// MaxAnswer is the largest answer kept for replays (DynamoDB's items are
// at most 400 KB); a larger one is not kept (Keep returns ErrTooLarge).
const MaxAnswer = 350 << 10

// ErrTooLarge is Keep's refusal of an answer over MaxAnswer.
var ErrTooLarge = waitroom.ErrAnswerTooLarge

// Record writes and reads the table.
type Record struct {
	db    *dynamodb.Client
	table string
}

// New is a record in table through db.
func New(db *dynamodb.Client, table string) *Record { return &Record{db: db, table: table} }

// Claim is one use of a token (waitroom.OrderClaim).
type Claim = waitroom.OrderClaim

// Prior is what the use that came first left (waitroom.PriorOrder).
type Prior = waitroom.PriorOrder

// Key is a token's partition key: its room and a SHA-256 of the token,
// never the token itself (the table is no secret store).
func Key(room, token string) string {
	sum := sha256.Sum256([]byte(token))
	return KeyPrefix + room + "#" + hex.EncodeToString(sum[:])
}

func keyHash(key string) string {
	if key == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

func keyOf(c Claim) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrKey: &types.AttributeValueMemberS{Value: Key(c.Room, c.Token)}}
}

// Claim records the token as used by c, unless another attempt used it
// first: then it returns what that one left (never nil) and no error.
func (r *Record) Claim(ctx context.Context, c Claim) (*Prior, error) {
	item := keyOf(c)
	item[attrAttempt] = &types.AttributeValueMemberS{Value: c.Attempt}
	item[AttrExpires] = &types.AttributeValueMemberN{Value: strconv.FormatInt(c.Expires.Unix(), 10)}
	if h := keyHash(c.IdempotencyKey); h != "" {
		item[attrKeyHash] = &types.AttributeValueMemberS{Value: h}
		item[attrRequestHash] = &types.AttributeValueMemberS{Value: c.RequestHash}
	}
	_, err := r.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &r.table, Item: item,
		// Our own attempt again is no second use: the client may retry a
		// put whose answer it lost.
		ConditionExpression:       aws.String("attribute_not_exists(#pk) OR #attempt = :attempt"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrKey, "#attempt": attrAttempt},
		ExpressionAttributeValues: map[string]types.AttributeValue{":attempt": item[attrAttempt]},
	})
	if !conditionFailed(err) {
		return nil, err
	}
	return r.prior(ctx, c)
}

// prior reads, strongly consistent, what the first use of c's token left.
func (r *Record) prior(ctx context.Context, c Claim) (*Prior, error) {
	out, err := r.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &r.table, Key: keyOf(c), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	p := &Prior{}
	h, _ := out.Item[attrKeyHash].(*types.AttributeValueMemberS)
	p.SameKey = h != nil && c.IdempotencyKey != "" && h.Value == keyHash(c.IdempotencyKey)
	if rh, ok := out.Item[attrRequestHash].(*types.AttributeValueMemberS); ok {
		p.RequestHash = rh.Value
	}
	if a, ok := out.Item[attrAnswer].(*types.AttributeValueMemberS); ok {
		var answer waitroom.StoredAnswer
		if json.Unmarshal([]byte(a.Value), &answer) == nil {
			p.Answer = &answer
		}
	}
	return p, nil
}

// Keep stores the 2xx answer of c's order, for a replay of its
// Idempotency-Key after a failover lost the cache's copy. Only c's own
// item is changed: another attempt's is left alone.
func (r *Record) Keep(ctx context.Context, c Claim, answer waitroom.StoredAnswer) error {
	raw, err := json.Marshal(answer)
	if err != nil {
		return err
	}
	if len(raw) > MaxAnswer {
		return ErrTooLarge
	}
	_, err = r.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &r.table, Key: keyOf(c),
		UpdateExpression:          aws.String("SET #answer = :answer"),
		ConditionExpression:       aws.String("#attempt = :attempt"),
		ExpressionAttributeNames:  map[string]string{"#answer": attrAnswer, "#attempt": attrAttempt},
		ExpressionAttributeValues: map[string]types.AttributeValue{":answer": &types.AttributeValueMemberS{Value: string(raw)}, ":attempt": &types.AttributeValueMemberS{Value: c.Attempt}},
	})
	if conditionFailed(err) {
		return nil // not ours (fail-open went on without a claim): nothing to keep
	}
	return err
}

// Release forgets c's use after its order failed downstream, so that the
// token may order again; another attempt's use is left alone.
func (r *Record) Release(ctx context.Context, c Claim) error {
	_, err := r.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: &r.table, Key: keyOf(c),
		ConditionExpression:       aws.String("#attempt = :attempt"),
		ExpressionAttributeNames:  map[string]string{"#attempt": attrAttempt},
		ExpressionAttributeValues: map[string]types.AttributeValue{":attempt": &types.AttributeValueMemberS{Value: c.Attempt}},
	})
	if conditionFailed(err) {
		return nil
	}
	return err
}

func conditionFailed(err error) bool {
	var cf *types.ConditionalCheckFailedException
	return errors.As(err, &cf)
}
