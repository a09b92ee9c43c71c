package recruiter_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/recruiter"
)

// enlistDuring has 8 goroutines enlisting for d, like request handlers,
// and returns the longest any one Enlist took.
func enlistDuring(rec *recruiter.Recruiter, d time.Duration) time.Duration {
	var slowest atomic.Int64
	began := time.Now()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for time.Since(began) < d {
				t0 := time.Now()
				rec.Enlist(context.Background())
				took := int64(time.Since(t0))
				for old := slowest.Load(); took > old && !slowest.CompareAndSwap(old, took); old = slowest.Load() {
				}
				time.Sleep(50 * time.Microsecond)
			}
		})
	}
	wg.Wait()
	return time.Duration(slowest.Load())
}

// faultSetup is a recruiter whose Redis calls would wait up to a second,
// so any Enlist that waited on Redis would stand out from scheduling noise.
func faultSetup(t *testing.T) (*bundle, *atomic.Int32) {
	b := setup(t, recruiter.Config{
		BreakerThreshold: 2,
		BreakerCooldown:  faultBreakerCooldown,
		RedisTimeout:     time.Second,
		MaxConcurrent:    4,
	})
	var runs atomic.Int32
	mustRegister(t, b.rec, recruiter.Func("resilient", func(context.Context) (recruiter.Report, error) {
		runs.Add(1)
		return recruiter.Report{Items: 1, More: true}, nil
	}), recruiter.JobConfig{Rate: 1})
	testrig.Eventually(t, 5*time.Second, "running before the fault", func() bool {
		b.rec.Enlist(context.Background())
		return runs.Load() > 0
	})
	return b, &runs
}

const faultBreakerCooldown = 200 * time.Millisecond

// TestRedisKilledAndRestarted: with Redis gone, Enlist neither blocks nor
// panics, the breaker opens and bounds the connection attempts; once Redis
// is back, jobs run again.
func TestRedisKilledAndRestarted(t *testing.T) {
	t.Parallel()
	b, runs := faultSetup(t)
	b.srv.Kill()
	const outage = time.Second
	slowest := enlistDuring(b.rec, outage)
	stats := b.rec.Stats()
	js := stats.Jobs[0]
	t.Logf("outage of %v: slowest Enlist %v; stats %+v", outage, slowest, js)
	if !stats.BreakerOpen {
		t.Fatal("the breaker is closed after a second of failed connections")
	}
	if slowest > 500*time.Millisecond {
		t.Fatalf("an Enlist took %v while Redis was down: it waited on Redis", slowest)
	}
	// Attempts: the threshold, plus one probe per cooldown, plus the slices
	// already past the gate when the breaker opened (at most MaxConcurrent).
	if limit := uint64(2 + outage/faultBreakerCooldown + 4); js.Errors > limit {
		t.Fatalf("%d lock attempts failed during a %v outage; the breaker should allow at most %d", js.Errors, outage, limit)
	}
	if js.Errors == 0 || !strings.Contains(b.logs.String(), "recruitment paused") {
		t.Fatalf("no failed attempt was counted or logged:\n%s", b.logs)
	}

	b.srv.Restart()
	before := runs.Load()
	testrig.Eventually(t, 10*time.Second, "running again after Redis returned", func() bool {
		b.rec.Enlist(context.Background())
		return runs.Load() > before
	})
	if b.rec.Stats().BreakerOpen {
		t.Fatal("a slice ran but the breaker is still open")
	}
}

// TestRedisPausedEnlistNeverWaits: a Redis that accepts connections but
// never answers (SIGSTOP) costs requests nothing in background mode; the
// breaker opens on the timeouts and jobs resume with Redis.
func TestRedisPausedEnlistNeverWaits(t *testing.T) {
	t.Parallel()
	b, runs := faultSetup(t)
	b.srv.Pause()
	slowest := enlistDuring(b.rec, 1500*time.Millisecond)
	t.Logf("paused Redis: slowest Enlist %v; stats %+v", slowest, b.rec.Stats())
	if slowest > 500*time.Millisecond {
		t.Fatalf("an Enlist took %v while Redis hung: it waited on Redis", slowest)
	}
	testrig.Eventually(t, 5*time.Second, "breaker open on timeouts", func() bool { return b.rec.Stats().BreakerOpen })
	b.srv.Resume()
	before := runs.Load()
	testrig.Eventually(t, 10*time.Second, "running again after Redis resumed", func() bool {
		b.rec.Enlist(context.Background())
		return runs.Load() > before
	})
}

// TestFailingJobs: a job that panics, one that overruns its budget and one
// that returns an error are counted, logged and released, and the caller
// sees none of it.
func TestFailingJobs(t *testing.T) {
	t.Parallel()
	var roll atomic.Value
	roll.Store(0.0)
	clock := newManualClock()
	b := setup(t, recruiter.Hooked(recruiter.Config{Inline: true, Prefix: "failing"}, func() float64 { return roll.Load().(float64) }, clock.Now))
	const budget = 40 * time.Millisecond
	// Each run of the overrunning job: when the Enlist that ran it began,
	// when the job began, its deadline, and when it saw its context end.
	type overrun struct{ enlisted, began, deadline, done time.Time }
	var (
		mu       sync.Mutex
		overruns []overrun
		enlisted atomic.Value // time.Time: when this round's Enlist began
	)
	jobs := []struct {
		job     recruiter.Job
		roll    float64
		logLine string
	}{
		{recruiter.Func("panics", func(context.Context) (recruiter.Report, error) {
			panic("boom")
		}), 0.1, "slice panicked"},
		{recruiter.Func("overruns", func(ctx context.Context) (recruiter.Report, error) {
			o := overrun{enlisted: enlisted.Load().(time.Time), began: time.Now()}
			o.deadline, _ = ctx.Deadline()
			<-ctx.Done()
			o.done = time.Now()
			mu.Lock()
			overruns = append(overruns, o)
			mu.Unlock()
			time.Sleep(budget) // ignores its deadline: must count as a timeout
			return recruiter.Report{Items: 2}, nil
		}), 0.4, "slice timed out"},
		{recruiter.Func("fails", func(context.Context) (recruiter.Report, error) {
			return recruiter.Report{}, errors.New("disk on fire")
		}), 0.7, "slice failed"},
	}
	for _, j := range jobs {
		mustRegister(t, b.rec, j.job, recruiter.JobConfig{Rate: 0.3, Budget: budget})
	}
	ctx := context.Background()
	for round := range 2 {
		for _, j := range jobs {
			roll.Store(j.roll)
			enlisted.Store(time.Now())
			b.rec.Enlist(ctx) // must not panic
			if v, err := b.rdb.Exists(ctx, "failing:lock:"+j.job.Name()).Result(); err != nil || v != 0 {
				t.Fatalf("round %d: %s left its lock behind (%v)", round, j.job.Name(), err)
			}
		}
		clock.Advance(time.Second) // past the rest after each slice
	}
	// The deadline is the budget from the slice's start: between the
	// Enlist that ran it and the job's first line, whatever the scheduler
	// did in between (a fixed window around the budget failed on a loaded
	// machine). Its context ends at the deadline, not before, and not
	// only once the job returns: the job waits for it before returning,
	// so "on time" is bounded by a margin for the scheduler alone, a
	// second, well short of anything but the deadline's own timer.
	mu.Lock()
	defer mu.Unlock()
	if len(overruns) != 2 {
		t.Errorf("the overrunning job ran %d times, want 2", len(overruns))
	}
	for _, o := range overruns {
		if o.deadline.Before(o.enlisted.Add(budget)) || o.deadline.After(o.began.Add(budget)) {
			t.Errorf("the overrunning job's deadline is %v after its Enlist began and %v after the job began, want its budget %v from the slice's start",
				o.deadline.Sub(o.enlisted), o.deadline.Sub(o.began), budget)
		}
		if late := o.done.Sub(o.deadline); late < 0 || late > time.Second {
			t.Errorf("the overrunning job's context ended %v after its deadline, want at the deadline", late)
		}
	}
	check := func(name string, got, want uint64) {
		if got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	check("panics.Panics", jobStats(t, b.rec, "panics").Panics, 2)
	check("overruns.Timeouts", jobStats(t, b.rec, "overruns").Timeouts, 2)
	check("overruns.Items", jobStats(t, b.rec, "overruns").Items, 4)
	check("fails.Errors", jobStats(t, b.rec, "fails").Errors, 2)
	for _, j := range jobs {
		js := jobStats(t, b.rec, j.job.Name())
		check(j.job.Name()+".Ran", js.Ran, 0)
		check(j.job.Name()+".Slices", js.Slices, 2)
		if n := b.logs.count(`msg="worksteal: ` + j.logLine + `" job=` + j.job.Name()); n != 2 {
			t.Errorf("%q logged %d times for %s, want 2; logs:\n%s", j.logLine, n, j.job.Name(), b.logs)
		}
	}
	if !strings.Contains(b.logs.String(), "boom") || !strings.Contains(b.logs.String(), "disk on fire") {
		t.Errorf("the panic value or the error is missing from the logs:\n%s", b.logs)
	}
}

// TestShutdownWaitsForSliceInFlight: Shutdown returns only after the slice
// in flight has ended; then nothing runs, and a second Shutdown is a no-op.
func TestShutdownWaitsForSliceInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t, recruiter.Config{})
	started, release := make(chan struct{}), make(chan struct{})
	var finished atomic.Bool
	var runs atomic.Int32
	mustRegister(t, b.rec, recruiter.Func("slow", func(context.Context) (recruiter.Report, error) {
		if runs.Add(1) == 1 {
			close(started)
			<-release
		}
		finished.Store(true)
		return recruiter.Report{More: true}, nil
	}), recruiter.JobConfig{Rate: 1, Budget: 5 * time.Second})
	ctx := context.Background()
	b.rec.Enlist(ctx)
	<-started

	expired, cancel := context.WithCancel(ctx)
	cancel()
	if err := b.rec.Shutdown(expired); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown with a done context and a slice in flight = %v, want context.Canceled", err)
	}
	shutdownDone := make(chan error, 1)
	go func() { shutdownDone <- b.rec.Shutdown(ctx) }()
	// Shutdown has begun once registration is refused; a Shutdown that did
	// not wait would return at once after that.
	testrig.Eventually(t, 5*time.Second, "shutting down", func() bool {
		return errors.Is(b.rec.Register(recruiter.Func("late", noop), recruiter.JobConfig{Rate: 0.01}), recruiter.ErrClosed)
	})
	select {
	case err := <-shutdownDone:
		t.Fatalf("Shutdown returned %v while a slice was in flight", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-shutdownDone; err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
	if !finished.Load() {
		t.Fatal("Shutdown returned before the slice in flight finished")
	}
	for range 100 {
		b.rec.Enlist(ctx)
	}
	if d := b.rec.Draw(); d.Recruited() {
		t.Fatal("a draw after Shutdown was recruited")
	}
	if err := b.rec.Shutdown(ctx); err != nil {
		t.Fatalf("second Shutdown = %v", err)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the job ran %d times, want only the slice in flight at Shutdown", n)
	}
}

// TestPaceTimerRunsAQuietProcess: with no enlistment at all, the pace
// timer runs each automatically paced job about once per Every, never
// more than once per slot, and a job with a fixed Rate not at all: it is a
// share of enlistments. With TrafficOnly, nothing runs.
func TestPaceTimerRunsAQuietProcess(t *testing.T) {
	t.Parallel()
	const every = 100 * time.Millisecond
	for _, trafficOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("TrafficOnly %v", trafficOnly), func(t *testing.T) {
			t.Parallel()
			b := setup(t, recruiter.Config{TrafficOnly: trafficOnly})
			var runs [3]atomic.Int32
			for i, name := range []string{"nightly-a", "nightly-b", "fixed"} {
				cfg := recruiter.JobConfig{Every: every}
				if name == "fixed" {
					cfg = recruiter.JobConfig{Rate: 0.5, Every: every}
				}
				mustRegister(t, b.rec, recruiter.Func(name, func(context.Context) (recruiter.Report, error) {
					runs[i].Add(1)
					return recruiter.Report{Items: 1}, nil
				}), cfg)
			}
			if trafficOnly {
				// A span of time in which a timer would have run the jobs
				// ten times over, not a wait for an event.
				time.Sleep(10 * every)
				for i := range runs {
					if n := runs[i].Load(); n != 0 {
						t.Errorf("job %d ran %d times with TrafficOnly and no traffic, want 0", i, n)
					}
				}
				return
			}
			testrig.Eventually(t, 10*time.Second, "both paced jobs run three times without traffic", func() bool {
				return runs[0].Load() >= 3 && runs[1].Load() >= 3
			})
			// Over a window, each runs at most once per slot (plus the
			// slot it began in). A loaded machine only delays the timer,
			// so the upper bound holds however slow it is.
			var before [2]int32
			for i := range before {
				before[i] = runs[i].Load()
			}
			const window = time.Second
			time.Sleep(window) // a span of time to count runs in, not a wait for an event
			for i := range before {
				if n := runs[i].Load() - before[i]; n > int32(window/every)+2 {
					t.Errorf("job %d ran %d times in %v at Every %v, want at most %d", i, n, window, every, window/every+2)
				}
				js := jobStats(t, b.rec, []string{"nightly-a", "nightly-b"}[i])
				if js.Drawn != 0 || js.Timed == 0 || js.Ran < 3 || js.Ran > js.Timed {
					t.Errorf("stats %+v: want no draw, and every run started by the timer", js)
				}
			}
			if n := runs[2].Load(); n != 0 {
				t.Errorf("the fixed-rate job ran %d times without traffic, want 0", n)
			}
		})
	}
}

// TestPaceTimerContinuesABacklog: without traffic, a slice that reports
// More is followed by the next one at its backlog's pace (Every/2, /4, …:
// about 4.5 s for five slices at Every 4s), not once per Every (16 s),
// and the backlog drains.
func TestPaceTimerContinuesABacklog(t *testing.T) {
	t.Parallel()
	b := setup(t, recruiter.Config{})
	var left atomic.Int32
	left.Store(5)
	mustRegister(t, b.rec, recruiter.Func("backlog", func(context.Context) (recruiter.Report, error) {
		n := left.Add(-1)
		return recruiter.Report{Items: 1, More: n > 0}, nil
	}), recruiter.JobConfig{Every: 4 * time.Second})
	testrig.Eventually(t, 12*time.Second, "the backlog drained by the pace timer", func() bool {
		return jobStats(t, b.rec, "backlog").Items == 5
	})
	if js := jobStats(t, b.rec, "backlog"); js.Slices != 5 || js.Drawn != 0 || js.Timed < 5 || left.Load() != 0 {
		t.Fatalf("stats %+v, want 5 timed slices, no draws", js)
	}
}

// TestOverrunningSliceKeepsItsLock: a job that ignores its context past
// its lock's TTL keeps the lock while it runs, so no other process starts
// the job beside it.
//
// The budget sets the slack of the lock's first extension: it is sent
// halfway between the budget and the lock's expiry, so it has a quarter
// of the budget (at least 125ms) to reach Redis. A budget of 2s gives it
// 500ms; with 10ms, one late timer on a loaded machine let the lock lapse.
func TestOverrunningSliceKeepsItsLock(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const budget = 2 * time.Second
	// Past the lock's TTL, short of twice it (hung: see
	// TestHungJobFreesItsSlotAndHoldsItsJob).
	overrun := recruiter.LockTTL(budget) * 3 / 2
	var running, overlaps, runs atomic.Int32
	job := recruiter.Func("stubborn", func(context.Context) (recruiter.Report, error) {
		if running.Add(1) > 1 {
			overlaps.Add(1)
		}
		runs.Add(1)
		time.Sleep(overrun) // ignores its context
		running.Add(-1)
		return recruiter.Report{}, nil
	})
	logs := &logBuffer{}
	first := newRecruiter(t, srv.Client(t), recruiter.Config{Prefix: "stubborn"}, logs)
	second := newRecruiter(t, srv.Client(t), recruiter.Config{Prefix: "stubborn"}, nil)
	mustRegister(t, first, job, recruiter.JobConfig{Rate: 1, Budget: budget})
	mustRegister(t, second, job, recruiter.JobConfig{Rate: 1, Budget: budget})
	first.Enlist(context.Background())
	testrig.Eventually(t, 5*time.Second, "the first slice running", func() bool { return running.Load() == 1 })
	for running.Load() == 1 { // until the first returns, or a second starts beside it
		second.Enlist(context.Background())
		time.Sleep(time.Millisecond)
	}
	shutdown(t, first, second)
	if overlaps.Load() != 0 || runs.Load() != 1 {
		t.Fatalf("%d runs, %d overlapping: the second process ran the job while the first overran", runs.Load(), overlaps.Load())
	}
	if !strings.Contains(logs.String(), "its lock is extended") {
		t.Fatalf("no warning about the overrun:\n%s", logs)
	}
	// A sleep on a loaded machine may run past the hung bound.
	if js := jobStats(t, first, "stubborn"); js.Timeouts+js.Hung != 1 {
		t.Fatalf("first: %+v, want one timeout", js)
	}
}

// TestCooldownWithoutExpiry: a cooldown key an operator set without a TTL
// (to pause a job) still bounds this process's Redis traffic.
func TestCooldownWithoutExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t, recruiter.Config{Inline: true, Prefix: "paused"})
	var runs atomic.Int32
	mustRegister(t, b.rec, recruiter.Func("paused", func(context.Context) (recruiter.Report, error) {
		runs.Add(1)
		return recruiter.Report{}, nil
	}), recruiter.JobConfig{Rate: 1})
	ctx := context.Background()
	b.rdb.Set(ctx, "paused:lock:paused", "cooldown", 0)
	before := b.srv.CommandCalls(t, "evalsha") + b.srv.CommandCalls(t, "eval")
	for range 1000 {
		b.rec.Enlist(ctx)
	}
	calls := b.srv.CommandCalls(t, "evalsha") + b.srv.CommandCalls(t, "eval") - before
	if runs.Load() != 0 || calls > 4 {
		t.Fatalf("a paused job: %d runs and %d script calls for 1000 enlistments, want 0 runs and at most 4 calls", runs.Load(), calls)
	}
	if js := jobStats(t, b.rec, "paused"); js.SkippedCooldown != 1 {
		t.Fatalf("stats %+v, want one skipped_cooldown", js)
	}
}

// TestJobsOwnDeadlineIsNotATimeout: a job whose own shorter deadline
// expires inside its budget has failed, not timed out.
func TestJobsOwnDeadlineIsNotATimeout(t *testing.T) {
	t.Parallel()
	b := setup(t, recruiter.Config{Inline: true})
	mustRegister(t, b.rec, recruiter.Func("impatient", func(ctx context.Context) (recruiter.Report, error) {
		ctx, cancel := context.WithTimeout(ctx, time.Millisecond)
		defer cancel()
		<-ctx.Done()
		return recruiter.Report{}, ctx.Err()
	}), recruiter.JobConfig{Rate: 1, Budget: time.Second})
	b.rec.Enlist(context.Background())
	if js := jobStats(t, b.rec, "impatient"); js.Errors != 1 || js.Timeouts != 0 {
		t.Fatalf("stats %+v, want an error, not a timeout", js)
	}
}
