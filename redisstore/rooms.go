package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
)

// updateAttempts bounds the compare-and-set loop of Update: two operators
// changing one room at the same instant retry, a storm of them gives up.
const updateAttempts = 5

// roomRecord is status.lua's reply decoded.
type roomRecord struct {
	status  waitroom.RoomStatus
	stored  bool   // the room has stored settings (an operator created it)
	exists  bool   // stored, or someone waits or holds a token in it
	version string // of the stored settings, for the compare-and-set
}

// List returns every operator-created room and every room in which someone
// waits or holds a token, sorted by name: two reads, then one pipeline.
func (s *Store) List(ctx context.Context) ([]waitroom.RoomStatus, error) {
	var created, active *redis.StringSliceCmd
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		created, active = p.SMembers(ctx, createdKey), p.SMembers(ctx, roomsKey)
		return nil
	}); err != nil {
		return nil, waitroom.Unavailable(err)
	}
	names := append(created.Val(), active.Val()...)
	slices.Sort(names)
	names = slices.Compact(names)
	records, err := s.readRooms(ctx, names)
	if err != nil {
		return nil, err
	}
	out := make([]waitroom.RoomStatus, 0, len(records))
	for _, r := range records {
		if r.exists {
			out = append(out, r.status)
		}
	}
	return out, nil
}

// Status reports one room in one round trip.
func (s *Store) Status(ctx context.Context, room string) (waitroom.RoomStatus, error) {
	records, err := s.readRooms(ctx, []string{room})
	if err != nil {
		return waitroom.RoomStatus{}, err
	}
	if !records[0].exists {
		return waitroom.RoomStatus{}, notFound(room)
	}
	return records[0].status, nil
}

// Update changes a room's settings with a compare-and-set on their version,
// then registers the room: operator-created rooms are listed and visited
// by every admission batch whether or not anyone waits.
func (s *Store) Update(ctx context.Context, room string, create bool, change func(waitroom.Settings) (waitroom.Settings, error)) (waitroom.SettingsChange, error) {
	for range updateAttempts {
		records, err := s.readRooms(ctx, []string{room})
		if err != nil {
			return waitroom.SettingsChange{}, err
		}
		rec := records[0]
		if !rec.exists && !create {
			return waitroom.SettingsChange{}, notFound(room)
		}
		next, err := change(rec.status.Settings)
		if err != nil {
			return waitroom.SettingsChange{}, err
		}
		if err := next.Validate(); err != nil {
			return waitroom.SettingsChange{}, err
		}
		k := roomKeys(room)
		v, err := settingsSetScript.run(ctx, s.rdb, k.settingsSetKeys(), settingsArgs(rec.version, rec.status.Settings, next)...).Int64()
		if err != nil {
			return waitroom.SettingsChange{}, waitroom.Unavailable(err)
		}
		if v == 0 {
			continue // changed in between: read again
		}
		if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.SAdd(ctx, createdKey, room)
			p.SAdd(ctx, roomsKey, room)
			return nil
		}); err != nil {
			return waitroom.SettingsChange{}, waitroom.Unavailable(err)
		}
		return waitroom.SettingsChange{Old: rec.status.Settings, New: next, Created: !rec.stored}, nil
	}
	return waitroom.SettingsChange{}, waitroom.Unavailable(errors.New("the settings kept changing under concurrent updates"))
}

// settingsArgs are settings_set.lua's arguments. The effective rate starts
// afresh from ratePerSec when adaptive is turned on or the rate changed;
// otherwise the adaptive rate reached is kept (within the new bounds).
func settingsArgs(version string, old, st waitroom.Settings) []any {
	adaptive, restart := "", old.Adaptive == nil || old.RatePerSec != st.RatePerSec
	if st.Adaptive != nil {
		adaptive = st.Adaptive.String()
	}
	var opensAt int64
	if st.OpensAt != nil {
		opensAt = st.OpensAt.UnixMilli()
	}
	// 'f', never an exponent: the embedded store's tonumber refuses "1e+06".
	return []any{version, strconv.FormatFloat(st.RatePerSec, 'f', -1, 64), st.Capacity, st.EntryTokenTTLSeconds * 1000,
		st.MaxActive, flag(st.Paused), opensAt, flag(st.Closed), st.Message, st.Title, st.BrandColor, st.LogoURL, st.Language, adaptive, flag(restart),
		flag(st.InstantAdmit)}
}

func notFound(room string) error {
	return waitroom.Errorf(waitroom.ERoomNotFound, "there is no room %q: create it with PUT /admin/rooms/%s", room, room)
}

// readRooms runs status.lua for every room in one pipeline.
func (s *Store) readRooms(ctx context.Context, rooms []string) ([]roomRecord, error) {
	run := func() []*redis.Cmd {
		cmds := make([]*redis.Cmd, len(rooms))
		_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, room := range rooms {
				k := roomKeys(room)
				keys := k.statusKeys()
				cmds[i] = statusScript.evalSha(ctx, p, keys, s.roomArgs(waitroom.AdaptWindow.Milliseconds())...)
			}
			return nil
		})
		return cmds
	}
	cmds := run()
	if len(cmds) > 0 && isNoScript(cmds[0].Err()) {
		if err := statusScript.load(ctx, s.rdb); err != nil {
			return nil, waitroom.Unavailable(err)
		}
		cmds = run()
	}
	out := make([]roomRecord, len(rooms))
	for i, cmd := range cmds {
		reply, err := cmd.Slice()
		if err != nil {
			return nil, waitroom.Unavailable(err)
		}
		if out[i], err = decodeStatus(rooms[i], reply); err != nil {
			return nil, waitroom.Unavailable(err)
		}
	}
	return out, nil
}

func decodeStatus(room string, r []any) (roomRecord, error) {
	if len(r) != 16 {
		return roomRecord{}, fmt.Errorf("unexpected status reply %v", r)
	}
	num := func(i int) int64 { n, _ := r[i].(int64); return n }
	str := func(i int) string { v, _ := r[i].(string); return v }
	hot, err := decodeHot(str(4))
	if err != nil {
		return roomRecord{}, err
	}
	page, err := decodePage(str(5))
	if err != nil {
		return roomRecord{}, err
	}
	rate, _ := strconv.ParseFloat(str(3), 64)
	st := waitroom.RoomStatus{Room: room, Settings: waitroom.Settings{
		RatePerSec: rate, Capacity: hot.capacity, EntryTokenTTLSeconds: hot.entryTTLMs / 1000, MaxActive: hot.maxActive,
		Paused: hot.has(hotPaused), Closed: hot.has(hotClosed), Message: hot.message, InstantAdmit: hot.has(hotInstant), Page: page,
	}}
	if hot.opensAtMs > 0 {
		t := time.UnixMilli(hot.opensAtMs).UTC()
		st.OpensAt = &t
	}
	if st.Adaptive, err = waitroom.ParseAdaptive(str(6)); err != nil {
		return roomRecord{}, err
	}
	st.EffectiveRatePerSec = hot.rate
	st.State = waitroom.RoomState(str(7))
	st.Waiting, st.PreQueued, st.ActiveTokens, st.AdmittedLastMinute = num(8), num(9), num(10), num(11)
	st.AdmittedPerSec = math.Round(float64(num(12))/5*10) / 10
	st.OldestWaitSeconds = num(13)
	if p95, err := strconv.ParseInt(str(14), 10, 64); err == nil {
		st.DownstreamP95Ms = &p95
	}
	if e, err := strconv.ParseFloat(str(15), 64); err == nil {
		st.DownstreamErrorRate = &e
	}
	stored := num(0) == 1
	return roomRecord{status: st, stored: stored, exists: stored || num(1) > 0, version: str(2)}, nil
}

// settingsSetKeys are settings_set.lua's keys: the room's hash, then what
// a reopened room starts afresh.
func (r roomKeys) settingsSetKeys() []string {
	return []string{r.settings(), r.line(), r.marks(), r.budget()}
}

// statusKeys are status.lua's keys, in the order its top names them.
func (r roomKeys) statusKeys() []string {
	return []string{r.settings(), r.line(), r.live(), r.marks(), r.admits(), r.control()}
}
