package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
)

// SecretVars are the variables whose values only their function may read:
// the ticket key, the proxy and origin secrets and the entry-token seed
// (ENTRY_TOKEN_PUBLIC_KEYS is public).
var SecretVars = []string{"TICKET_SECRET", "PROXY_SECRET", "ORIGIN_SECRET", "ENTRY_TOKEN_KEYS"}

func holdsSecret(env map[string]*string) bool {
	for _, name := range SecretVars {
		if env[name] != nil {
			return true
		}
	}
	return false
}

// envKey encrypts the environment of the functions that hold a secret with
// a customer-managed key of the stack's own. Under Lambda's default key
// anyone allowed lambda:GetFunctionConfiguration reads every variable;
// under this one Lambda shows them only to whoever may also decrypt with
// the key, and its policy lets only those functions' roles decrypt. The
// key is made when the first function needs it: a stack whose functions
// hold no secret pays for none (docs/security.md, "The entry-token key in
// AWS", and docs/cost.md).
type envKey struct {
	stack   awscdk.Stack
	key     awskms.Key
	readers awsiam.PolicyStatement
}

// protect encrypts props' environment with the key when it holds a secret,
// and lets role (the function's) decrypt with that key alone: the key
// policy names the role, and the role's own policy allows kms:Decrypt on
// the key's ARN only (a policy of its own beside the role's inline one,
// which the key's policy, naming the role, cannot be part of: a cycle).
func (k *envKey) protect(props *awslambda.FunctionProps, role awsiam.IRole) {
	if props.Environment == nil || !holdsSecret(*props.Environment) {
		return
	}
	if k.key == nil {
		k.newKey()
	}
	props.EnvironmentEncryption = k.key
	k.readers.AddPrincipals(awsiam.NewArnPrincipal(role.RoleArn()))
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid: jsii.String(DecryptOwnEnvironmentSid), Actions: jsii.Strings("kms:Decrypt"), Resources: jsii.Strings(*k.key.KeyArn()),
	}))
}

// DecryptOwnEnvironmentSid is the statement of a function's role that
// decrypts its environment with the stack's key.
const DecryptOwnEnvironmentSid = "DecryptOwnEnvironment"

// keyAdministration is what the account keeps on its key: everything but
// using it (AWS requires that someone may manage a key: "the default key
// policy"), and deliberately neither Decrypt nor CreateGrant, with which any
// of the account's IAM principals could read the secrets. PutKeyPolicy stays
// an administrator's way in, as it is with every key, and is logged.
var keyAdministration = []string{
	"kms:CancelKeyDeletion", "kms:CreateAlias", "kms:DeleteAlias", "kms:DescribeKey", "kms:DisableKey", "kms:DisableKeyRotation",
	"kms:EnableKey", "kms:EnableKeyRotation", "kms:GetKeyPolicy", "kms:GetKeyRotationStatus", "kms:ListAliases", "kms:ListGrants",
	"kms:ListKeyPolicies", "kms:ListResourceTags", "kms:PutKeyPolicy", "kms:RetireGrant", "kms:RevokeGrant", "kms:RotateKeyOnDemand",
	"kms:ScheduleKeyDeletion", "kms:TagResource", "kms:UntagResource", "kms:UpdateAlias", "kms:UpdateKeyDescription",
}

// newKey makes the key and its policy: the account administers it; whoever
// deploys the functions (CloudFormation, through Lambda: kms:ViaService)
// may have Lambda encrypt with it and create the grant Lambda keeps for the
// function (AWS Lambda Developer Guide, "Securing environment variables":
// kms:CreateGrant and kms:Encrypt configure a customer managed key); only
// the functions' roles decrypt. KMS rotates its key material every year
// and keeps the old material for what it encrypted (the first two
// rotations add $1 a month each, later ones nothing: docs/cost.md).
// Deleted with the stack after 7 days (a key pending deletion costs
// nothing).
func (k *envKey) newKey() {
	account := awsiam.NewAccountRootPrincipal()
	viaLambda := map[string]any{"kms:ViaService": awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String("lambda."), awscdk.Aws_REGION(), jsii.String(".amazonaws.com")})}
	k.readers = awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid: jsii.String("FunctionsReadTheirEnvironment"), Actions: jsii.Strings("kms:Decrypt"), Resources: jsii.Strings("*"),
	})
	policy := awsiam.NewPolicyDocument(&awsiam.PolicyDocumentProps{Statements: &[]awsiam.PolicyStatement{
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid: jsii.String("AccountAdministersTheKey"), Principals: &[]awsiam.IPrincipal{account},
			Actions: jsii.Strings(keyAdministration...), Resources: jsii.Strings("*"),
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid: jsii.String("LambdaEncryptsForTheDeployer"), Principals: &[]awsiam.IPrincipal{account},
			Actions: jsii.Strings("kms:Encrypt"), Resources: jsii.Strings("*"),
			Conditions: &map[string]any{"StringEquals": viaLambda},
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid: jsii.String("LambdaGrantsForTheDeployer"), Principals: &[]awsiam.IPrincipal{account},
			Actions: jsii.Strings("kms:CreateGrant"), Resources: jsii.Strings("*"),
			Conditions: &map[string]any{"StringEquals": viaLambda, "Bool": map[string]any{"kms:GrantIsForAWSResource": "true"}},
		}),
		k.readers,
	}})
	k.key = awskms.NewKey(k.stack, jsii.String("EnvironmentKey"), &awskms.KeyProps{
		Description:       jsii.String("Waitroom: the functions' secrets in their environment; only their roles decrypt"),
		Policy:            policy,
		EnableKeyRotation: jsii.Bool(true),
		RemovalPolicy:     awscdk.RemovalPolicy_DESTROY,
		PendingWindow:     awscdk.Duration_Days(jsii.Number(7)),
	})
}
