package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"
)

// adaptiveFlags are set's flags of the adaptive setting: the three bounds
// together turn it on, one alone changes that bound of an adaptive room,
// --adaptive off turns it off.
type adaptiveFlags struct {
	target   *time.Duration
	min, max *float64
	off      bool
}

var adaptiveFlagNames = map[string]bool{"adaptive-target-p95": true, "min-rate": true, "max-rate": true, "adaptive": true}

// adaptiveSetting is the API's adaptive object.
type adaptiveSetting struct {
	TargetP95Ms   int64   `json:"targetP95Ms"`
	MinRatePerSec float64 `json:"minRatePerSec"`
	MaxRatePerSec float64 `json:"maxRatePerSec"`
}

func (a *adaptiveFlags) define(fs *flag.FlagSet) {
	fs.Func("adaptive-target-p95", "", func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Millisecond {
			return errors.New("--adaptive-target-p95 is a duration of at least 1ms, such as 250ms")
		}
		a.target = &d
		return nil
	})
	rate := func(into **float64) func(string) error {
		return func(v string) error {
			f, err := strconv.ParseFloat(v, 64)
			*into = &f
			return err
		}
	}
	fs.Func("min-rate", "", rate(&a.min))
	fs.Func("max-rate", "", rate(&a.max))
	fs.Func("adaptive", "", func(v string) error {
		if v != "off" {
			return errors.New(`--adaptive takes "off" (the three bounds turn it on)`)
		}
		a.off = true
		return nil
	})
}

func (a adaptiveFlags) given() bool { return a.off || a.target != nil || a.min != nil || a.max != nil }

// apply puts the adaptive setting the flags ask for into settings: the
// object (the bounds not given read from the room first) or null.
func (a adaptiveFlags) apply(ctx context.Context, c *client, room string, settings map[string]any) error {
	bounds := a.target != nil || a.min != nil || a.max != nil
	switch {
	case a.off && bounds:
		return usageError("--adaptive off goes without --adaptive-target-p95, --min-rate and --max-rate")
	case a.off:
		settings["adaptive"] = nil
		return nil
	case !bounds:
		return nil
	}
	var set adaptiveSetting
	if a.target == nil || a.min == nil || a.max == nil {
		current, err := c.adaptive(ctx, room)
		if err != nil {
			return err
		}
		if current == nil {
			return usageError(fmt.Sprintf("room %s is not adaptive: --adaptive-target-p95, --min-rate and --max-rate together turn it on", room))
		}
		set = *current
	}
	if a.target != nil {
		set.TargetP95Ms = a.target.Milliseconds()
	}
	if a.min != nil {
		set.MinRatePerSec = *a.min
	}
	if a.max != nil {
		set.MaxRatePerSec = *a.max
	}
	settings["adaptive"] = set
	return nil
}

// adaptive reads a room's adaptive setting; nil when off or the room does
// not exist (set then creates it, and needs all three bounds).
func (c *client) adaptive(ctx context.Context, room string) (*adaptiveSetting, error) {
	body, err := c.get(ctx, "/admin/rooms/"+room)
	var ae *apiError
	if errors.As(err, &ae) && ae.Code == "room_not_found" {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s roomStatus
	if err := json.Unmarshal(body, &s); err != nil {
		return nil, fmt.Errorf("unexpected answer: %w", err)
	}
	return s.Adaptive, nil
}
