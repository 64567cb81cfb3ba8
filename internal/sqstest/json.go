package sqstest

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"

	"github.com/Admiral-Piett/goaws/app"
)

// jsonToQuery lets the current SDK talk to goaws v0.4.5: the SDK speaks
// only SQS's AWS JSON 1.0 protocol (service/sqs from v1.28 on; the last
// query-protocol release no longer builds against the current SDK core),
// goaws only the query protocol. It translates the operations Waitroom uses,
// request and answer, field for field; queues, messages, groups, visibility
// and deduplication stay goaws's own.
func jsonToQuery(goaws http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS.")
		var in map[string]any
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"__type": "com.amazonaws.sqs#InvalidRequest", "message": err.Error()})
			return
		}
		form := url.Values{"Action": {op}, "Version": {"2012-11-05"}}
		for k, v := range in {
			flatten(form, op, k, v)
		}
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		goaws.ServeHTTP(rec, req)
		body := rec.Body.Bytes()
		if rec.Code != http.StatusOK {
			var e app.ErrorResponse
			_ = xml.Unmarshal(body, &e)
			writeJSON(w, rec.Code, map[string]any{"__type": "com.amazonaws.sqs#" + e.Result.Code, "message": e.Result.Message})
			return
		}
		out, err := answer(op, body)
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]any{"__type": "com.amazonaws.sqs#InternalError", "message": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, out)
	})
}

// flatten writes one JSON field as query parameters: lists of entries and
// attribute maps are numbered from 1, as the query protocol numbers them.
func flatten(form url.Values, op, key string, v any) {
	switch v := v.(type) {
	case []any:
		for i, item := range v {
			fields, _ := item.(map[string]any)
			for k, fv := range fields {
				form.Set(fmt.Sprintf("%sRequestEntry.%d.%s", op, i+1, k), fmt.Sprint(fv))
			}
		}
	case map[string]any:
		i := 0
		for k, av := range v {
			i++
			form.Set(fmt.Sprintf("Attribute.%d.Name", i), k)
			form.Set(fmt.Sprintf("Attribute.%d.Value", i), fmt.Sprint(av))
		}
	case float64:
		form.Set(key, strconv.FormatInt(int64(v), 10))
	default:
		form.Set(key, fmt.Sprint(v))
	}
}

// answer turns goaws's XML answer to op into the SDK's JSON.
func answer(op string, body []byte) (any, error) {
	switch op {
	case "CreateQueue":
		var r app.CreateQueueResponse
		err := xml.Unmarshal(body, &r)
		return map[string]any{"QueueUrl": r.Result.QueueUrl}, err
	case "SendMessage":
		var r app.SendMessageResponse
		err := xml.Unmarshal(body, &r)
		out := map[string]any{"MessageId": r.Result.MessageId, "MD5OfMessageBody": r.Result.MD5OfMessageBody}
		if r.Result.SequenceNumber != "" {
			out["SequenceNumber"] = r.Result.SequenceNumber
		}
		return out, err
	case "ReceiveMessage":
		var r app.ReceiveMessageResponse
		err := xml.Unmarshal(body, &r)
		msgs := []any{}
		for _, m := range r.Result.Message {
			msgs = append(msgs, map[string]any{"MessageId": m.MessageId, "ReceiptHandle": m.ReceiptHandle, "MD5OfBody": m.MD5OfBody, "Body": string(m.Body)})
		}
		return map[string]any{"Messages": msgs}, err
	case "DeleteMessageBatch":
		var r app.DeleteMessageBatchResponse
		err := xml.Unmarshal(body, &r)
		ok, failed := []any{}, []any{}
		for _, e := range r.Result.Entry {
			ok = append(ok, map[string]any{"Id": e.Id})
		}
		for _, e := range r.Result.Error {
			failed = append(failed, map[string]any{"Id": e.Id, "Code": e.Code, "Message": e.Message, "SenderFault": e.SenderFault})
		}
		return map[string]any{"Successful": ok, "Failed": failed}, err
	}
	return nil, fmt.Errorf("sqstest: %s is not translated", op)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
