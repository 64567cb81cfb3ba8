package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// roomStatus is the admin API's room status (docs/API.md).
type roomStatus struct {
	Room                 string           `json:"room"`
	RatePerSec           float64          `json:"ratePerSec"`
	Capacity             int64            `json:"capacity"`
	EntryTokenTTLSeconds int64            `json:"entryTokenTtlSeconds"`
	MaxActive            int64            `json:"maxActive"`
	Paused               bool             `json:"paused"`
	InstantAdmit         bool             `json:"instantAdmit"`
	OpensAt              *time.Time       `json:"opensAt"`
	Closed               bool             `json:"closed"`
	Message              string           `json:"message"`
	Title                string           `json:"title"`
	BrandColor           string           `json:"brandColor"`
	LogoURL              string           `json:"logoUrl"`
	Language             string           `json:"language"`
	State                string           `json:"state"`
	Waiting              int64            `json:"waiting"`
	PreQueued            int64            `json:"prequeued"`
	ActiveTokens         int64            `json:"activeTokens"`
	AdmittedLastMinute   int64            `json:"admittedLastMinute"`
	AdmittedPerSec       float64          `json:"admittedPerSec"`
	OldestWaitSeconds    int64            `json:"oldestWaitSeconds"`
	Adaptive             *adaptiveSetting `json:"adaptive"`
	EffectiveRatePerSec  float64          `json:"effectiveRatePerSec"`
	DownstreamP95Ms      *int64           `json:"downstreamP95Ms"`
	DownstreamErrorRate  *float64         `json:"downstreamErrorRate"`
}

// rate is the rate admission uses: the effective one (an older server
// without it: the setting).
func (s roomStatus) rate() float64 {
	if s.EffectiveRatePerSec > 0 {
		return s.EffectiveRatePerSec
	}
	return s.RatePerSec
}

// downstream spells the order API's measurements of the last second.
func (s roomStatus) downstream() string {
	if s.DownstreamP95Ms == nil {
		return "-"
	}
	errs := "-"
	if s.DownstreamErrorRate != nil {
		errs = fmt.Sprintf("%.1f%%", 100**s.DownstreamErrorRate)
	}
	return fmt.Sprintf("p95 %dms errors %s", *s.DownstreamP95Ms, errs)
}

// lastInLineWait is the estimated wait of the last in line, at the rate.
func (s roomStatus) lastInLineWait() string {
	if s.State != "open" {
		return s.State
	}
	return duration(float64(s.Waiting+s.PreQueued) / s.rate())
}

// printer writes the answers: as text, or the API's JSON with --json.
type printer struct {
	w    io.Writer
	json bool
}

func (p printer) room(body []byte, err error) error {
	if err != nil {
		return err
	}
	if p.json {
		return p.raw(body)
	}
	var s roomStatus
	if err := json.Unmarshal(body, &s); err != nil {
		return fmt.Errorf("unexpected answer: %w", err)
	}
	opens, maxActive := "-", "no cap"
	if s.OpensAt != nil {
		opens = s.OpensAt.UTC().Format(time.RFC3339)
	}
	if s.MaxActive > 0 {
		maxActive = fmt.Sprint(s.MaxActive)
	}
	fmt.Fprintf(p.w, "room %s: %s\n", s.Room, s.State)
	fmt.Fprintf(p.w, "  settings  rate %g/s  capacity %d  token TTL %ds  max active %s  paused %t  instant admit %t  opens at %s\n",
		s.RatePerSec, s.Capacity, s.EntryTokenTTLSeconds, maxActive, s.Paused, s.InstantAdmit, opens)
	fmt.Fprintf(p.w, "  now       waiting %d  pre-queued %d  active tokens %d  admitted %.1f/s (%d in the last minute)  oldest wait %s  last in line %s\n",
		s.Waiting, s.PreQueued, s.ActiveTokens, s.AdmittedPerSec, s.AdmittedLastMinute, duration(float64(s.OldestWaitSeconds)), s.lastInLineWait())
	adaptive := "off"
	if a := s.Adaptive; a != nil {
		adaptive = fmt.Sprintf("target p95 %dms  rate %g to %g/s", a.TargetP95Ms, a.MinRatePerSec, a.MaxRatePerSec)
	}
	fmt.Fprintf(p.w, "  adaptive  %s  effective rate %g/s\n", adaptive, s.rate())
	if s.DownstreamP95Ms != nil {
		fmt.Fprintf(p.w, "  order API %s (the last second)\n", s.downstream())
	} else {
		fmt.Fprintf(p.w, "  order API no order in the last second\n")
	}
	if s.Message != "" {
		fmt.Fprintf(p.w, "  message   %q\n", s.Message)
	}
	if s.Title != "" || s.BrandColor != "" || s.LogoURL != "" || s.Language != "" {
		fmt.Fprintf(p.w, "  page      title %q  colour %s  logo %s  language %s\n", s.Title, orDash(s.BrandColor), orDash(s.LogoURL), orDash(s.Language))
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (p printer) list(body []byte, err error) error {
	if err != nil {
		return err
	}
	if p.json {
		return p.raw(body)
	}
	var l struct{ Rooms []roomStatus }
	if err := json.Unmarshal(body, &l); err != nil {
		return fmt.Errorf("unexpected answer: %w", err)
	}
	tw := tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROOM\tSTATE\tWAITING\tPRE-QUEUED\tADMITTED/S\tRATE\tACTIVE\tOLDEST WAIT")
	for _, s := range l.Rooms {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f\t%g\t%d\t%s\n", s.Room, s.State, s.Waiting, s.PreQueued, s.AdmittedPerSec, s.rate(), s.ActiveTokens, duration(float64(s.OldestWaitSeconds)))
	}
	return tw.Flush()
}

func (p printer) raw(body []byte) error {
	_, err := fmt.Fprintln(p.w, strings.TrimSpace(string(body)))
	return err
}

// duration spells seconds for people: 42s, 3m05s, 2h10m.
func duration(seconds float64) string {
	d := time.Duration(seconds * float64(time.Second)).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
