package sim

// FailoverResults is what `make bench-failover` writes
// (docs/bench/failover-results.json): each scenario of bench/failover,
// and what DURABLE_WRITES=wait costs the gate.
type FailoverResults struct {
	Machine   Machine            `json:"machine"`
	Started   string             `json:"started"`
	Seconds   float64            `json:"seconds"`
	Scenarios []FailoverScenario `json:"scenarios"`
	WaitCost  FailoverWaitCost   `json:"waitCost"`
	// RecordCost is what the order record adds to an order (issue 33).
	RecordCost FailoverRecordCost `json:"recordCost"`
}

// FailoverRecordCost is the order record's claim (one conditional PutItem)
// per order, timed against a local DynamoDB-compatible server: what the
// record adds to the order path.
type FailoverRecordCost struct {
	Server string  `json:"server"`
	Calls  int     `json:"calls"`
	P50    float64 `json:"p50Ms"`
	P95    float64 `json:"p95Ms"`
	P99    float64 `json:"p99Ms"`
}

// FailoverScenario is one failover under traffic and what it cost.
type FailoverScenario struct {
	Key           string  `json:"key"`
	Name          string  `json:"name"`
	Topology      string  `json:"topology"` // "primary and replica" | "cluster"
	Failover      string  `json:"failover"` // how the replica was promoted
	DurableWrites string  `json:"durableWrites"`
	OrderDedup    bool    `json:"orderDedup"`  // the order API deduplicates by X-Waitroom-Token-Id
	OrderRecord   bool    `json:"orderRecord"` // the gate's durable order record (DynamoDB; dynalite here) is on
	LagMs         float64 `json:"lagMs"`       // how long the replica received nothing before the failover
	Frozen        bool    `json:"frozen"`      // the old primary was frozen (SIGSTOP) at the failover
	Visitors      int     `json:"visitors"`
	RatePerSec    float64 `json:"ratePerSec"`

	EntersAcked         int `json:"entersAcked"`
	EntersLost          int `json:"entersLost"`          // acknowledged, then before an order told NOT_IN_QUEUE, sent to the back (a later number), or never admitted
	AccountsAcked       int `json:"accountsAcked"`       // of EntersAcked, accounts' (X-User-Id, X-Queue-Place)
	AccountsLost        int `json:"accountsLost"`        // of EntersLost, accounts'
	AnonymousAcked      int `json:"anonymousAcked"`      // of EntersAcked, anonymous visitors' (X-Queue-Ticket)
	AnonymousLost       int `json:"anonymousLost"`       // of EntersLost, anonymous visitors'
	PlacesRestored      int `json:"placesRestored"`      // accounts' records the store lost while their number waited, seen again at that number (written back from their holder's place)
	DuplicateSeqs       int `json:"duplicateSeqs"`       // numbers two accounts' records held (sampled)
	FIFOInversions      int `json:"fifoInversions"`      // pairs admitted against the order their enters were acknowledged in
	FIFOPairs           int `json:"fifoPairs"`           // ordered pairs compared
	DoubleAdmissions    int `json:"doubleAdmissions"`    // visitors shown two entry tokens
	AdmissionsTakenBack int `json:"admissionsTakenBack"` // READY, then WAITING or NOT_IN_QUEUE without an order
	Orders              int `json:"orders"`              // orders the order API made
	TokensOrdered       int `json:"tokensOrdered"`
	Unordered           int `json:"unordered"` // visitors shown an entry token who never ordered with it by the traffic's end
	MaxOrdersPerToken   int `json:"maxOrdersPerToken"`
	TokensOrderedTwice  int `json:"tokensOrderedTwice"`
	UsersOrderedTwice   int `json:"usersOrderedTwice"` // a user with two tokens (double admission) ordering with both
	Replays             int `json:"replays"`           // second orders of a token the order API answered from the first
	ReuseAttempts       int `json:"reuseAttempts"`     // ordered tokens sent again after the failover
	ReuseRefused        int `json:"reuseRefused"`      // of which the gate refused (403)

	RecoverySeconds float64          `json:"recoverySeconds"` // failover start → last answer that was not normal
	RejoinSeconds   float64          `json:"rejoinSeconds"`   // failover start → a replica attached again
	Answers         []FailoverAnswer `json:"answers"`
	WrongAnswers    int              `json:"wrongAnswers"` // neither normal nor 503 with Retry-After
}

// FailoverAnswer counts one kind of answer on one route in one phase
// ("before", "lag": the replica receiving nothing, "after": from the failover on).
type FailoverAnswer struct {
	Phase  string `json:"phase"`
	Route  string `json:"route"`
	Answer string `json:"answer"` // the status, "503 Retry-After", or "error" (no HTTP answer)
	Count  int    `json:"count"`
}

// FailoverWaitCost is the gate's store calls (BeginOrder then CommitOrder
// of one order) on a primary with a replica, DURABLE_WRITES off and wait.
type FailoverWaitCost struct {
	Calls          int     `json:"calls"`
	OffP50         float64 `json:"offP50Ms"`
	OffP95         float64 `json:"offP95Ms"`
	OffP99         float64 `json:"offP99Ms"`
	WaitP50        float64 `json:"waitP50Ms"`
	WaitP95        float64 `json:"waitP95Ms"`
	WaitP99        float64 `json:"waitP99Ms"`
	RoundTripsOff  int     `json:"roundTripsOff"` // per order (check + commit)
	RoundTripsWait int     `json:"roundTripsWait"`
}

// failoverSection is the report's "A failover mid-sale".
type failoverSection struct {
	*FailoverResults
	Rows []failoverRow
	// WaitExtraP50 and WaitExtraP95 are what wait adds to an order's two
	// store calls, in ms.
	WaitExtraP50, WaitExtraP95 float64
}

// failoverRow is a scenario with what its clients saw, in words.
type failoverRow struct {
	FailoverScenario
	Lag, After string // the answers that were not plain, in the lag and after the failover
}

func buildFailover(r *FailoverResults) *failoverSection {
	s := &failoverSection{FailoverResults: r, WaitExtraP50: r.WaitCost.WaitP50 - r.WaitCost.OffP50, WaitExtraP95: r.WaitCost.WaitP95 - r.WaitCost.OffP95}
	for _, sc := range r.Scenarios {
		s.Rows = append(s.Rows, failoverRow{FailoverScenario: sc, Lag: notPlain(sc.Answers, "lag"), After: notPlain(sc.Answers, "after")})
	}
	return s
}

// notPlain lists a phase's answers that were not a plain, prompt answer
// ("503 Retry-After", "200 slow", "error", another 5xx), by route, with
// every answer of the phase counted first.
func notPlain(answers []FailoverAnswer, phase string) string {
	total, out := 0, ""
	for _, a := range answers {
		if a.Phase != phase {
			continue
		}
		total += a.Count
		if len(a.Answer) == 3 && a.Answer[0] < '5' {
			continue
		}
		if out != "" {
			out += "; "
		}
		out += a.Route + " " + a.Answer + " ×" + itoa(a.Count)
	}
	if total == 0 {
		return "–"
	}
	if out == "" {
		out = "all plain"
	}
	return itoa(total) + " answers: " + out
}

func itoa(n int) string {
	s, neg := "", n < 0
	if neg {
		n = -n
	}
	for i := 0; n > 0 || i == 0; i++ {
		if i > 0 && i%3 == 0 {
			s = "," + s
		}
		s = string(rune('0'+n%10)) + s
		n /= 10
	}
	if neg {
		s = "-" + s
	}
	return s
}
