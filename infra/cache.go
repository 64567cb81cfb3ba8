package main

import (
	"fmt"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticache"
	"github.com/aws/jsii-runtime-go"
)

// Ports a functions' client may use on the cache: 6379 (primary endpoint)
// and 6380 (the serverless reader endpoint).
const (
	cachePortLow  = 6379
	cachePortHigh = 6380
)

// Cache is the provisioned store and what the functions need to log in to
// it with IAM authentication.
type Cache struct {
	Address, Port *string
	Cluster       bool
	// Name is the serverless cache name or the replication group id
	// (REDIS_IAM_CACHE_NAME).
	Name string
	// Users are the functions' IAM-authenticated users, one each
	// (cacheusers.go), by function.
	Users map[string]CacheUser
	// Arn is the cache's resource of elasticache:Connect.
	Arn       *string
	SecGroup  awsec2.SecurityGroup
	Resource  awscdk.CfnResource
	UserGroup awselasticache.CfnUserGroup
}

// Env is the cache part of function fn's environment: its own user.
func (c *Cache) Env(fn string) map[string]*string {
	return map[string]*string{
		"REDIS_URL":            awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String("rediss://"), c.Address, jsii.String(":"), c.Port}),
		"REDIS_CLUSTER":        jsii.String(strconv.FormatBool(c.Cluster)),
		"REDIS_IAM_USER":       jsii.String(c.Users[fn].ID),
		"REDIS_IAM_CACHE_NAME": jsii.String(c.Name),
		"REDIS_IAM_SERVERLESS": jsii.String(strconv.FormatBool(c.Cluster)),
	}
}

// newCache provisions the store, its IAM-authenticated user and its
// security group (ingress is added per function security group).
func newCache(stack awscdk.Stack, p WaitroomProps, net *network) *Cache {
	c := &Cache{Name: p.NamePrefix}
	c.SecGroup = awsec2.NewSecurityGroup(stack, jsii.String("CacheSecurityGroup"), &awsec2.SecurityGroupProps{
		Vpc:              net.vpc,
		Description:      jsii.String("Waitroom cache: reachable from the functions only"),
		AllowAllOutbound: jsii.Bool(false),
	})
	newCacheUsers(stack, p, c)
	sids := []interface{}{}
	for _, id := range *net.vpc.SelectSubnets(net.isolated).SubnetIds {
		sids = append(sids, id)
	}
	if p.CacheMode == CacheReplicationGroup {
		newReplicationGroup(stack, p, c, sids)
	} else {
		newServerlessCache(stack, p, c, sids)
	}
	return c
}

// newServerlessCache: ElastiCache Serverless for Valkey (cluster mode),
// bounded by CacheUsageLimits, with daily snapshots.
func newServerlessCache(stack awscdk.Stack, p WaitroomProps, c *Cache, subnetIDs []interface{}) {
	props := &awselasticache.CfnServerlessCacheProps{
		ServerlessCacheName: jsii.String(c.Name),
		Description:         jsii.String("Waitroom line, tokens and rate budgets"),
		Engine:              jsii.String("valkey"),
		MajorEngineVersion:  jsii.String("8"),
		SubnetIds:           &subnetIDs,
		SecurityGroupIds:    &[]interface{}{c.SecGroup.SecurityGroupId()},
		UserGroupId:         c.UserGroup.Ref(),
		CacheUsageLimits: &awselasticache.CfnServerlessCache_CacheUsageLimitsProperty{
			DataStorage: &awselasticache.CfnServerlessCache_DataStorageProperty{
				Maximum: jsii.Number(float64(p.CacheMaxStorageGB)), Unit: jsii.String("GB"),
			},
			EcpuPerSecond: &awselasticache.CfnServerlessCache_ECPUPerSecondProperty{
				Maximum: jsii.Number(float64(p.CacheMaxECPUPerSecond)),
			},
		},
	}
	if p.CacheSnapshotRetentionDays != NoLimit {
		props.SnapshotRetentionLimit = jsii.Number(float64(p.CacheSnapshotRetentionDays))
		props.DailySnapshotTime = jsii.String(p.CacheSnapshotTime)
	}
	sc := awselasticache.NewCfnServerlessCache(stack, jsii.String("Cache"), props)
	c.Address, c.Port, c.Cluster = sc.AttrEndpointAddress(), sc.AttrEndpointPort(), true
	c.Arn = sc.AttrArn()
	c.Resource = sc
}

// newReplicationGroup: a provisioned Valkey primary and replica, Multi-AZ,
// with daily snapshots in a window that cannot overlap its maintenance.
func newReplicationGroup(stack awscdk.Stack, p WaitroomProps, c *Cache, subnetIDs []interface{}) {
	subnetGroup := awselasticache.NewCfnSubnetGroup(stack, jsii.String("CacheSubnetGroup"), &awselasticache.CfnSubnetGroupProps{
		Description: jsii.String("Waitroom cache: private isolated subnets"),
		SubnetIds:   &subnetIDs,
	})
	props := &awselasticache.CfnReplicationGroupProps{
		ReplicationGroupDescription: jsii.String("Waitroom line, tokens and rate budgets"),
		ReplicationGroupId:          jsii.String(c.Name),
		Engine:                      jsii.String("valkey"),
		EngineVersion:               jsii.String("8.0"),
		CacheNodeType:               jsii.String(p.CacheNodeType),
		NumCacheClusters:            jsii.Number(2),
		AutomaticFailoverEnabled:    jsii.Bool(true),
		MultiAzEnabled:              jsii.Bool(true),
		TransitEncryptionEnabled:    jsii.Bool(true),
		TransitEncryptionMode:       jsii.String("required"),
		AtRestEncryptionEnabled:     jsii.Bool(true),
		Port:                        jsii.Number(cachePortLow),
		CacheSubnetGroupName:        subnetGroup.Ref(),
		SecurityGroupIds:            &[]*string{c.SecGroup.SecurityGroupId()},
		UserGroupIds:                &[]*string{c.UserGroup.Ref()},
	}
	if p.CacheSnapshotRetentionDays != NoLimit {
		props.SnapshotRetentionLimit = jsii.Number(float64(p.CacheSnapshotRetentionDays))
		props.SnapshotWindow = jsii.String(weekTime(p.CacheSnapshotTime, 0, false) + "-" + weekTime(p.CacheSnapshotTime, 1, false))
		props.PreferredMaintenanceWindow = jsii.String(weekTime(p.CacheSnapshotTime, 2, true) + "-" + weekTime(p.CacheSnapshotTime, 3, true))
	}
	rg := awselasticache.NewCfnReplicationGroup(stack, jsii.String("Cache"), props)
	c.Address, c.Port, c.Cluster = rg.AttrPrimaryEndPointAddress(), rg.AttrPrimaryEndPointPort(), false
	c.Arn = stack.FormatArn(&awscdk.ArnComponents{
		Service: jsii.String("elasticache"), Resource: jsii.String("replicationgroup"),
		ResourceName: jsii.String(c.Name), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
	})
	c.Resource = rg
}

// weekTime is hhmm plus hours, as "HH:MM", or as "ddd:HH:MM" counted from
// Sunday when withDay (a maintenance window may cross midnight).
func weekTime(hhmm string, hours int, withDay bool) string {
	var h, m int
	fmt.Sscanf(hhmm, "%d:%d", &h, &m)
	h += hours
	if !withDay {
		return fmt.Sprintf("%02d:%02d", h%24, m)
	}
	days := []string{"sun", "mon"}
	return fmt.Sprintf("%s:%02d:%02d", days[h/24], h%24, m)
}
