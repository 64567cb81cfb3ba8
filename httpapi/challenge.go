package httpapi

import (
	"time"

	"github.com/waitroom/waitroom"
)

// The proof of work of new visitors (CHALLENGE=pow; docs/API.md, "POST
// /queue/enter"; docs/security.md): Identify asks for it in its new-visitor
// step (solvedChallenge, identity.go), and only there, so accounts, header
// users and ticket holders never solve one. A solution is checked there
// without any store call; that it was not spent before is checked by the
// enter's own script (redisstore). The refusal, challenge_required, carries
// a fresh challenge (challengeRequired); here are its error and its body.

// challengeError is challenge_required with the fresh challenge its answer
// carries (errorResponse renders it).
type challengeError struct {
	err       *waitroom.Error
	challenge waitroom.Challenge
}

func (e *challengeError) Error() string { return e.err.Error() }
func (e *challengeError) Unwrap() error { return e.err }

// challengeBits is CHALLENGE_BITS, or its default for a Config built by hand.
func (a *API) challengeBits() int {
	if a.Config.Visitor.ChallengeBits > 0 {
		return a.Config.Visitor.ChallengeBits
	}
	return waitroom.DefaultChallengeBits
}

// challengeBody is the challenge in a challenge_required answer.
type challengeBody struct {
	Value     string `json:"value"`
	Algorithm string `json:"algorithm"`
	Bits      int    `json:"bits"`
	ExpiresAt string `json:"expiresAt"`
}

func newChallengeBody(c waitroom.Challenge) *challengeBody {
	return &challengeBody{Value: c.Value, Algorithm: waitroom.ChallengeAlgorithm, Bits: c.Bits, ExpiresAt: c.ExpiresAt.UTC().Format(time.RFC3339)}
}
