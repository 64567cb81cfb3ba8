package main

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticache"
	"github.com/aws/jsii-runtime-go"

	"github.com/waitroom/waitroom/internal/cacheacl"
)

// CacheUser is one function's ElastiCache user: its id (= its name,
// REDIS_IAM_USER) and ARN (a resource of that function's
// elasticache:Connect, and of no other's).
type CacheUser struct {
	ID  string
	Arn *string
}

// cacheUserID is the user of function fn: <namePrefix>-<suffix> (the
// suffixes are short: the longest prefix, 28 characters, leaves room).
// Every function has a grant (TestEveryFunctionHasItsOwnCacheUser).
func cacheUserID(p WaitroomProps, fn string) string {
	return p.NamePrefix + "-" + cacheacl.Grants[fn].UserSuffix
}

// cacheUserIDs lists the functions' users for the stack's outputs.
func (c *Cache) cacheUserIDs(functions []string) string {
	var out []string
	for _, fn := range functions {
		out = append(out, fn+"="+c.Users[fn].ID)
	}
	return strings.Join(out, ",")
}

// newCacheUsers: one IAM-authenticated user per function that exists,
// each with the access string of internal/cacheacl (its own keys and
// commands; issue 32: before, one user with `~* +@all -@dangerous` served
// every function), and the "default" user every user group must contain,
// switched off. ElastiCache wants an IAM user's name equal to its id; the
// function presigns its token locally, no password anywhere.
func newCacheUsers(stack awscdk.Stack, p WaitroomProps, c *Cache) {
	c.Users = map[string]CacheUser{}
	dflt := awselasticache.NewCfnUser(stack, jsii.String("CacheDefaultUser"), &awselasticache.CfnUserProps{
		Engine:             jsii.String("redis"),
		UserId:             jsii.String(p.NamePrefix + "-default"),
		UserName:           jsii.String("default"),
		AccessString:       jsii.String("off -@all"),
		AuthenticationMode: map[string]interface{}{"Type": "no-password-required"},
	})
	ids := []*string{dflt.Ref()}
	for _, fn := range p.FunctionNames() {
		id := cacheUserID(p, fn)
		acl, _ := cacheacl.AccessString(fn)
		// AuthenticationMode is untyped JSON in the L1: CloudFormation's spelling.
		u := awselasticache.NewCfnUser(stack, jsii.String(logicalName(fn)+"CacheUser"), &awselasticache.CfnUserProps{
			Engine:             jsii.String("redis"),
			UserId:             jsii.String(id),
			UserName:           jsii.String(id),
			AccessString:       jsii.String(acl),
			AuthenticationMode: map[string]interface{}{"Type": "iam"},
		})
		c.Users[fn] = CacheUser{ID: id, Arn: u.AttrArn()}
		ids = append(ids, u.Ref())
	}
	c.UserGroup = awselasticache.NewCfnUserGroup(stack, jsii.String("CacheUserGroup"), &awselasticache.CfnUserGroupProps{
		Engine:      jsii.String("redis"),
		UserGroupId: jsii.String(p.NamePrefix + "-users"),
		UserIds:     &ids,
	})
}
