package redisstore

import (
	"time"

	"github.com/waitroom/waitroom"
)

// challenge names the single-use record of a solved challenge, in the
// room's slot: a challenge names its room and is solved for it alone.
func (r roomKeys) challenge(nonce string) string { return r.key("pow:" + nonce) }

// challengeOf is the solved challenge of caller c for an enter's
// (or the broker's accept's) script call: how long to keep its nonce's
// record, in whole milliseconds rounded up, and the record's key
// (challenge.lua). A caller without one (every caller with CHALLENGE=off,
// every caller that is no new visitor) has 0 and no key: its call carries
// no key for it, one string less for Redis to make into Lua's KEYS.
func challengeOf(c waitroom.Caller, k roomKeys) (ms int64, key []string) {
	if c.Challenge.Nonce == "" {
		return 0, nil
	}
	return max(1, int64((c.Challenge.TTL+time.Millisecond-1)/time.Millisecond)), []string{k.challenge(c.Challenge.Nonce)}
}

// spentError is the answer of a script that found the caller's challenge
// spent ({'SPENT'}): challenge_required, and nothing was made.
func spentError() error {
	return waitroom.ChallengeRequired(waitroom.ErrChallengeSpent)
}
