package sim

// IntakeResults is what bench/intake writes (make bench-intake): enter's
// acceptance, INTAKE=direct against INTAKE=broker, and the consumer's drain
// of a spike of accepted entries.
type IntakeResults struct {
	Machine    string             `json:"machine"`
	Acceptance []IntakeAcceptance `json:"acceptance"`
	Drain      []IntakeDrain      `json:"drain"`
}

// IntakeAcceptance is one intake mode under load.
type IntakeAcceptance struct {
	Intake    string  `json:"intake"`
	Clients   int     `json:"clients"`
	Requests  int     `json:"requests"`
	Failed    int64   `json:"failed"`
	PerSecond float64 `json:"perSecond"`
	P50Ms     float64 `json:"p50Ms"`
	P95Ms     float64 `json:"p95Ms"`
	P99Ms     float64 `json:"p99Ms"`
	Status    int     `json:"status"`
}

// IntakeDrain is how long applying the accepted entries took.
type IntakeDrain struct {
	Path      string  `json:"path"`
	Entries   int     `json:"entries"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"perSecond"`
}

// intakeSection is the report's "Intake: direct versus broker"; the ratios
// are broker ÷ direct, present when both modes were measured.
type intakeSection struct {
	*IntakeResults
	Direct, Broker            *IntakeAcceptance
	Rate, P50, P99            float64
	BrokerFaster, BothMeasure bool
}

func buildIntake(r *IntakeResults) *intakeSection {
	s := &intakeSection{IntakeResults: r}
	for i := range r.Acceptance {
		switch a := &r.Acceptance[i]; a.Intake {
		case "direct":
			s.Direct = a
		case "broker":
			s.Broker = a
		}
	}
	if s.Direct != nil && s.Broker != nil && s.Direct.PerSecond > 0 && s.Direct.P50Ms > 0 && s.Direct.P99Ms > 0 {
		s.BothMeasure = true
		s.Rate = s.Broker.PerSecond / s.Direct.PerSecond
		s.P50 = s.Broker.P50Ms / s.Direct.P50Ms
		s.P99 = s.Broker.P99Ms / s.Direct.P99Ms
		s.BrokerFaster = s.Rate > 1
	}
	return s
}
