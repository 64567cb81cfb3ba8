package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// FnAdmin is the function behind the admin routes (functions/admin). The
// admin API runs in a function of its own: only it trusts API Gateway's IAM
// principal, its routes carry no visitor's JWT authorizer, and its
// concurrency and logs stay apart from the visitors' hot paths.
const FnAdmin = "admin"

// adminRoutes are the admin API's routes (docs/API.md, "Admin API").
var adminRoutes = []struct {
	method awsapigatewayv2.HttpMethod
	path   string
}{
	{awsapigatewayv2.HttpMethod_GET, "/admin/rooms"},
	{awsapigatewayv2.HttpMethod_GET, "/admin/rooms/{room}"},
	{awsapigatewayv2.HttpMethod_PUT, "/admin/rooms/{room}"},
	{awsapigatewayv2.HttpMethod_PATCH, "/admin/rooms/{room}"},
	{awsapigatewayv2.HttpMethod_POST, "/admin/rooms/{room}/pause"},
	{awsapigatewayv2.HttpMethod_POST, "/admin/rooms/{room}/resume"},
}

// Admin is the operators' side of the HTTP API.
type Admin struct {
	Routes []awsapigatewayv2.HttpRoute
	// OperatorPolicy allows execute-api:Invoke on the admin routes and
	// nothing else: attach it to the operators' role or group, who then
	// sign with SigV4 (waitroomctl --aws).
	OperatorPolicy awsiam.ManagedPolicy
}

// NewAdmin adds the admin routes to api, served by fn, each with AWS_IAM
// authorization: API Gateway checks the SigV4 signature and the caller's
// execute-api:Invoke permission before fn runs, and puts the principal in
// requestContext.authorizer.iam, which the admin function trusts as the
// audit log's "who".
func NewAdmin(scope constructs.Construct, api awsapigatewayv2.HttpApi, fn awslambda.IFunction) *Admin {
	integration := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("AdminIntegration"), fn, nil)
	iam := awsapigatewayv2authorizers.NewHttpIamAuthorizer()
	a := &Admin{}
	for _, r := range adminRoutes {
		routes := api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
			Path:        jsii.String(r.path),
			Methods:     &[]awsapigatewayv2.HttpMethod{r.method},
			Integration: integration,
			Authorizer:  iam,
		})
		a.Routes = append(a.Routes, *routes...)
	}
	a.OperatorPolicy = awsiam.NewManagedPolicy(scope, jsii.String("AdminOperatorPolicy"), &awsiam.ManagedPolicyProps{
		Description: jsii.String("Waitroom operators: call the admin API (/admin/…) with SigV4, e.g. waitroomctl --aws"),
		Statements: &[]awsiam.PolicyStatement{awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("execute-api:Invoke"),
			Resources: jsii.Strings(*api.ArnForExecuteApi(jsii.String("*"), jsii.String("/admin/*"), jsii.String("*"))),
		})},
	})
	return a
}
