package awslambda

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
)

// decodeEvent reads a payload 2.0 event. JWT claims that are not strings
// (numbers, booleans, arrays: API Gateway has sent them as such) fail the
// library's map[string]string; they are turned into their JSON text
// instead, so that one odd claim never turns every request into a 400. A
// sub that is not a string stays no identity: it is not a user id.
func decodeEvent(raw []byte) (events.APIGatewayV2HTTPRequest, error) {
	var req events.APIGatewayV2HTTPRequest
	err := json.Unmarshal(raw, &req)
	if err == nil {
		return req, nil
	}
	var loose struct {
		RequestContext struct {
			Authorizer struct {
				JWT struct {
					Claims map[string]json.RawMessage `json:"claims"`
				} `json:"jwt"`
			} `json:"authorizer"`
		} `json:"requestContext"`
	}
	if json.Unmarshal(raw, &loose) != nil || len(loose.RequestContext.Authorizer.JWT.Claims) == 0 {
		return req, err
	}
	claims := map[string]string{}
	for name, v := range loose.RequestContext.Authorizer.JWT.Claims {
		var s string
		if json.Unmarshal(v, &s) == nil {
			claims[name] = s
		} else if name != "sub" {
			claims[name] = string(v)
		}
	}
	var generic map[string]any
	if json.Unmarshal(raw, &generic) != nil {
		return req, err
	}
	rc, _ := generic["requestContext"].(map[string]any)
	auth, _ := rc["authorizer"].(map[string]any)
	jwt, _ := auth["jwt"].(map[string]any)
	if jwt == nil {
		return req, err
	}
	jwt["claims"] = claims
	fixed, merr := json.Marshal(generic)
	if merr != nil {
		return req, fmt.Errorf("re-encoding the event: %w", merr)
	}
	req = events.APIGatewayV2HTTPRequest{}
	return req, json.Unmarshal(fixed, &req)
}
