package cost

import (
	"bytes"
	"encoding/json"
	"regexp"
	"sort"
	"strings"

	"github.com/waitroom/waitroom/metrics"
)

// SampleRoom is the room name the log lines are rendered with.
const SampleRoom = "spring-drop"

// EventOverheadBytes is what CloudWatch Logs counts per log event on top of
// its message (the PutLogEvents size rule); the model bills it as ingested.
const EventOverheadBytes = 26

// emfLine renders one record exactly as the functions write it.
func emfLine(room string, values ...metrics.Value) string {
	var buf bytes.Buffer
	metrics.NewRecorder(&buf).Record(room, values...)
	return stableTime(strings.TrimSuffix(buf.String(), "\n"))
}

var slogTimeRE = regexp.MustCompile(`"time":"[^"]*"`)

// stableTime writes a line's slog time at its longest (nanoseconds, which
// slog trims of trailing zeros), so that the bytes a line is billed for do
// not change with the moment the model runs.
func stableTime(line string) string {
	return slogTimeRE.ReplaceAllString(line, `"time":"2026-11-30T12:00:00.123456789Z"`)
}

// EMF lines of the requests and of admission, rendered by metrics.Recorder.
func enterEMF() string { return emfLine(SampleRoom, metrics.Of(metrics.Entered, metrics.Count, 1)) }

func orderEMF() string {
	return emfLine(SampleRoom, metrics.Of(metrics.OrdersPassed, metrics.Count, 1), metrics.Of(metrics.TokensConsumed, metrics.Count, 1))
}

func heartbeatEMF(batches int) string {
	return emfLine("", metrics.Of(metrics.AdmitBatches, metrics.Count, float64(batches)))
}

// admitSecondEMF is one second of admission in one room at rate users/s:
// the room's record, its wait samples split as AdmitMetrics splits them
// (at most 100 a record).
func admitSecondEMF(rate int, waitSeconds float64) []string {
	const maxSamples = 100
	waits := make([]float64, rate)
	for i := range waits {
		waits[i] = waitSeconds
	}
	var lines []string
	for len(waits) > maxSamples {
		lines = append(lines, emfLine(SampleRoom, metrics.Value{Name: metrics.WaitSeconds, Unit: metrics.Seconds, Values: waits[:maxSamples]}))
		waits = waits[maxSamples:]
	}
	return append(lines, emfLine(SampleRoom,
		metrics.Of(metrics.Admitted, metrics.Count, float64(rate)),
		metrics.Of(metrics.QueueDepth, metrics.Count, 30000),
		metrics.Of(metrics.ActiveTokens, metrics.Count, float64(rate)*300),
		metrics.Of(metrics.TokensExpired, metrics.Count, 0),
		metrics.Value{Name: metrics.WaitSeconds, Unit: metrics.Seconds, Values: waits},
	))
}

// ingested is what CloudWatch Logs bills for lines: their bytes plus the
// per-event overhead.
func ingested(lines ...string) float64 {
	n := 0
	for _, l := range lines {
		n += len(l) + EventOverheadBytes
	}
	return float64(n)
}

// Representative platform lines of one invocation (a UUID request id, a
// few-millisecond report), in each log format. Lambda writes them unless
// the system log level is WARN.
const sampleRequestID = "6f1b3c2a-8d4e-4f6a-9b7c-2d1e0f3a4b5c"

var platformLines = map[string][]string{
	"Text": {
		"START RequestId: " + sampleRequestID + " Version: $LATEST",
		"END RequestId: " + sampleRequestID,
		"REPORT RequestId: " + sampleRequestID + "\tDuration: 1.52 ms\tBilled Duration: 2 ms\tMemory Size: 256 MB\tMax Memory Used: 24 MB\t",
	},
	"JSON": {
		`{"time":"2026-11-30T12:00:00.000Z","type":"platform.start","record":{"requestId":"` + sampleRequestID + `","version":"$LATEST"}}`,
		`{"time":"2026-11-30T12:00:00.002Z","type":"platform.report","record":{"requestId":"` + sampleRequestID + `","metrics":{"durationMs":1.52,"billedDurationMs":2,"memorySizeMB":256,"maxMemoryUsedMB":24},"status":"success"}}`,
	},
}

// platformBytes is what one invocation's platform lines ingest.
func platformBytes(f Function) float64 {
	if !f.PlatformLines() {
		return 0
	}
	return ingested(platformLines[f.LogFormat]...)
}

// Sample values of the access-log variables ($context.*): a browser's
// request through the JWT authorizer.
var accessLogSamples = map[string]string{
	"requestId":                       "Yx3kLhD8oAMEbKw=",
	"identity.sourceIp":               "203.0.113.54",
	"requestTime":                     "30/Nov/2026:12:00:00 +0000",
	"routeKey":                        RoutePosition,
	"status":                          "200",
	"responseLength":                  "142",
	"responseLatency":                 "9",
	"integrationStatus":               "200",
	"integrationLatency":              "7",
	"identity.userAgent":              "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	"integrationErrorMessage":         "-",
	"authorizer.error":                "-",
	"error.message":                   "-",
	"httpMethod":                      "GET",
	"protocol":                        "HTTP/1.1",
	"requestTimeEpoch":                "1796040000000",
	"integration.integrationStatus":   "200",
	"authorizer.claims.sub":           "user-4f6a9b7c",
	"domainName":                      "abc123.execute-api.us-east-1.amazonaws.com",
	"path":                            "/queue/position",
	"integration.error":               "-",
	"authorizer.integrationLatency":   "-",
	"identity.caller":                 "-",
	"integrationErrorMessage.message": "-",
}

var contextVarRE = regexp.MustCompile(`\$context\.[A-Za-z.]+`)

// accessLogBytes is one access-log line rendered from the stage's format;
// a variable without a sample renders as "-".
func accessLogBytes(format string) float64 {
	if format == "" {
		return 0
	}
	line := contextVarRE.ReplaceAllStringFunc(format, func(v string) string {
		if s, ok := accessLogSamples[strings.TrimPrefix(v, "$context.")]; ok {
			return s
		}
		return "-"
	})
	return ingested(line)
}

// emfMetrics lists the metrics (name and dimension values) the lines
// declare, as CloudWatch counts custom metrics.
func emfMetrics(lines ...string) []string {
	set := map[string]bool{}
	for _, l := range lines {
		var rec map[string]any
		if json.Unmarshal([]byte(l), &rec) != nil {
			continue
		}
		aws, _ := rec["_aws"].(map[string]any)
		for _, d := range list(aws["CloudWatchMetrics"]) {
			dm, _ := d.(map[string]any)
			for _, dims := range list(dm["Dimensions"]) {
				key := ""
				for _, dim := range list(dims) {
					key += "," + str(dim, "") + "=" + str(rec[str(dim, "")], "")
				}
				for _, m := range list(dm["Metrics"]) {
					mm, _ := m.(map[string]any)
					set[str(mm["Name"], "")+key] = true
				}
			}
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
