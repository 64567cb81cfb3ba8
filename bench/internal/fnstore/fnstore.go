// Package fnstore is the store as the functions configure it, for the
// commands that measure it (bench/rediscost, bench/bigroom): their
// configuration, a room's settings, the store with the limiter on and off,
// and one admission batch checked.
package fnstore

import (
	"context"
	"fmt"
	"time"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/envconfig"
	"github.com/waitroom/waitroom/redisstore"
)

// Config is the functions' configuration (OPEN_ROOMS=false and every
// default), the limiter at its defaults. Its REDIS_URL, which the
// functions require, is a placeholder: a Store takes its client.
func Config() (waitroom.Config, error) {
	cfg, err := envconfig.Load(func(k string) (string, bool) {
		if k == "REDIS_URL" {
			return "redis://127.0.0.1:6379", true
		}
		return "", false
	}, envconfig.Function)
	cfg.Trust.Limits = waitroom.Limits{ClientRatePerSec: waitroom.DefaultClientRatePerSec, ClientBurst: waitroom.DefaultClientBurst,
		IPRatePerSec: waitroom.DefaultIPRatePerSec, IPBurst: waitroom.DefaultIPBurst}
	// The fills build lines: with instant admission the first batch's worth
	// of an empty room would be admitted instead. A measured enter finds
	// the line full of users and takes the same path either way.
	cfg.InstantAdmit = false
	return cfg, err
}

// RoomSettings are the room's defaults (the configuration's) at rate, with
// a capacity that holds the line and every new user of a run.
func RoomSettings(cfg waitroom.Config, rate float64) waitroom.Settings {
	s := cfg.RoomDefaults()
	s.RatePerSec, s.Capacity = rate, 1_000_000_000
	return s
}

// SetRoom creates the room name with st, or sets its settings to st.
func SetRoom(ctx context.Context, s *redisstore.Store, name string, st waitroom.Settings) error {
	_, err := s.Update(ctx, name, true, func(waitroom.Settings) (waitroom.Settings, error) { return st, nil })
	return err
}

// Stores are the same store twice on one client: the limiter at the
// configuration's limits (On) and at zero limits (Off).
type Stores struct{ On, Off *redisstore.Store }

// NewStores builds both stores over rdb from cfg (whose limits are "on").
func NewStores(rdb redisstore.Client, cfg waitroom.Config) Stores {
	off := cfg
	off.Trust.Limits = waitroom.Limits{}
	return Stores{On: redisstore.New(rdb, cfg), Off: redisstore.New(rdb, off)}
}

// Of is the store of limiter "off", else the one of "on".
func (s Stores) Of(limiter string) *redisstore.Store {
	if limiter == "off" {
		return s.Off
	}
	return s.On
}

// AdmitPause is an admission interval and a fifth: the budget, full after
// it, lets each batch admit a batch's worth whatever the machine's speed.
func AdmitPause(cfg waitroom.Config) time.Duration { return cfg.AdmitInterval * 6 / 5 }

// Paced runs admission batches on one store, each AdmitPause after the
// last one's answer, so that each finds a full budget and admits Want
// users (a batch's worth) whatever the machine's speed.
type Paced struct {
	Want  int           // the users each batch must admit
	Pause time.Duration // from one batch's answer to the next batch
	s     *redisstore.Store
	last  time.Time
}

// NewPaced paces batches of cfg's size on s; the first waits a pause too.
func NewPaced(cfg waitroom.Config, s *redisstore.Store) *Paced {
	return &Paced{Want: int(cfg.BatchSize()), Pause: AdmitPause(cfg), s: s, last: time.Now()}
}

// Next waits out the pause and runs one batch (AdmitBatch).
func (p *Paced) Next(ctx context.Context) ([]waitroom.Admission, error) {
	if left := p.Pause - time.Since(p.last); left > 0 {
		time.Sleep(left)
	}
	admitted, err := AdmitBatch(ctx, p.s, p.Want)
	p.last = time.Now()
	return admitted, err
}

// AdmitBatch runs one admission batch (waitroom.RunBatch) on s, whose one
// room with users waiting must admit want of them; it returns them.
func AdmitBatch(ctx context.Context, s *redisstore.Store, want int) ([]waitroom.Admission, error) {
	batch, err := waitroom.RunBatch(ctx, s)
	if err != nil {
		return nil, err
	}
	if len(batch.Rooms) != 1 || len(batch.Rooms[0].Admitted) != want {
		return nil, fmt.Errorf("admit batch: %d rooms, want 1 admitting %d users: %+v", len(batch.Rooms), want, batch.Rooms)
	}
	return batch.Rooms[0].Admitted, nil
}

// Expect fails unless st has the status want (a limiter that cannot run
// fails the call: err).
func Expect(st waitroom.Standing, err error, want waitroom.Status) error {
	if err != nil {
		return err
	}
	if st.Status != want {
		return fmt.Errorf("answered %s, want %s", st.Status, want)
	}
	return nil
}
