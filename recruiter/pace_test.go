package recruiter_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/recruiter"
)

// paceFleet is n recruiters in one process, standing for n processes: they
// share a few clients of one redis-server and one job, paced automatically.
type paceFleet struct {
	recs     []*recruiter.Recruiter
	every    time.Duration
	trips    redistest.RoundTrips // every recruiter's round trips
	fresh    atomic.Int64         // recruiters that have had their first enlistment
	enlisted atomic.Int64         // enlistments made

	mu     sync.Mutex
	starts []time.Time // of the job's slices, fleet-wide
}

// newPaceFleet starts n recruiters with a job "tidy" at Every every and no
// Rate, on clients clients of srv.
func newPaceFleet(tb testing.TB, srv *redistest.Server, n, clients int, every time.Duration) *paceFleet {
	tb.Helper()
	f := &paceFleet{every: every}
	rdbs := make([]*redis.Client, clients)
	for i := range rdbs {
		rdbs[i] = redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 8})
		rdbs[i].AddHook(&f.trips)
		tb.Cleanup(func() { rdbs[i].Close() })
	}
	prefix := redistest.Prefix(tb)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	job := recruiter.Func("tidy", func(context.Context) (recruiter.Report, error) {
		f.mu.Lock()
		f.starts = append(f.starts, time.Now())
		f.mu.Unlock()
		return recruiter.Report{Items: 1}, nil
	})
	for i := range n {
		rec, err := recruiter.New(rdbs[i%clients], recruiter.Config{Inline: true, Prefix: prefix, Logger: quiet, Pressure: -1})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := rec.Shutdown(ctx); err != nil {
				tb.Errorf("Shutdown: %v", err)
			}
		})
		if err := rec.Register(job, recruiter.JobConfig{Every: every}); err != nil {
			tb.Fatal(err)
		}
		f.recs = append(f.recs, rec)
	}
	return f
}

// drive enlists at random recruiters, perEvery times per Every in all, for
// d, from a few goroutines on an open-loop schedule (a late one catches
// up rather than lowering the rate). The first enlistments go to the
// recruiters that have had none, one each, as a fleet's first requests
// reach processes that have just started.
func (f *paceFleet) drive(ctx context.Context, perEvery float64, d time.Duration) {
	const workers = 8
	interval := time.Duration(float64(f.every) / perEvery * workers)
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			next := time.Now().Add(time.Duration(w) * interval / workers)
			for next.Before(end) {
				if wait := time.Until(next); wait > 0 {
					time.Sleep(wait)
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

// paceFigures is what a window of a fleet's run shows.
type paceFigures struct {
	slots  float64 // the window's length in Everys
	runs   int     // slices that began in the window
	trips  int64   // round trips in the window, fleet-wide
	enlist int64   // enlistments in the window
	warmup int64   // round trips before the window, as the fleet started and its pace settled
}

func (p paceFigures) cadence() float64     { return float64(p.runs) / p.slots }
func (p paceFigures) tripsPerRun() float64 { return float64(p.trips) / float64(max(p.runs, 1)) }
func (p paceFigures) String() string {
	return fmt.Sprintf("%d runs in %.0f Everys (%.0f%%), %d round trips (%.2f per run; before: %d), %.0f enlistments per Every",
		p.runs, p.slots, 100*p.cadence(), p.trips, p.tripsPerRun(), p.warmup, float64(p.enlist)/p.slots)
}

// measure drives the fleet until each recruiter has had an enlistment
// and for settle more, so that its pace settles, then for window, and
// counts the window's runs and round trips.
func (f *paceFleet) measure(perEvery float64, settle, window time.Duration) paceFigures {
	ctx := context.Background()
	f.drive(ctx, perEvery, time.Duration(float64(len(f.recs))/perEvery*float64(f.every))+settle)
	began, trips, enlisted := time.Now(), f.trips.Load(), f.enlisted.Load()
	p := paceFigures{warmup: trips}
	f.drive(ctx, perEvery, window)
	// The window ends when its traffic does: a driver that fell behind on
	// a loaded machine catches up after window.
	ended := time.Now()
	p.enlist = f.enlisted.Load() - enlisted
	p.trips = f.trips.Load() - trips
	p.slots = float64(ended.Sub(began)) / float64(f.every)
	f.mu.Lock()
	for _, s := range f.starts {
		if !s.Before(began) && s.Before(ended) {
			p.runs++
		}
	}
	f.mu.Unlock()
	return p
}

// TestAutomaticPace: a job with Every and no Rate runs in at least 85 % of
// the window's Everys and never more than window/Every + 1, for at most 4
// round trips per run fleet-wide, from 1 recruiter to 1,000, at ten
// enlistments per Every in all and at five per second each (the issue's
// measurement: 2,020 round trips per run with Rate 1).
//
// Not parallel with the package's other tests: its figures are counts, but
// a starved driver would not make the traffic it names.
func TestAutomaticPace(t *testing.T) {
	srv := redistest.Start(t)
	const every = 500 * time.Millisecond
	for _, c := range []struct {
		recruiters int
		perEvery   float64
	}{
		{1, 10},
		{100, 10},
		{1000, 2500},
	} {
		t.Run(fmt.Sprintf("%d recruiters, %.0f enlistments per Every", c.recruiters, c.perEvery), func(t *testing.T) {
			t.Parallel()
			f := newPaceFleet(t, srv, c.recruiters, 4, every)
			p := f.measure(c.perEvery, 30*every, 120*every)
			t.Log(p)
			if p.cadence() < 0.85 || float64(p.runs) > p.slots+1 {
				t.Errorf("%v: want at least 85%% of the Everys, and at most one more than them", p)
			}
			if p.tripsPerRun() > 4 {
				t.Errorf("%v: want at most 4 round trips per run", p)
			}
		})
	}
}
