package httpapi

import (
	"errors"
	"time"

	"github.com/waitroom/waitroom"
)

// The proof of work of new visitors (CHALLENGE=pow; docs/API.md, "POST
// /queue/enter"; docs/security.md): Identify asks for it in its new-visitor
// step (solvedChallenge), and only there, so accounts, header users and
// ticket holders never solve one. A solution is checked there without any
// store call; that it was not spent before is checked by the enter's own
// script (redisstore). Here: the refusal, with a fresh challenge.

// challengeError is challenge_required with the fresh challenge its answer
// carries (errorResponse renders it).
type challengeError struct {
	err       *waitroom.Error
	challenge waitroom.Challenge
}

func (e *challengeError) Error() string { return e.err.Error() }
func (e *challengeError) Unwrap() error { return e.err }

// challengeRequired is the answer to an enter into room that must solve a
// challenge first: a fresh one, valid for ChallengeTTL. cause says why the
// solution it sent was refused (nil: it sent none).
func (a *API) challengeRequired(room string, cause error) error {
	c, err := a.Config.Visitor.Tickets.NewChallenge(room, a.challengeBits(), a.now().Add(waitroom.ChallengeTTL))
	if err != nil { // no randomness: nothing else would work either
		return waitroom.Unavailable(err)
	}
	var e *waitroom.Error
	if !errors.As(cause, &e) { // else the store's refusal of a spent solution, as it said it
		e = waitroom.ChallengeRequired(cause)
	}
	return &challengeError{err: e, challenge: c}
}

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
