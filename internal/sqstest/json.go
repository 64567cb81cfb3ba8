package sqstest

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

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
		rec := serve(r.Context(), goaws, op, form)
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

// queues orders goaws's requests: its handlers look queues up in a map that
// CreateQueue writes, without its own lock (a data race under -race when one
// test creates a queue while another sends). Creating takes the write side;
// every other operation the read side, which they share as before.
var queues sync.RWMutex

// serve runs one goaws request under queues. A long poll is done here, as
// short receives 100 ms apart with the lock released between them (goaws's
// own long poll would hold the read side, and a create behind it, for the
// whole wait).
func serve(ctx context.Context, goaws http.Handler, op string, form url.Values) *httptest.ResponseRecorder {
	wait, _ := strconv.Atoi(form.Get("WaitTimeSeconds"))
	if op == "ReceiveMessage" {
		form.Set("WaitTimeSeconds", "0")
	}
	deadline := time.Now().Add(time.Duration(wait) * time.Second)
	for {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if op == "CreateQueue" {
			queues.Lock()
		} else {
			queues.RLock()
		}
		goaws.ServeHTTP(rec, req)
		if op == "CreateQueue" {
			queues.Unlock()
		} else {
			queues.RUnlock()
		}
		if op != "ReceiveMessage" || rec.Code != http.StatusOK || bytes.Contains(rec.Body.Bytes(), []byte("<Message>")) || !time.Now().Before(deadline) {
			return rec
		}
		select {
		case <-ctx.Done():
			return rec
		case <-time.After(100 * time.Millisecond):
		}
	}
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
