package httpapi

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/waitroom/waitroom"
)

// statusOf maps every domain error code to its HTTP status: the one table.
var statusOf = map[waitroom.Code]int{
	waitroom.EUnauthenticated:  http.StatusUnauthorized,
	waitroom.EInvalidTicket:    http.StatusUnauthorized,
	waitroom.EInvalidReceipt:   http.StatusUnauthorized,
	waitroom.EInvalidUser:      http.StatusBadRequest,
	waitroom.EInvalidRoom:      http.StatusBadRequest,
	waitroom.EInvalidRequest:   http.StatusBadRequest,
	waitroom.EInvalidIdemKey:   http.StatusBadRequest,
	waitroom.EInvalidSettings:  http.StatusBadRequest,
	waitroom.ERoomNotFound:     http.StatusNotFound,
	waitroom.ETokenInvalid:     http.StatusForbidden, // logged in, but no right to enter
	waitroom.EWrongRoom:        http.StatusForbidden, // a right to enter another room's sale
	waitroom.EForbidden:        http.StatusForbidden, // not through the front door (ORIGIN_SECRET)
	waitroom.ERoomClosed:       http.StatusForbidden, // sold out: no newcomers
	waitroom.ENotFound:         http.StatusNotFound,
	waitroom.EMethodNotAllowed: http.StatusMethodNotAllowed,
	waitroom.EOrderInProgress:  http.StatusConflict,
	waitroom.EIdemKeyReused:    http.StatusUnprocessableEntity,
	waitroom.ERateLimited:      http.StatusTooManyRequests,
	waitroom.EQueueFull:        http.StatusTooManyRequests,
	waitroom.EPayloadTooLarge:  http.StatusRequestEntityTooLarge,
	waitroom.EInternal:         http.StatusInternalServerError,
	waitroom.EOrderUpstream:    http.StatusBadGateway,
	waitroom.EUnavailable:      http.StatusServiceUnavailable,
	waitroom.EOrderTimeout:     http.StatusGatewayTimeout,

	// An enter that would make a visitor solves the challenge in the body first (CHALLENGE=pow).
	waitroom.EChallengeRequired: http.StatusPreconditionRequired,
}

// errorBody is the one shape of every error answer; challenge_required
// alone adds the challenge to solve.
type errorBody struct {
	Error     waitroom.Code  `json:"error"`
	Message   string         `json:"message"`
	Challenge *challengeBody `json:"challenge,omitempty"`
}

// errorResponse renders err; foreign errors become "internal" without
// leaking their text.
func ErrorResponse(err error) events.APIGatewayV2HTTPResponse {
	var e *waitroom.Error
	if !errors.As(err, &e) {
		e = &waitroom.Error{Code: waitroom.EInternal, Message: "something went wrong on our side; please retry"}
	}
	status, ok := statusOf[e.Code]
	if !ok {
		status = http.StatusInternalServerError
	}
	body := errorBody{Error: e.Code, Message: e.Message}
	if c := (*challengeError)(nil); errors.As(err, &c) {
		body.Challenge = newChallengeBody(c.challenge)
	}
	resp := jsonResponse(status, body)
	if e.RetryAfter > 0 {
		resp.Headers["Retry-After"] = strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds())))
	}
	return resp
}

func jsonResponse(status int, v any) events.APIGatewayV2HTTPResponse {
	body, err := json.Marshal(v)
	if err != nil { // only our own types are marshalled; this is a bug
		status, body = http.StatusInternalServerError, []byte(`{"error":"internal","message":"response encoding failed"}`)
	}
	return events.APIGatewayV2HTTPResponse{
		StatusCode: status,
		Headers:    map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"},
		Body:       string(body),
	}
}
