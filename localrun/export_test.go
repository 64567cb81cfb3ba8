package localrun

import "testing"

// OpenStreams is what r counts of its open event streams: in all, by
// source address, and how many owners (a user in a room) have one.
func OpenStreams(r *Runner) (total int, bySource map[string]int, owners int) {
	return r.streams.counts()
}

// WaitNoStreams waits until r counts no open stream (5 s at most).
func WaitNoStreams(t *testing.T, r *Runner, after string) {
	t.Helper()
	waitNoStreams(t, r.streams, after)
}
