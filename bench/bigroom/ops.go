package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/bench/internal/callgrind"
	"github.com/waitroom/waitroom/bench/internal/fnstore"
	"github.com/waitroom/waitroom/bench/spike/sim"
	"github.com/waitroom/waitroom/redisstore"
)

// bench is the run against the server under callgrind: every measured
// call goes through one client of exactly one connection.
type bench struct {
	p   params
	cfg waitroom.Config
	cg  *callgrind.Server
	st  fnstore.Stores // the limiter at the configuration's limits, and at zero
}

// instructions loads the snapshot in dir under callgrind and measures
// every operation into res.Ops (see the doc comment).
func instructions(ctx context.Context, p params, cfg waitroom.Config, dir string, res *sim.BigRoomResults) error {
	fmt.Fprintln(os.Stderr, "starting redis-server under valgrind --tool=callgrind on the snapshot ...")
	cg, err := callgrind.Start(dir, 30*time.Minute)
	if err != nil {
		return err
	}
	defer cg.Stop()
	one := redis.NewClient(&redis.Options{Addr: cg.Addr, PoolSize: 1, MaxActiveConns: 1, MaxRetries: -1,
		ReadTimeout: time.Minute, WriteTimeout: time.Minute, PoolTimeout: time.Minute, ConnMaxIdleTime: -1})
	defer one.Close()
	b := &bench{p: p, cfg: cfg, cg: cg, st: fnstore.NewStores(one, cfg)}
	if n, err := redisstore.LineLength(ctx, one, room); err != nil || n != int64(p.visitors) {
		return fmt.Errorf("the snapshot's line holds %d, want %d (%v)", n, p.visitors, err)
	}
	// Active expiry off: no expiry cycle runs among the counted calls.
	if err := one.Do(ctx, "DEBUG", "SET-ACTIVE-EXPIRE", "0").Err(); err != nil {
		return fmt.Errorf("DEBUG SET-ACTIVE-EXPIRE 0: %w", err)
	}
	if err := cg.Instrument(ctx); err != nil {
		return err
	}
	res.Callgrind = "the line filled on a plain redis-server, SAVEd, its snapshot loaded by redis-server under valgrind --tool=callgrind --instr-atstart=no " +
		"(the line is there before anything is counted), active expiry off, instrumentation on; per operation, warm-up calls, then callgrind_control --zero, " +
		"the measured calls through one go-redis connection and redisstore.Store (the scripts by EVALSHA), callgrind_control --dump; " +
		"instructions (Ir) of the dump less serverCron's inclusive (Redis's timer), over the calls"
	for _, kind := range []string{"enterAccount", "enterAnonymous"} {
		for _, limiter := range []string{"on", "off"} {
			if err := b.keep(ctx, res, b.enter(kind, limiter)); err != nil {
				return err
			}
		}
	}
	// The front before any batch is the first visitor's number: visitor
	// i's is i beyond it (the fill's alternate numbering).
	front, err := one.HGet(ctx, "wr:{"+room+"}:settings", "front").Int64()
	if err != nil {
		return fmt.Errorf("the line's front: %w", err)
	}
	admitted, err := b.admitBatches(ctx, res)
	if err != nil {
		return err
	}
	byKind := map[string][]int64{}
	for _, n := range admitted {
		kind := "claim"
		if (n-front)%2 == 0 {
			kind = "claimAccount"
		}
		byKind[kind] = append(byKind[kind], n)
	}
	for _, kind := range []string{"claim", "claimAccount"} {
		for i, limiter := range []string{"on", "off"} {
			n, numbers := p.warmup+p.calls, byKind[kind]
			if len(numbers) < 2*n {
				return fmt.Errorf("%s: %d numbers admitted, want %d", kind, len(numbers), 2*n)
			}
			if err := b.keep(ctx, res, b.claim(kind, limiter, front, numbers[len(numbers)-(i+1)*n:len(numbers)-i*n])); err != nil {
				return err
			}
		}
	}
	return nil
}

// op is one measured operation: p.warmup calls unmeasured, then p.calls measured.
type op struct {
	key, name, limiter string
	call               func(ctx context.Context, i int) error
}

// keep measures o into res.Ops.
func (b *bench) keep(ctx context.Context, res *sim.BigRoomResults, o op) error {
	t := time.Now()
	for i := 0; i < b.p.warmup; i++ {
		if err := o.call(ctx, i); err != nil {
			return fmt.Errorf("%s (limiter %s): warm-up call %d: %w", o.name, o.limiter, i, err)
		}
	}
	prof, err := b.cg.Count(ctx, b.p.calls, func(i int) error {
		if err := o.call(ctx, b.p.warmup+i); err != nil {
			return fmt.Errorf("%s (limiter %s): call %d: %w", o.name, o.limiter, b.p.warmup+i, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	r := sim.BigRoomOp{Key: o.key, Name: o.name, Limiter: o.limiter, Calls: b.p.calls, Instructions: prof.Counted()}
	res.Ops = append(res.Ops, r)
	fmt.Fprintf(os.Stderr, "  %-44s limiter %-3s %10.0f instructions per call (%.1f s)\n", r.Name, o.limiter, r.PerCall(), time.Since(t).Seconds())
	b.printTop(prof, b.p.calls)
	return nil
}

// printTop prints prof's p.top costliest functions, inclusive, per call.
func (b *bench) printTop(prof *callgrind.Profile, calls int) {
	for _, name := range prof.Top(b.p.top, false) {
		c := prof.Funcs[name]
		fmt.Fprintf(os.Stderr, "      %10.0f incl %10.0f self %8.2f calls  %s\n", float64(c.Inclusive)/float64(calls), float64(c.Self)/float64(calls), float64(c.Calls)/float64(calls), name)
	}
}

// ipOf is the i-th address of group: 10.<group>.<i / 256>.<i % 256>.
func ipOf(group, i int) string {
	return "10." + strconv.Itoa(group) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255)
}

// enter is a new visitor of kind joining behind the line, each call a
// visitor and an address of its own: an account as the authorizer names
// it, or an anonymous visitor that this enter makes (NewVisitor), a
// ticket's holder with no place yet (Anonymous, Place 0): httpapi's caller
// of an enter without identity.
func (b *bench) enter(kind, limiter string) op {
	s := b.st.Of(limiter)
	group, name := 1, "enter, a new account behind the line"
	if kind == "enterAnonymous" {
		group, name = 2, "enter, a new anonymous visitor behind the line"
	}
	if limiter == "off" {
		group += 2
	}
	return op{key: kind, name: name, limiter: limiter, call: func(ctx context.Context, i int) error {
		c := waitroom.Caller{IP: ipOf(group, i)}
		if kind == "enterAccount" {
			c.User = fmt.Sprintf("a:new-%d-%08d-0000-4000-8000-000000000000", group, i)
		} else {
			id, err := waitroom.NewVisitorID()
			if err != nil {
				return err
			}
			c.User, c.NewVisitor, c.Anonymous = id, true, true
		}
		st, err := s.Enter(ctx, room, c)
		if err == nil && !st.Joined {
			err = fmt.Errorf("%s did not join: %+v", c.User, st)
		}
		if err == nil && st.Position <= int64(b.p.visitors) {
			err = fmt.Errorf("%s joined at %d, not behind the %d", c.User, st.Position, b.p.visitors)
		}
		return fnstore.Expect(st, err, waitroom.Waiting)
	}}
}

// claim is the holder of a number admission has passed polling (the
// call that claims its entry token, claim.lua), each call a number the
// measured batches admitted and an address of its own: for kind "claim"
// an anonymous visitor with its ticket's place (Anonymous, Place its
// number, PlaceAt now; a new id: the ticket names none until its token);
// for "claimAccount" the account the fill numbered so (visitor(n -
// front)), with its signed place as the page sends it (whose record the
// claim deletes).
func (b *bench) claim(kind, limiter string, front int64, numbers []int64) op {
	s, group := b.st.Of(limiter), 5
	if limiter == "off" {
		group = 6
	}
	name := "claim: position of an anonymous visitor admission passed (READY)"
	if kind == "claimAccount" {
		group, name = group+2, "claim: position of an account admission passed (READY)"
	}
	return op{key: kind, name: name, limiter: limiter, call: func(ctx context.Context, i int) error {
		c := waitroom.Caller{IP: ipOf(group, i), Place: numbers[i], PlaceAt: time.Now()}
		var err error
		if kind == "claimAccount" {
			c.User, err = visitor(int(numbers[i] - front))
		} else {
			c.User, err = waitroom.NewVisitorID()
			c.Anonymous = true
		}
		if err != nil {
			return err
		}
		st, err := s.Position(ctx, room, c)
		if err == nil && st.Token == "" {
			err = fmt.Errorf("number %d: READY without a token", numbers[i])
		}
		return fnstore.Expect(st, err, waitroom.Ready)
	}}
}

// admitBatches measures p.admitCalls admission batches of the default
// size after p.admitWarm of them (more when the claims need more
// numbers: four sets of -warmup + -calls, two of each kind), each after a
// pause of 1.2 intervals so that each finds a full budget; it returns the
// numbers they admitted (accounts' and anonymous alike: nobody is popped,
// each holder claims its turn), in order.
func (b *bench) admitBatches(ctx context.Context, res *sim.BigRoomResults) ([]int64, error) {
	t := time.Now()
	paced := fnstore.NewPaced(b.cfg, b.st.Off)
	pause, want := paced.Pause, paced.Want
	var numbers []int64
	batch := func() error {
		batch, err := paced.Next(ctx)
		if err != nil {
			return err
		}
		for _, a := range batch {
			if a.User != "" || a.Number == 0 {
				return fmt.Errorf("an admission of a user (%q) or of no number: %+v", a.User, a)
			}
			numbers = append(numbers, a.Number)
		}
		return nil
	}
	need := (4*(b.p.warmup+b.p.calls)+2*want)/want - b.p.admitCalls
	warm := max(int((b.p.admitWarm+pause-1)/pause), need)
	for range warm {
		if err := batch(); err != nil {
			return nil, err
		}
	}
	prof, err := b.cg.Count(ctx, b.p.admitCalls, func(int) error { return batch() })
	if err != nil {
		return nil, err
	}
	r := sim.BigRoomOp{Key: "admitBatch", Name: fmt.Sprintf("admission batch (RunBatch, %d places: accounts' and anonymous numbers alternately, the front moved past them, after %d batches)", want, warm),
		Calls: b.p.admitCalls, Instructions: prof.Counted(), Admitted: want}
	res.Ops = append(res.Ops, r)
	fmt.Fprintf(os.Stderr, "  %-44s limiter %-3s %10.0f instructions per call (%.1f s)\n", r.Name, "-", r.PerCall(), time.Since(t).Seconds())
	b.printTop(prof, b.p.admitCalls)
	return numbers, nil
}

// measureRate sets the room's rate to p.rate on the plain server and runs
// the functions' admitter (waitroom.Admitter: a batch every 80-100% of
// the admission interval) for p.rateWindow: the admissions made after the
// first batch over the time from the first batch's answer to the last's
// (the first batch finds a budget saved before the window).
func measureRate(ctx context.Context, p params, cfg waitroom.Config, rdb *redis.Client, w *sim.BigRoomWait) error {
	fast := cfg
	fast.AdmitRatePerSec = p.rate
	st := redisstore.New(rdb, fast)
	if err := fnstore.SetRoom(ctx, st, room, fnstore.RoomSettings(cfg, p.rate)); err != nil {
		return err
	}
	var first, last time.Time
	var after int64
	a := &waitroom.Admitter{Queue: st, Interval: cfg.AdmitInterval, Batches: int(p.rateWindow / cfg.AdmitInterval), OnBatch: func(b waitroom.Batch) {
		n := int64(0)
		for _, rb := range b.Rooms {
			n += int64(len(rb.Admitted))
		}
		w.WindowAdmitted += n
		if first.IsZero() {
			first = time.Now()
		} else {
			after += n
		}
		last = time.Now()
	}}
	sum, err := a.Run(ctx)
	if err != nil {
		return err
	}
	if sum.Failed > 0 {
		return fmt.Errorf("%d of %d batches failed", sum.Failed, sum.Failed+sum.Batches)
	}
	w.WindowBatches = sum.Batches
	w.WindowSeconds = last.Sub(first).Seconds()
	if w.WindowSeconds > 0 {
		w.MeasuredRatePerSec = float64(after) / w.WindowSeconds
		w.MeasuredSeconds = float64(w.LastPosition) / w.MeasuredRatePerSec
	}
	return nil
}
