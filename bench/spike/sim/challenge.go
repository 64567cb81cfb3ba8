package sim

import "math"

// ChallengeResults is what bench/challenge writes (make bench-challenge):
// what the proof of work (CHALLENGE=pow, issue 19) costs a visitor, the
// server and an attacker.
type ChallengeResults struct {
	Machine     Machine `json:"machine"`
	Started     string  `json:"started"`
	Finished    string  `json:"finished"`
	DefaultBits int     `json:"defaultBits"` // waitroom.DefaultChallengeBits
	TTLSeconds  float64 `json:"ttlSeconds"`  // waitroom.ChallengeTTL

	// Hashes: how many SHA-256 a solve takes, counted by solving fixed
	// challenges (the same counts on every machine).
	Hashes []ChallengeHashes `json:"hashes"`

	// The server's side and Go's hash rate, from testing.Benchmark.
	VerifyNs     float64 `json:"verifyNs"` // VerifySolution of a valid solution
	VerifyBytes  int64   `json:"verifyBytes"`
	VerifyAllocs int64   `json:"verifyAllocs"`
	IssueNs      float64 `json:"issueNs"` // NewChallenge: what a 428 signs
	IssueBytes   int64   `json:"issueBytes"`
	IssueAllocs  int64   `json:"issueAllocs"`
	GoHashNs     float64 `json:"goHashNs"` // one SHA-256 of a solution-sized input, one core

	// The page's side: challenges of DefaultBits solved by the page's
	// Worker (pow.js) in headless chromium, through the real enter.
	Browser        string    `json:"browser"` // its version
	BrowserSolves  int       `json:"browserSolves"`
	BrowserHashes  []int64   `json:"browserHashes"` // each solve's
	BrowserMs      []float64 `json:"browserMs"`     // each solve's, from the Worker's start to its answer
	SlowDeviceSlow float64   `json:"slowDeviceSlowdown"`
}

// ChallengeHashes is the distribution of the hashes a solve takes at one
// difficulty, over Challenges fixed challenges.
type ChallengeHashes struct {
	Bits       int     `json:"bits"`
	Challenges int     `json:"challenges"`
	Mean       float64 `json:"mean"`
	P50        float64 `json:"p50"`
	P95        float64 `json:"p95"`
	P99        float64 `json:"p99"`
	Max        float64 `json:"max"`
}

// challengeSection is the report's "Proof of work".
type challengeSection struct {
	*ChallengeResults
	When          string
	Rows          []challengeRow
	Default       *challengeRow // the row of DefaultBits, if measured
	BrowserPerSec float64       // hashes a second, over every browser solve
	BrowserMeanMs float64
	GoPerSec      float64
	GoOverBrowser float64 // how many times the page's rate one Go core hashes at
	VerifyUs      float64
	IssueUs       float64
	// An attacker's cost at DefaultBits: one core's milliseconds for a
	// visitor, visitors a second per core.
	AttackerMsPerVisitor, AttackerVisitorsPerCoreSec float64
}

type challengeRow struct {
	ChallengeHashes
	Expected float64 // 2^bits
	// Seconds at the browser's measured rate, and on a device
	// SlowDeviceSlow times slower, at the median and the p99.
	BrowserP50S, BrowserP99S, SlowP50S, SlowP99S float64
	GoMeanMs                                     float64 // one Go core, at the mean
}

func buildChallenge(c *ChallengeResults) *challengeSection {
	s := &challengeSection{ChallengeResults: c, When: c.Started + " → " + c.Finished,
		VerifyUs: c.VerifyNs / 1000, IssueUs: c.IssueNs / 1000}
	var hashes, ms float64
	for i := range c.BrowserHashes {
		hashes += float64(c.BrowserHashes[i])
		ms += c.BrowserMs[i]
	}
	if ms > 0 {
		s.BrowserPerSec = hashes / ms * 1000
		s.BrowserMeanMs = ms / float64(len(c.BrowserMs))
	}
	if c.GoHashNs > 0 {
		s.GoPerSec = 1e9 / c.GoHashNs
	}
	if s.BrowserPerSec > 0 {
		s.GoOverBrowser = s.GoPerSec / s.BrowserPerSec
	}
	slow := math.Max(1, c.SlowDeviceSlow)
	for _, h := range c.Hashes {
		r := challengeRow{ChallengeHashes: h, Expected: math.Pow(2, float64(h.Bits)), GoMeanMs: h.Mean * c.GoHashNs / 1e6}
		if s.BrowserPerSec > 0 {
			r.BrowserP50S, r.BrowserP99S = h.P50/s.BrowserPerSec, h.P99/s.BrowserPerSec
			r.SlowP50S, r.SlowP99S = r.BrowserP50S*slow, r.BrowserP99S*slow
		}
		s.Rows = append(s.Rows, r)
	}
	for i := range s.Rows {
		if s.Rows[i].Bits == c.DefaultBits {
			s.Default = &s.Rows[i]
			s.AttackerMsPerVisitor = s.Rows[i].GoMeanMs
			if s.AttackerMsPerVisitor > 0 {
				s.AttackerVisitorsPerCoreSec = 1000 / s.AttackerMsPerVisitor
			}
		}
	}
	return s
}
