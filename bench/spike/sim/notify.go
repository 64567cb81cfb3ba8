package sim

// NotifyResults is what bench/notify writes (make bench-notify): how soon
// a visitor's client learns of its admission, by how the client listens.
type NotifyResults struct {
	Machine  Machine        `json:"machine"`
	Started  string         `json:"started"`
	Finished string         `json:"finished"`
	Scenario NotifyScenario `json:"scenario"`
	Results  []NotifyResult `json:"results"`
}

// NotifyScenario is the spike bench/notify plays against the local runner.
type NotifyScenario struct {
	Visitors             int     `json:"visitors"` // entering at once
	AdmitRatePerSec      float64 `json:"admitRatePerSec"`
	AdmitIntervalMs      int64   `json:"admitIntervalMs"`
	WarmupSeconds        float64 `json:"warmupSeconds"` // admissions this early are left out
	EntryTokenTTLSeconds int64   `json:"entryTokenTtlSeconds"`
}

// NotifyResult is one way of listening: the delay from admission (the
// store's clock) to the client's READY, over the visitors counted.
type NotifyResult struct {
	Mode     string  `json:"mode"` // one of the Notify* modes
	Visitors int     `json:"visitors"`
	P50Ms    float64 `json:"p50Ms"`
	P95Ms    float64 `json:"p95Ms"`
	MaxMs    float64 `json:"maxMs"`
	Requests int64   `json:"requests"` // HTTP requests all the clients sent, streams included
}

// The ways a client listens in bench/notify.
const (
	NotifySSE          = "sse"                    // GET /queue/events, served by the admitting process
	NotifySSEElsewhere = "sse-admitted-elsewhere" // the same, admitted by another process on the store
	NotifyPoll         = "poll"                   // GET /queue/position as pollAfterMs says
)

// notifySection is the report's "How soon the visitor knows".
type notifySection struct {
	*NotifyResults
	When string
	Rows []notifyRow
}

type notifyRow struct {
	NotifyResult
	What               string
	RequestsPerVisitor float64
}

var notifyWhat = map[string]string{
	NotifySSE:          "live stream (`GET /queue/events`), admitted by the process serving it",
	NotifySSEElsewhere: "live stream, admitted by another process on the same store",
	NotifyPoll:         "polling as `pollAfterMs` says",
}

func buildNotify(n *NotifyResults) *notifySection {
	s := &notifySection{NotifyResults: n, When: n.Started + " → " + n.Finished}
	for _, r := range n.Results {
		what, ok := notifyWhat[r.Mode]
		if !ok {
			what = r.Mode
		}
		s.Rows = append(s.Rows, notifyRow{NotifyResult: r, What: what,
			RequestsPerVisitor: float64(r.Requests) / float64(max(1, n.Scenario.Visitors))})
	}
	return s
}
