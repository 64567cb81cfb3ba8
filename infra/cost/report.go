package cost

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
)

// Summary is the last line of `make cost`.
type Summary struct {
	Configuration      string  `json:"configuration,omitempty"`
	IdleMonthlyUSD     float64 `json:"idleMonthlyUsd"`
	PerMillionUSD      float64 `json:"perMillionVisitorsUsd"`
	RequestsPerVisitor int     `json:"requestsPerVisitor"`
	WaitSeconds        float64 `json:"waitSeconds"`
	IdleRooms          int     `json:"idleRooms"`
	Viewers            string  `json:"viewers"`
}

// Cents rounds to whole cents.
func Cents(usd float64) float64 { return math.Round(usd*100) / 100 }

// Summary is r's figures rounded to cents.
func (r Report) Summary() Summary {
	return Summary{r.Configuration, Cents(r.IdleMonthlyUSD), Cents(r.PerMillionUSD), r.RequestsPerVisitor, r.WaitSeconds, r.IdleRooms, r.Viewers}
}

// Print writes the line items, the notes and, last, the summary as one JSON
// object; about says what r.Configuration is (its context, say).
func (r Report) Print(w io.Writer, p Prices, m Measured, about string) error {
	fmt.Fprintf(w, "Waitroom cost model: configuration %s, %s list prices taken %s (docs/cost.md)\n", r.Configuration, p.Region, p.Taken)
	if about != "" {
		fmt.Fprintf(w, "Configuration: %s\n", about)
	}
	fmt.Fprintf(w, "Idle: %d rooms created, nobody in them; visitors in %s", r.IdleRooms, r.Viewers)
	if r.PriceClass != "" {
		fmt.Fprintf(w, " (the page's CloudFront %s)", r.PriceClass)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Admission: %.0f users/s in batches every %v; POLL_TIERS %s; poll jitter u = %.1f\n",
		m.Config.AdmitRatePerSec, m.Config.AdmitInterval, m.Config.PollTiers, PollJitterU)
	fmt.Fprintf(w, "Admit invocation: idle %.3f s (%d batches), with a line %.3f s (%d batches)\n\n",
		m.IdleAdmit.Seconds, m.IdleAdmit.Batches, m.BusyAdmit.Seconds, m.BusyAdmit.Batches)
	section := func(title string, items []Item, total float64) {
		fmt.Fprintln(w, title)
		for _, it := range items {
			fmt.Fprintf(w, "  %-46s %10s  %s\n", it.Name, fmt.Sprintf("$%.2f", it.USD), it.Detail)
		}
		fmt.Fprintf(w, "  %-46s %10s\n\n", "total", fmt.Sprintf("$%.2f", total))
	}
	section("Idle, a month (deployed, nobody visiting):", r.Idle, r.IdleMonthlyUSD)
	fetches := ""
	if m.Walk.LineFetches > 0 {
		fetches = fmt.Sprintf("; %d line fetches, cached by CloudFront", m.Walk.LineFetches)
	}
	section(fmt.Sprintf("Per million visitors, each waiting %g s (%d requests: enter, %d polls, order%s; READY after %.1f s):",
		r.WaitSeconds, r.RequestsPerVisitor, r.RequestsPerVisitor-2, fetches, float64(m.Walk.ReadyAfterMs)/1000), r.PerMillion, r.PerMillionUSD)
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	line, err := json.Marshal(r.Summary())
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(line))
	return err
}
