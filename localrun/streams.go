package localrun

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/waitroom/waitroom"
)

// streamRetryAfter is the Retry-After of a refused stream. A slot frees
// when some stream ends, which nothing predicts; the page does not wait for
// it anyway: a stream refused before its first event makes it poll
// position instead (web/static/waitroom/app.js, listen).
const streamRetryAfter = 10 * time.Second

// replaceWait is how long a new stream waits for its owner's previous one
// to end. That takes microseconds, unless the old one is in its first
// store read or blocked writing to a client that stopped reading
// (streamWriteTimeout); then the new one goes on with the old still
// counted, and a cap may refuse it.
const replaceWait = 2 * time.Second

// streamCaps counts the open event streams (issue 19): at most one per
// owner (a user in a room), perSource per source address, max in the
// process. A slot is held from before the stream's first store call until
// its handler returns, so the counts are the handlers alive, never fewer.
// One mutex guards every count, so that a burst of concurrent connects can
// never hold more than a cap.
type streamCaps struct {
	perSource, max int // perSource 0: no cap per address

	mu      sync.Mutex
	total   int
	sources map[string]int
	owners  map[streamOwner]*streamSlot
}

// streamOwner is whose standing a stream follows: the same user in another
// room is another owner (docs/design.md, "Live updates").
type streamOwner struct{ room, user string }

// streamSlot is one open stream's place in the counts.
type streamSlot struct {
	owner  streamOwner
	source string
	// replaced is closed when a newer stream of the owner asks this one to
	// end; released when its slot is given back.
	replaced, released chan struct{}
	asked, held        bool // guarded by streamCaps.mu
}

func newStreamCaps(c waitroom.StreamCaps) *streamCaps {
	return &streamCaps{perSource: c.PerIP, max: c.Max, sources: map[string]int{}, owners: map[streamOwner]*streamSlot{}}
}

// acquire takes a slot for user's stream in room from the address ip, or
// refuses with rate_limited, changing nothing. The owner's previous stream
// is asked to end first, and its slot awaited (at most replaceWait), so
// that a reconnect at a cap still gets its stream. It fails with ctx's
// error when the client goes while waiting.
func (c *streamCaps) acquire(ctx context.Context, room, user, ip string) (*streamSlot, error) {
	owner, source := streamOwner{room, user}, sourceOf(ip)
	waited := false
	for {
		c.mu.Lock()
		old := c.owners[owner]
		if old == nil || waited {
			s, err := c.takeLocked(owner, source)
			c.mu.Unlock()
			return s, err
		}
		if !old.asked {
			old.asked = true
			close(old.replaced)
		}
		c.mu.Unlock()
		t := time.NewTimer(replaceWait)
		select {
		case <-old.released: // look again: another stream of the owner may have come meanwhile
		case <-t.C:
			waited = true
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		t.Stop()
	}
}

// takeLocked counts a new stream of owner from source if the caps allow it.
func (c *streamCaps) takeLocked(owner streamOwner, source string) (*streamSlot, error) {
	switch {
	case c.max > 0 && c.total >= c.max:
		return nil, streamsRefused("the waiting room holds as many live streams as it can")
	case c.perSource > 0 && c.sources[source] >= c.perSource:
		return nil, streamsRefused("too many live streams from your network")
	}
	s := &streamSlot{owner: owner, source: source, replaced: make(chan struct{}), released: make(chan struct{}), held: true}
	c.total++
	c.sources[source]++
	c.owners[owner] = s // an old stream still ending no longer owns
	return s, nil
}

// release gives s back, once: its handler returns.
func (c *streamCaps) release(s *streamSlot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !s.held {
		return
	}
	s.held = false
	close(s.released)
	c.total--
	if c.sources[s.source]--; c.sources[s.source] == 0 {
		delete(c.sources, s.source)
	}
	if c.owners[s.owner] == s {
		delete(c.owners, s.owner)
	}
}

func streamsRefused(why string) *waitroom.Error {
	return &waitroom.Error{Code: waitroom.ERateLimited, RetryAfter: streamRetryAfter,
		Message: fmt.Sprintf("%s; follow your place with GET /queue/position, or retry the stream in %d s", why, int(streamRetryAfter.Seconds()))}
}

// sourceOf is the address a stream is counted under: the abuse limiter's
// source address (an IPv6 address by its /64, the smallest block an ISP
// hands one customer: a host picks any address in it, so per address it
// could open 2^64 times the cap); anything unparsable counts as itself.
func sourceOf(ip string) string {
	if a := waitroom.SourceAddress(ip); a != "" {
		return a
	}
	return ip
}
