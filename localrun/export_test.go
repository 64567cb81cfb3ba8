package localrun

// OpenStreams is what r counts of its open event streams: in all, by
// source address, and how many owners (a user in a room) have one.
func OpenStreams(r *Runner) (total int, bySource map[string]int, owners int) {
	return r.streams.counts()
}
