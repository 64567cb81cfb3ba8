package redisstore

import (
	"context"
	_ "embed"
	"time"

	"github.com/waitroom/waitroom"
)

// challengeLua is challengeSpent, prepended to enter.lua and accept.lua (sources).
//
//go:embed challenge.lua
var challengeLua string

// challenge names the single-use record of a solved challenge, in the
// room's slot: a challenge names its room and is solved for it alone.
func (r roomKeys) challenge(nonce string) string { return r.key("pow:" + nonce) }

// challenged appends the solved challenge of the caller in ctx to an enter's
// (or the broker's accept's) script call: the key of its nonce's record and
// how long to keep it, in whole milliseconds rounded up (challenge.lua). A
// caller without one (every caller with CHALLENGE=off, every caller that is
// no new visitor) passes a key the script never touches and 0.
func challenged(ctx context.Context, k roomKeys, keys []string, args []any) ([]string, []any) {
	c, _ := waitroom.CallerOf(ctx)
	ms := int64(0)
	if c.Challenge.Nonce != "" {
		ms = max(1, int64((c.Challenge.TTL+time.Millisecond-1)/time.Millisecond))
	}
	return append(keys, k.challenge(c.Challenge.Nonce)), append(args, ms)
}

// spentError is the answer of a script that found the caller's challenge
// spent ({'SPENT'}): challenge_required, and nothing was made.
func spentError() error {
	return waitroom.ChallengeRequired(waitroom.ErrChallengeSpent)
}
