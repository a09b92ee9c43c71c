// Package pacefleet runs many recruiters in one process, each standing for
// a process of a fleet, with one automatically paced job, and measures the
// job's cadence and the fleet's round trips per run, also over time after
// the fleet changes size. The recruiter's test of automatic pace and the
// pace benchmark (`make bench-pace`) share it.
package pacefleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/recruiter"
)

// Fleet is n recruiters sharing a few clients of one Redis and one job,
// "tidy", paced automatically at Every. Shrink and Grow change its size
// between measurements, never during one.
type Fleet struct {
	recs     []*recruiter.Recruiter // the live ones
	rdbs     []*redis.Client
	every    time.Duration
	prefix   string
	job      recruiter.Job
	added    int                  // recruiters ever started, which spreads them over the clients
	trips    redistest.RoundTrips // every recruiter's round trips
	fresh    atomic.Int64         // the next recruiter to have its first enlistment (past the last: none)
	enlisted atomic.Int64         // enlistments made
	dropped  atomic.Int64         // enlistments dropped by a starved driver (see drive)

	mu     sync.Mutex
	starts []time.Time // of the job's slices, fleet-wide
}

// Start starts n recruiters on clients clients of the Redis at addr, their
// keys under prefix, with the job at Every every and no Rate. The
// pressure gate is off: a fleet of one process's recruiters would read
// its own load as every process's.
func Start(addr, prefix string, n, clients int, every time.Duration) (*Fleet, error) {
	f := &Fleet{every: every, prefix: prefix}
	for range clients {
		rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 8})
		rdb.AddHook(&f.trips)
		f.rdbs = append(f.rdbs, rdb)
	}
	f.job = recruiter.Func("tidy", func(context.Context) (recruiter.Report, error) {
		f.mu.Lock()
		f.starts = append(f.starts, time.Now())
		f.mu.Unlock()
		return recruiter.Report{Items: 1}, nil
	})
	if err := f.Grow(n); err != nil {
		return nil, errors.Join(err, f.Close(context.Background()))
	}
	return f, nil
}

// Grow starts n more recruiters, processes that join the fleet (a
// scale-out); the next enlistments go to them first, one each.
func (f *Fleet) Grow(n int) error {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.fresh.Store(int64(len(f.recs)))
	for range n {
		rec, err := recruiter.New(f.rdbs[f.added%len(f.rdbs)], recruiter.Config{Inline: true, Prefix: f.prefix, Logger: quiet, Pressure: -1})
		if err != nil {
			return err
		}
		f.added++
		f.recs = append(f.recs, rec)
		if err := rec.Register(f.job, recruiter.JobConfig{Every: f.every}); err != nil {
			return err
		}
	}
	return nil
}

// Shrink shuts down all but the first n recruiters, processes that leave
// the fleet (a scale-in); enlistments then go to the others only.
func (f *Fleet) Shrink(ctx context.Context, n int) error {
	var errs []error
	for _, rec := range f.recs[n:] {
		errs = append(errs, rec.Shutdown(ctx))
	}
	f.recs = f.recs[:n]
	return errors.Join(errs...)
}

// ShrinkOldest shuts down all but the last n recruiters: the processes
// that started first leave, the job's carrier among them, as when a node
// is lost or processes are killed regardless of their age. Shutdown
// writes nothing to Redis, so for the others this is a crash.
func (f *Fleet) ShrinkOldest(ctx context.Context, n int) error {
	return f.keep(ctx, len(f.recs)-n, n)
}

// ShrinkToMiddle shuts down all but n recruiters in the middle of the
// fleet's age order: the oldest and the youngest leave, the job's carrier
// and its watcher among them.
func (f *Fleet) ShrinkToMiddle(ctx context.Context, n int) error {
	return f.keep(ctx, (len(f.recs)-n)/2, n)
}

// keep shuts down all but the n recruiters from the from-th on.
func (f *Fleet) keep(ctx context.Context, from, n int) error {
	var errs []error
	for i, rec := range f.recs {
		if i < from || i >= from+n {
			errs = append(errs, rec.Shutdown(ctx))
		}
	}
	f.recs = f.recs[from : from+n]
	f.fresh.Store(int64(len(f.recs)))
	return errors.Join(errs...)
}

// Close shuts the live recruiters down (Shrink did the others) and closes
// the clients.
func (f *Fleet) Close(ctx context.Context) error {
	var errs []error
	for _, rec := range f.recs {
		errs = append(errs, rec.Shutdown(ctx))
	}
	for _, rdb := range f.rdbs {
		errs = append(errs, rdb.Close())
	}
	return errors.Join(errs...)
}

// drive enlists at random recruiters, perEvery times per Every in all, for
// d, from a few goroutines on an open-loop schedule (a late one catches
// up rather than lowering the rate). The first enlistments go to the
// recruiters that have had none, one each, as a fleet's first requests
// reach processes that have just started.
func (f *Fleet) drive(ctx context.Context, perEvery float64, d time.Duration) {
	if perEvery == 0 {
		// A quiet fleet: no enlistment, only the recruiters' pace timers.
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
		return
	}
	const workers = 8
	interval := time.Duration(float64(f.every) / perEvery * workers)
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			next := time.Now().Add(time.Duration(w) * interval / workers)
			for next.Before(end) && ctx.Err() == nil {
				switch wait := time.Until(next); {
				case wait > 0:
					time.Sleep(wait)
				case wait < -interval:
					// Starved on a loaded machine: drop what is late rather
					// than catch up in a burst, which every recruiter here
					// would see at once as a jump in its traffic (a fleet's
					// processes are not starved together).
					f.dropped.Add(int64(-wait / interval))
					next = time.Now()
				}
				i := int(f.fresh.Add(1)) - 1
				if i >= len(f.recs) {
					i = rand.IntN(len(f.recs))
				}
				f.recs[i].Enlist(ctx)
				f.enlisted.Add(1)
				next = next.Add(interval)
			}
		})
	}
	wg.Wait()
}

// Figures are what a window of a fleet's run shows.
type Figures struct {
	Slots    float64 // the window's length in Everys
	Runs     int     // slices that began in the window
	Trips    int64   // round trips in the window, fleet-wide
	Enlisted int64   // enlistments in the window
	Dropped  int64   // enlistments a starved driver dropped in the window
	Warmup   int64   // round trips before the window: the fleet's start, its settling and any earlier windows
	Locked   uint64  // visits in the window that found a slice running
	Taken    uint64  // visits in the window that found the slot's run taken
	Failed   uint64  // slices and visits in the window that failed (Redis errors, timeouts)
}

// outcomes sums the fleet's visits that did not run the job.
func (f *Fleet) outcomes() (locked, taken, failed uint64) {
	for _, rec := range f.recs {
		js := rec.Stats().Jobs[0]
		locked, taken, failed = locked+js.SkippedLocked, taken+js.SkippedCooldown, failed+js.Failed()
	}
	return locked, taken, failed
}

// Cadence is the runs per Every.
func (p Figures) Cadence() float64 { return float64(p.Runs) / p.Slots }

// TripsPerRun is the fleet's round trips per run of the job.
func (p Figures) TripsPerRun() float64 { return float64(p.Trips) / float64(max(p.Runs, 1)) }

func (p Figures) String() string {
	return fmt.Sprintf("%d runs in %.0f Everys (%.0f%%), %d round trips (%.2f per run; before: %d), %.0f enlistments per Every (%d dropped by a starved driver); visits that found the run taken %d, a slice running %d; failed %d",
		p.Runs, p.Slots, 100*p.Cadence(), p.Trips, p.TripsPerRun(), p.Warmup, float64(p.Enlisted)/p.Slots, p.Dropped, p.Taken, p.Locked, p.Failed)
}

// Measure settles the fleet (Settle), then drives it for window at the
// same traffic (none at perEvery 0: a quiet fleet, which its pace timers
// run) and counts the window's runs and round trips.
func (f *Fleet) Measure(ctx context.Context, perEvery float64, settle, window time.Duration) Figures {
	f.Settle(ctx, perEvery, settle)
	return f.window(ctx, perEvery, window)
}

// Settle drives the fleet, perEvery enlistments per Every in all, until
// each recruiter has had one and for settle more, so that its pace
// settles.
func (f *Fleet) Settle(ctx context.Context, perEvery float64, settle time.Duration) {
	if perEvery == 0 {
		f.drive(ctx, 0, settle) // no enlistment to wait for
		return
	}
	f.drive(ctx, perEvery, time.Duration(float64(len(f.recs))/perEvery*float64(f.every))+settle)
}

// Track drives the fleet, perEvery enlistments per Every in all, for
// buckets windows of bucket each, one after the other, and returns each
// window's figures: the pace over time, as after a change of size.
func (f *Fleet) Track(ctx context.Context, perEvery float64, bucket time.Duration, buckets int) []Figures {
	var ps []Figures
	for range buckets {
		ps = append(ps, f.window(ctx, perEvery, bucket))
	}
	return ps
}

// window drives the fleet for d and counts the window's runs and round
// trips. A driver starved on a loaded machine drops what is late (see
// drive), so the window ends on time.
func (f *Fleet) window(ctx context.Context, perEvery float64, d time.Duration) Figures {
	began, trips, enlisted, dropped := time.Now(), f.trips.Load(), f.enlisted.Load(), f.dropped.Load()
	p := Figures{Warmup: trips}
	locked, taken, failed := f.outcomes()
	f.drive(ctx, perEvery, d)
	ended := time.Now()
	l, t, e := f.outcomes()
	p.Locked, p.Taken, p.Failed = l-locked, t-taken, e-failed
	p.Enlisted = f.enlisted.Load() - enlisted
	p.Dropped = f.dropped.Load() - dropped
	p.Trips = f.trips.Load() - trips
	p.Slots = float64(ended.Sub(began)) / float64(f.every)
	f.mu.Lock()
	for _, s := range f.starts {
		if !s.Before(began) && s.Before(ended) {
			p.Runs++
		}
	}
	f.mu.Unlock()
	return p
}
