package redisstore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom"
)

// A room's settings travel from the scripts packed (settings.lua): 'hot',
// what every call of the room needs, and 'page', what enter and status
// add. The scripts pack them; this file reads them, and builds the hot
// field of a room without stored settings (the store's defaults).

// The bits of hot's flags character (settings.lua); 2 is stalled, which
// answers add (room.lua's answer).
const (
	hotPaused    = 1
	hotStalled   = 2
	hotClosed    = 4
	hotAdaptive  = 8
	hotInstant   = 16
	hotScheduled = 32
)

// hotRoom is a decoded 'hot' field.
type hotRoom struct {
	flags                int
	rate                 float64 // the rate admission uses: the adaptive one while adaptive is on
	maxActive, opensAtMs int64
	capacity, entryTTLMs int64
	message              string
}

var errHot = errors.New("malformed room settings")

// decodeHot reads <flags><rate>:<maxActive>:<opensAt>:<capacity>:<ttl>:<message>.
func decodeHot(hot string) (hotRoom, error) {
	parts := strings.SplitN(hot, ":", 6)
	if len(parts) != 6 || len(parts[0]) < 2 || parts[0][0] < 64 {
		return hotRoom{}, errHot
	}
	r := hotRoom{flags: int(parts[0][0]) - 64, message: parts[5]}
	var errs [5]error
	r.rate, errs[0] = strconv.ParseFloat(parts[0][1:], 64)
	r.maxActive, errs[1] = strconv.ParseInt(parts[1], 10, 64)
	r.opensAtMs, errs[2] = strconv.ParseInt(parts[2], 10, 64)
	r.capacity, errs[3] = strconv.ParseInt(parts[3], 10, 64)
	r.entryTTLMs, errs[4] = strconv.ParseInt(parts[4], 10, 64)
	if err := errors.Join(errs[:]...); err != nil {
		return hotRoom{}, fmt.Errorf("%w: %v", errHot, err)
	}
	return r, nil
}

func (r hotRoom) has(bit int) bool { return r.flags&bit != 0 }

// claimWindow is the room's entry token life: an admitted number's claim
// window (claim.lua).
func (r hotRoom) claimWindow() time.Duration { return time.Duration(r.entryTTLMs) * time.Millisecond }

// defaultHot is the hot field of a room without stored settings: the
// configuration's rate, capacity, entry-token life and instant admission
// (packHot's format: settings.lua).
func defaultHot(cfg waitroom.Config) string {
	flags := 0
	if cfg.InstantAdmit {
		flags |= hotInstant
	}
	// 'f', never an exponent: the embedded store's tonumber refuses "1e+06".
	return string(rune(64+flags)) + strconv.FormatFloat(cfg.AdmitRatePerSec, 'f', -1, 64) + ":0:0:" +
		strconv.FormatInt(cfg.QueueCapacity, 10) + ":" + strconv.FormatInt(cfg.EntryTokenTTL.Milliseconds(), 10) + ":"
}

// roomsHead is room.lua's line for a room without stored settings in a
// store's own scripts: its rooms without stored settings, as Lua constants
// (roomOf's defaultHot and openRooms, written at its marker: withConsts).
// Admission and status, shared by every store, take the same as their
// first argument (roomsArg) instead, and read it with roomsArgHead.
func roomsHead(cfg waitroom.Config) string {
	return fmt.Sprintf("local defaultHot, openRooms = %q, %t", defaultHot(cfg), cfg.OpenRooms)
}

// roomsArgHead reads roomsArg back in admit.lua and status.lua (room.lua's
// line for a room without stored settings there).
const roomsArgHead = "local openRooms, defaultHot = string.sub(ARGV[1], 1, 1) == '1', string.sub(ARGV[1], 2)"

func roomsArg(cfg waitroom.Config) string { return flag(cfg.OpenRooms) + defaultHot(cfg) }

// decodePage reads packPage's title, brandColor, logoUrl and language,
// each its length, ':' and itself; "" is a room without a page.
func decodePage(page string) (waitroom.Page, error) {
	var texts [4]string
	for i := range texts {
		if page == "" {
			break
		}
		n, rest, ok := strings.Cut(page, ":")
		size, err := strconv.Atoi(n)
		if !ok || err != nil || size < 0 || size > len(rest) {
			return waitroom.Page{}, errors.New("malformed room page")
		}
		texts[i], page = rest[:size], rest[size:]
	}
	return waitroom.Page{Title: texts[0], BrandColor: texts[1], LogoURL: texts[2], Language: texts[3]}, nil
}
