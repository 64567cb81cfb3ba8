package main

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
)

// adminTemplate is a minimal stack: an HTTP API and a stand-in function
// with the admin routes wired by NewAdmin.
func adminTemplate(t *testing.T) assertions.Template {
	t.Helper()
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("AdminTest"), nil)
	api := awsapigatewayv2.NewHttpApi(stack, jsii.String("Api"), nil)
	fn := awslambda.NewFunction(stack, jsii.String("AdminFunction"), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_NODEJS_20_X(), Handler: jsii.String("index.handler"),
		Code: awslambda.Code_FromInline(jsii.String("exports.handler = async () => ({})")),
	})
	NewAdmin(stack, api, fn)
	return assertions.Template_FromStack(stack, nil)
}

func TestAdminRoutesUseIAM(t *testing.T) {
	tpl := adminTemplate(t)
	tpl.ResourceCountIs(jsii.String("AWS::ApiGatewayV2::Route"), jsii.Number(float64(len(adminRoutes))))
	for _, key := range []string{"GET /admin/rooms", "GET /admin/rooms/{room}", "PUT /admin/rooms/{room}",
		"PATCH /admin/rooms/{room}", "POST /admin/rooms/{room}/pause", "POST /admin/rooms/{room}/resume"} {
		tpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Route"), &map[string]any{
			"RouteKey": key, "AuthorizationType": "AWS_IAM",
		})
	}
	// No route is left open or on the visitors' JWT authorizer.
	routes := tpl.FindResources(jsii.String("AWS::ApiGatewayV2::Route"), nil)
	for id, r := range *routes {
		props := (*r)["Properties"].(map[string]any)
		if props["AuthorizationType"] != "AWS_IAM" || props["AuthorizerId"] != nil {
			t.Errorf("route %s: %v", id, props)
		}
	}
	tpl.ResourceCountIs(jsii.String("AWS::ApiGatewayV2::Authorizer"), jsii.Number(0))
	// API Gateway may invoke the admin function.
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Permission"), &map[string]any{
		"Action": "lambda:InvokeFunction", "Principal": "apigateway.amazonaws.com",
	})
}

func TestAdminOperatorPolicyInvokesOnlyAdminRoutes(t *testing.T) {
	tpl := adminTemplate(t)
	tpl.HasResourceProperties(jsii.String("AWS::IAM::ManagedPolicy"), &map[string]any{
		"PolicyDocument": map[string]any{"Statement": []any{map[string]any{
			"Action": "execute-api:Invoke", "Effect": "Allow",
			"Resource": map[string]any{"Fn::Join": []any{"", assertions.Match_ArrayWith(&[]any{
				assertions.Match_StringLikeRegexp(jsii.String(`/\*/\*/admin/\*$`)),
			})}},
		}}},
	})
}

// The full stack wires the admin routes to their own function with AWS_IAM,
// hands operators the policy, and keeps OPEN_ROOMS off unless asked.
func TestStackWiresTheAdminAPI(t *testing.T) {
	s := def(t)
	s.tpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Route"), map[string]any{
		"RouteKey": "GET /admin/rooms", "AuthorizationType": "AWS_IAM",
	})
	s.tpl.HasOutput(jsii.String("AdminOperatorPolicyArn"), map[string]any{})
	fns := s.resources("AWS::Lambda::Function")
	if len(fns) < len(Functions) {
		t.Fatalf("%d functions, want at least %d", len(fns), len(Functions))
	}
	for id, fn := range fns {
		env, _ := props(fn)["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		if vars == nil { // CDK's own helper functions carry no Waitroom environment
			continue
		}
		if vars["OPEN_ROOMS"] != "false" {
			t.Errorf("%s: OPEN_ROOMS = %v, want false by default", id, vars["OPEN_ROOMS"])
		}
		if _, set := vars["INSTANT_ADMIT"]; set {
			t.Errorf("%s: INSTANT_ADMIT = %v, want the functions' default (true) unless instantAdmit=false", id, vars["INSTANT_ADMIT"])
		}
	}
	queued := synthesize(t, func(p *WaitroomProps) { p.NoInstantAdmit = true })
	for id, fn := range queued.resources("AWS::Lambda::Function") {
		env, _ := props(fn)["Environment"].(map[string]any)
		if vars, _ := env["Variables"].(map[string]any); vars != nil && vars["INSTANT_ADMIT"] != "false" {
			t.Errorf("%s: INSTANT_ADMIT = %v with instantAdmit=false", id, vars["INSTANT_ADMIT"])
		}
	}
	open := synthesize(t, func(p *WaitroomProps) { p.OpenRooms = true })
	open.tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{"OPEN_ROOMS": "true"})},
	})
}
