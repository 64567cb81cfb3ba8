package httpapi

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
)

// Handler is one route's handler.
type Handler func(context.Context, events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse
