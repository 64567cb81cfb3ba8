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
	history := map[string][]float64{}
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
		}
		fmt.Fprint(w, "\x1b[H\x1b[2J"+frame(c.base, time.Now(), rooms, history, err))
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

// frame is one screen of the watch: a pure function of what was fetched.
func frame(base string, now time.Time, rooms []roomStatus, history map[string][]float64, err error) string {
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
			r.AdmittedPerSec, r.RatePerSec, bar(r.AdmittedPerSec/r.RatePerSec, 10), active,
			duration(float64(r.OldestWaitSeconds)), r.lastInLineWait(), sparkline(history[r.Room]))
	}
	_ = tw.Flush()
	if len(rooms) == 0 && err == nil {
		b.WriteString("no rooms yet: waitroomctl set ROOM --rate N creates one\n")
	}
	return b.String()
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
	const levels = "▁▂▃▄▅▆▇█"
	steps := []rune(levels)
	top := 0.0
	for _, s := range samples {
		top = math.Max(top, s)
	}
	var b strings.Builder
	for _, s := range samples {
		i := 0
		if top > 0 {
			i = int(math.Round(s / top * float64(len(steps)-1)))
		}
		b.WriteRune(steps[i])
	}
	return b.String()
}
