package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// historyLen is the sparkline's length: a minute of one-second samples.
const historyLen = 60

// watch redraws the rooms every tick until ctx ends (Ctrl-C). A failed
// refresh shows its error in the frame and keeps trying: a blip of the
// network must not end the operator's view in the middle of a sale.
func watch(ctx context.Context, c *client, room string, every time.Duration, w io.Writer) error {
	history, rates := map[string][]float64{}, map[string][]float64{}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		rooms, err := fetch(ctx, c, room)
		if ctx.Err() != nil {
			return nil
		}
		for _, r := range rooms {
			h := append(history[r.Room], r.AdmittedPerSec)
			history[r.Room] = h[max(0, len(h)-historyLen):]
			e := append(rates[r.Room], r.rate())
			rates[r.Room] = e[max(0, len(e)-historyLen):]
		}
		fmt.Fprint(w, "\x1b[H\x1b[2J"+frame(c.base, time.Now(), rooms, history, rates, err))
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func fetch(ctx context.Context, c *client, room string) ([]roomStatus, error) {
	if room != "" {
		body, err := c.get(ctx, "/admin/rooms/"+room)
		if err != nil {
			return nil, err
		}
		var s roomStatus
		return []roomStatus{s}, json.Unmarshal(body, &s)
	}
	body, err := c.get(ctx, "/admin/rooms")
	if err != nil {
		return nil, err
	}
	var l struct{ Rooms []roomStatus }
	return l.Rooms, json.Unmarshal(body, &l)
}

// frame is one screen of the watch: a pure function of what was fetched
// (history: admissions per second; rates: the effective rate, by room).
func frame(base string, now time.Time, rooms []roomStatus, history, rates map[string][]float64, err error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "waitroom %s  %s  (Ctrl-C to quit)\n\n", base, now.Format("15:04:05"))
	if err != nil {
		fmt.Fprintf(&b, "refresh failed: %v\n\n", err)
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROOM\tSTATE\tWAITING\tPRE-QUEUED\tADMITTED/S OF RATE\t\tACTIVE\tOLDEST\tLAST IN LINE\tLAST MINUTE")
	for _, r := range rooms {
		active := fmt.Sprint(r.ActiveTokens)
		if r.MaxActive > 0 {
			active += fmt.Sprintf("/%d", r.MaxActive)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f of %g\t%s\t%s\t%s\t%s\t%s\n", r.Room, r.State, r.Waiting, r.PreQueued,
			r.AdmittedPerSec, r.rate(), bar(r.AdmittedPerSec/r.rate(), 10), active,
			duration(float64(r.OldestWaitSeconds)), r.lastInLineWait(), sparkline(history[r.Room]))
	}
	_ = tw.Flush()
	adaptiveRows(&b, rooms, rates)
	if len(rooms) == 0 && err == nil {
		b.WriteString("no rooms yet: waitroomctl set ROOM --rate N creates one\n")
	}
	return b.String()
}

// adaptiveRows shows, under the table, every adaptive room's effective
// rate moving (a sparkline of the last minute, scaled to its bounds'
// maximum) and the order API's last second.
func adaptiveRows(b *strings.Builder, rooms []roomStatus, rates map[string][]float64) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	header := false
	for _, r := range rooms {
		if r.Adaptive == nil {
			continue
		}
		if !header {
			fmt.Fprintln(tw, "\nADAPTIVE\tEFFECTIVE RATE\tOF MAX\tLAST MINUTE\tORDER API")
			header = true
		}
		fmt.Fprintf(tw, "%s\t%.1f/s (%g to %g)\t%s\t%s\t%s\n", r.Room, r.rate(), r.Adaptive.MinRatePerSec, r.Adaptive.MaxRatePerSec,
			bar(r.rate()/r.Adaptive.MaxRatePerSec, 10), sparklineTo(rates[r.Room], r.Adaptive.MaxRatePerSec), r.downstream())
	}
	_ = tw.Flush()
}

// bar draws a share (admitted against the rate) in width cells.
func bar(share float64, width int) string {
	if math.IsNaN(share) || share < 0 {
		share = 0
	}
	n := int(math.Round(math.Min(share, 1) * float64(width)))
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}

// sparkline draws samples scaled to their maximum.
func sparkline(samples []float64) string {
	top := 0.0
	for _, s := range samples {
		top = math.Max(top, s)
	}
	return sparklineTo(samples, top)
}

// sparklineTo draws samples scaled to top (a rate's bound: the line's
// height then says how near the bound the rate runs).
func sparklineTo(samples []float64, top float64) string {
	const levels = "▁▂▃▄▅▆▇█"
	steps := []rune(levels)
	var b strings.Builder
	for _, s := range samples {
		i := 0
		if top > 0 {
			i = int(math.Round(math.Min(s/top, 1) * float64(len(steps)-1)))
		}
		b.WriteRune(steps[i])
	}
	return b.String()
}
