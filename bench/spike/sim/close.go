package sim

// CloseResults is what bench/close writes (make bench-close): an operator
// closes a room while visitors wait; how soon every poll and every stream
// is told CLOSED, how soon the line's keys are gone, and the memory freed.
type CloseResults struct {
	Machine            string  `json:"machine"`
	When               string  `json:"when"`
	Waiting            int     `json:"waiting"`         // visitors in line at the close
	Streams            int     `json:"streams"`         // of them on the live stream
	Pollers            int     `json:"pollers"`         // connections polling at once
	AdmitIntervalMs    int64   `json:"admitIntervalMs"` // ADMIT_INTERVAL_MS
	ReleasePerBatch    int     `json:"releasePerBatch"` // places admit.lua releases a batch
	PollsClosed        int     `json:"pollsClosed"`     // first polls after the close answered CLOSED
	PollsReady         int     `json:"pollsReady"`      // … answered READY: admitted before the close
	PollsAllClosedMs   float64 `json:"pollsAllClosedMs"`
	AdminMs            float64 `json:"adminMs"` // the close's own admin call (PATCH)
	StreamsClosed      int     `json:"streamsClosed"`
	StreamsLastMs      float64 `json:"streamsLastMs"`
	StreamsP50Ms       float64 `json:"streamsP50Ms"`
	KeysGoneMs         float64 `json:"keysGoneMs"` // line, sequence, marks, budget gone
	UsedMemoryBefore   int64   `json:"usedMemoryBefore"`
	UsedMemoryAfter    int64   `json:"usedMemoryAfter"`
	ReleasedPerVisitor float64 `json:"releasedPerVisitor"` // bytes
}

// closeSection is the report's "Closing a room mid-sale".
type closeSection struct {
	*CloseResults
	Batches       int     // ceil(waiting / releasePerBatch): the stated bound, in batches
	BoundMs       int64   // Batches × the interval
	ReleasedBytes int64   // used_memory before − after
	StreamsInOne  bool    // every stream within one admission interval (plus the reading's own time)
	ReleasedMB    float64 // ReleasedBytes in MB
}

func buildClose(r *CloseResults) *closeSection {
	s := &closeSection{CloseResults: r}
	if r.ReleasePerBatch > 0 {
		s.Batches = (r.Waiting + r.ReleasePerBatch - 1) / r.ReleasePerBatch
	}
	s.BoundMs = int64(s.Batches) * r.AdmitIntervalMs
	s.ReleasedBytes = r.UsedMemoryBefore - r.UsedMemoryAfter
	s.ReleasedMB = float64(s.ReleasedBytes) / 1e6
	s.StreamsInOne = r.StreamsLastMs <= float64(r.AdmitIntervalMs)
	return s
}
