package jobs_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// backlogSlice is one slice of the drain, as the fleet ran it.
type backlogSlice struct {
	began time.Time
	items int
	more  bool
}

// backlogFleet is processes recruiters in one test process, standing for
// that many web servers: each with its own Redis client, queue and Drain
// of one queue "work", paced automatically (Every, no Rate). Their round
// trips, the drain's and the recruiters', are counted together.
type backlogFleet struct {
	recs  []*recruiter.Recruiter
	trips redistest.RoundTrips

	mu     sync.Mutex
	slices []backlogSlice
}

func newBacklogFleet(t *testing.T, srv *redistest.Server, prefix string, processes int, every time.Duration, handler jobs.Handler, cfg jobs.DrainConfig) *backlogFleet {
	t.Helper()
	f := &backlogFleet{}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for range processes {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		rdb.AddHook(&f.trips)
		t.Cleanup(func() { rdb.Close() })
		drain := mustDrain(t, newQueue(t, rdb, "work", queue.Config{Prefix: prefix}), handler, cfg)
		job := recruiter.Func(drain.Name(), func(ctx context.Context) (recruiter.Report, error) {
			began := time.Now()
			rep, err := drain.Run(ctx)
			f.mu.Lock()
			f.slices = append(f.slices, backlogSlice{began: began, items: rep.Items, more: rep.More})
			f.mu.Unlock()
			return rep, err
		})
		// The pressure gate is off: it reads the test process's scheduler,
		// which the producer, the drivers and the sampler share with the
		// three "processes".
		rec := newRecruiterOn(t, rdb, recruiter.Config{Prefix: prefix, Logger: quiet, Pressure: -1})
		if err := rec.Register(job, recruiter.JobConfig{Every: every}); err != nil {
			t.Fatal(err)
		}
		f.recs = append(f.recs, rec)
	}
	return f
}

// newRecruiterOn makes a recruiter shut down (and checked to shut down
// cleanly) at cleanup.
func newRecruiterOn(t *testing.T, rdb redis.UniversalClient, cfg recruiter.Config) *recruiter.Recruiter {
	t.Helper()
	rec, err := recruiter.New(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rec.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return rec
}

// between returns the slices that began in [from, to): how many, their
// items, and how many reported More.
func (f *backlogFleet) between(from, to time.Time) (slices, items, more int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.slices {
		if !s.began.Before(from) && s.began.Before(to) {
			slices++
			items += s.items
			if s.more {
				more++
			}
		}
	}
	return slices, items, more
}

// openLoop calls do perSecond times a second until ctx ends, on a fixed
// schedule: a late call is caught up, not dropped, so a slow do does not
// lower the rate.
func openLoop(ctx context.Context, perSecond float64, do func()) {
	interval := time.Duration(float64(time.Second) / perSecond)
	for next := time.Now(); ctx.Err() == nil; next = next.Add(interval) {
		if wait := time.Until(next); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		do()
	}
}

// TestDrainKeepsUpWithItsProducer: a producer enqueues 1,000 items/s, a
// fleet of three processes has 500 fast exits/s in all, and Drain runs
// with Every: 1s and no Rate. A slice drains one batch of 100 items at
// most, so once per Every would fall behind by nine tenths of the
// production. (A bound in items rather than in the handler's CPU time
// keeps the demonstration about pace, not about how busy the machine is.) Slices that report More continue
// the backlog sooner, and the queue's depth stays under two seconds of
// production; once the producer stops, the drain empties the queue and
// falls back to about one slice per Every.
//
// Not parallel with the package's other tests: its figures are rates and
// depths, which a starved producer or driver would not make.
func TestDrainKeepsUpWithItsProducer(t *testing.T) {
	const (
		processes = 3
		every     = time.Second
		produce   = 1000 // items/s
		fastExits = 500  // per second, fleet-wide
		batch     = 100  // items a slice drains at most
		warmup    = 3 * time.Second
		window    = 20 * time.Second
		depthMax  = 2 * produce // two seconds of production
	)
	srv := redistest.Start(t)
	prefix := testPrefix(t)
	f := newBacklogFleet(t, srv, prefix, processes, every, func(context.Context, queue.Item) ([]byte, error) {
		return nil, nil
	}, jobs.DrainConfig{Batching: jobs.Batching{Batch: batch, MaxBatches: 1}})
	observer := newQueue(t, srv.Client(t), "work", queue.Config{Prefix: prefix})
	producer := newQueue(t, srv.Client(t), "work", queue.Config{Prefix: prefix})

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	// Fast exits: each process gets its share, as requests that ended (a
	// done context: the slice starts at once, in the background).
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, rec := range f.recs {
		wg.Go(func() { openLoop(ctx, fastExits/processes, func() { rec.Enlist(ended) }) })
	}
	// The producer: ten items every 10ms.
	producing, stopProducing := context.WithCancel(ctx)
	defer stopProducing()
	payload := make([][]byte, 10)
	for i := range payload {
		payload[i] = []byte("an item")
	}
	var produced int
	wg.Go(func() {
		openLoop(producing, produce/10, func() {
			if _, err := producer.EnqueueBatch(ctx, payload); err != nil {
				t.Errorf("EnqueueBatch: %v", err)
				return
			}
			produced += len(payload)
		})
	})
	defer wg.Wait()

	began := time.Now()
	measureFrom, measureTo := began.Add(warmup), began.Add(warmup+window)
	// The depth, pending and leased, sampled every 25ms of the window.
	time.Sleep(time.Until(measureFrom))
	trips := f.trips.Load()
	var (
		maxDepth int64
		maxAt    time.Duration
		samples  int
	)
	for now := time.Now(); now.Before(measureTo); now = time.Now() {
		d := mustDepth(t, observer)
		if depth := d.Pending + d.Leased; depth > maxDepth {
			maxDepth, maxAt = depth, now.Sub(measureFrom)
		}
		samples++
		time.Sleep(25 * time.Millisecond)
	}
	trips = f.trips.Load() - trips
	stopProducing()
	stoppedAt := time.Now()
	slices, items, more := f.between(measureFrom, measureTo)
	secs := window.Seconds()
	t.Logf("backlog: max depth %d (at %.1fs of the window, %d samples); %d slices in %.0fs (%.2f/s, %d reported More), %d items (%.0f/s), %d round trips (%.3f per item)",
		maxDepth, maxAt.Seconds(), samples, slices, secs, float64(slices)/secs, more, items, float64(items)/secs, trips, float64(trips)/float64(max(items, 1)))
	if maxDepth >= depthMax {
		t.Errorf("the queue's depth reached %d, want under %d (two seconds of production)", maxDepth, depthMax)
	}

	// The producer has stopped: the drain empties the queue, and its pace
	// falls back to about one slice per Every once slices find nothing.
	var emptied time.Time
	for deadline := stoppedAt.Add(10 * time.Second); ; {
		d := mustDepth(t, observer)
		if d.Pending+d.Leased == 0 {
			emptied = time.Now()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queue still holds %+v 10s after the producer stopped", d)
		}
		time.Sleep(25 * time.Millisecond)
	}
	// A slice or two may still have found the last items; then each finds nothing.
	const settle, idle = every, 6 * every
	time.Sleep(settle + idle)
	stop()
	wg.Wait()
	idleSlices, idleItems, idleMore := f.between(emptied.Add(settle), emptied.Add(settle+idle))
	t.Logf("after: produced %d; emptied %.1fs after the producer stopped; then %d slices in %.0fs (%.2f/s; %d items, %d reported More)",
		produced, emptied.Sub(stoppedAt).Seconds(), idleSlices, idle.Seconds(), float64(idleSlices)/idle.Seconds(), idleItems, idleMore)
	// About one per Every: at most one per slot (idle/every + 1), and some.
	if idleSlices > int(idle/every)+1 || idleSlices < 2 {
		t.Errorf("%d slices in %v once the queue was empty, want from 2 to %d (about one per Every)", idleSlices, idle, int(idle/every)+1)
	}
}
