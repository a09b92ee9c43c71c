package recruiter_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/recruiter"
	"github.com/worksteal/worksteal/telemetry"
)

// TestInlineFinishStartsAtOnce: in inline mode Finish runs the slice
// before it returns, although the request's context is still open (its
// Done channel closes only after the handler returns): it must not stall.
func TestInlineFinishStartsAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, recruiter.Config{Inline: true})
	var runs atomic.Int32
	mustRegister(t, b.rec, recruiter.Func("inline", func(context.Context) (recruiter.Report, error) {
		runs.Add(1)
		return recruiter.Report{}, nil
	}), recruiter.JobConfig{Rate: 1})

	open, cancel := context.WithCancel(context.Background()) // a request still being served
	defer cancel()
	began := time.Now()
	b.rec.Draw().Enlist(open, func() error { return nil })
	// Before the fix this waited for done for 5s; a loaded machine takes
	// milliseconds at most.
	if took := time.Since(began); runs.Load() != 1 || took > 2*time.Second {
		t.Fatalf("Finish returned after %v with %d runs; want the slice run at once", took, runs.Load())
	}
}

// TestNilContextIsReportedNotFatal: a nil context is the caller's bug, but
// in background mode it would panic on the recruiter's own goroutine,
// where nothing can recover it. It is dismissed, logged once and counted.
func TestNilContextIsReportedNotFatal(t *testing.T) {
	t.Parallel()
	for _, inline := range []bool{false, true} {
		b := setup(t, recruiter.Config{Inline: inline})
		var runs atomic.Int32
		mustRegister(t, b.rec, recruiter.Func("nilctx", func(context.Context) (recruiter.Report, error) {
			runs.Add(1)
			return recruiter.Report{}, nil
		}), recruiter.JobConfig{Rate: 1})

		var nilCtx context.Context
		b.rec.Enlist(nilCtx)
		b.rec.Draw().Enlist(nilCtx, nil)
		b.rec.Draw().Enlist(nilCtx, func() error { return nil })
		shutdown(t, b.rec) // waits for any slice a nil context might have started

		if got := b.rec.Stats().Misuses; got != 3 {
			t.Errorf("inline=%v: Stats.Misuses = %d, want 3", inline, got)
		}
		if runs.Load() != 0 {
			t.Errorf("inline=%v: %d slices ran on a nil context, want 0", inline, runs.Load())
		}
		if n := b.logs.count("nil context"); n != 1 {
			t.Errorf("inline=%v: %d log lines about the nil context, want 1 (logged once):\n%s", inline, n, b.logs)
		}
	}
}

// TestHungJobFreesItsSlotAndHoldsItsJob: two processes with one slot each,
// a job that never returns and one that does, about 200 enlistments/s.
// The hung run must free its slot (the other job goes on running in its
// process), while its job stays taken fleet-wide for as long as the run
// lives: past the old guard's give-up of 10 lock lives, no second copy
// starts. It shows in Stats, in the log and as a span outcome, and once it
// returns the job runs again.
func TestHungJobFreesItsSlotAndHoldsItsJob(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	const budget = 20 * time.Millisecond
	release := make(chan struct{})
	var stuckStarts, stuckRunning, stuckOverlaps atomic.Int32
	stuck := recruiter.Func("stuck", func(context.Context) (recruiter.Report, error) {
		stuckStarts.Add(1)
		if stuckRunning.Add(1) > 1 {
			stuckOverlaps.Add(1)
		}
		defer stuckRunning.Add(-1)
		<-release // ignores its context
		return recruiter.Report{}, nil
	})
	okRuns := [2]*atomic.Int32{{}, {}}
	logs := [2]*logBuffer{{}, {}}
	var recs [2]*recruiter.Recruiter
	for i := range recs {
		recs[i] = newRecruiter(t, srv.Client(t), recruiter.Config{Prefix: "hung", MaxConcurrent: 1, TracerProvider: tp}, logs[i])
		mustRegister(t, recs[i], stuck, recruiter.JobConfig{Rate: 0.5, Budget: budget})
		mustRegister(t, recs[i], recruiter.Func("ok", func(context.Context) (recruiter.Report, error) {
			okRuns[i].Add(1)
			return recruiter.Report{}, nil
		}), recruiter.JobConfig{Rate: 0.5, Budget: budget})
	}
	// Whichever process holds the stuck job would, before the fix, run
	// nothing else; the guard gave up after 10 lock lives, and the other
	// process then started the job beside it.
	window := 10*recruiter.LockTTL(budget) + 2*time.Second
	ctx, stop := context.WithTimeout(context.Background(), window)
	defer stop()
	for i := range recs {
		go func() {
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					recs[i].Enlist(context.Background())
				}
			}
		}()
	}
	testrig.Eventually(t, 10*time.Second, "the stuck job declared hung", func() bool {
		return jobStats(nil, recs[0], "stuck").Hung+jobStats(nil, recs[1], "stuck").Hung > 0
	})
	holder := 0
	if jobStats(t, recs[1], "stuck").Hung > 0 {
		holder = 1
	}
	okBefore := okRuns[holder].Load()
	<-ctx.Done()
	okAfter := okRuns[holder].Load()

	if n := stuckStarts.Load(); n != 1 || stuckOverlaps.Load() != 0 {
		t.Errorf("the stuck job started %d times (%d overlapping) in %v; want once, held fleet-wide while it lives\n%s\n%s", n, stuckOverlaps.Load(), window, logs[0], logs[1])
	}
	if okAfter-okBefore < 3 {
		t.Errorf("the holder's other job ran %d times after the stuck one was declared hung; want its slot back", okAfter-okBefore)
	}
	// Only the stuck job's own records count: on a loaded machine even an
	// "ok" slice may outlive the hung bound, and is rightly called hung.
	st := recs[holder].Stats()
	if st.Hanging < 1 || jobStats(t, recs[holder], "stuck").Hung != 1 {
		t.Errorf("holder stats: hanging %d, stuck hung %d; want at least 1, and 1", st.Hanging, jobStats(t, recs[holder], "stuck").Hung)
	}
	if n := logs[holder].lines("slice hung", "job=stuck"); n != 1 {
		t.Errorf("%d log lines about the stuck slice hanging, want 1:\n%s", n, logs[holder])
	}
	hungSpans := 0
	for _, s := range spans.Ended() {
		attrs := attribute.NewSet(s.Attributes()...)
		job, _ := attrs.Value(telemetry.AttrJob)
		outcome, _ := attrs.Value(telemetry.AttrOutcome)
		if job.AsString() == "stuck" && outcome.AsString() == string(telemetry.OutcomeHung) {
			hungSpans++
		}
	}
	if hungSpans != 1 {
		t.Errorf("%d spans of the stuck job with outcome hung, want 1", hungSpans)
	}

	// Once it returns, the job is free again, here and in Redis.
	close(release)
	testrig.Eventually(t, 10*time.Second, "the hung slice returned", func() bool { return recs[holder].Stats().Hanging == 0 })
	testrig.Eventually(t, 10*time.Second, "the job run again", func() bool {
		recs[holder].Enlist(context.Background())
		return stuckStarts.Load() > 1
	})
	if logs[holder].lines("hung slice returned", "job=stuck") != 1 {
		t.Errorf("want one log line about the hung slice's return:\n%s", logs[holder])
	}
}

// TestShutdownWaitsForAHungSlice: a hung slice has its slot back, but
// Shutdown still waits for it (or for its ctx, whose error it returns), so
// that no goroutine and no lock guard of ours outlives a clean Shutdown.
func TestShutdownWaitsForAHungSlice(t *testing.T) {
	t.Parallel()
	b := setup(t, recruiter.Config{})
	release := make(chan struct{})
	mustRegister(t, b.rec, recruiter.Func("stuck", func(context.Context) (recruiter.Report, error) {
		<-release // ignores its context
		return recruiter.Report{}, nil
	}), recruiter.JobConfig{Rate: 1, Budget: 10 * time.Millisecond})
	b.rec.Enlist(context.Background())
	testrig.Eventually(t, 10*time.Second, "the slice hung", func() bool { return b.rec.Stats().Hanging == 1 })

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := b.rec.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown with a hung slice = %v, want its ctx's deadline", err)
	}
	close(release)
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.rec.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown once the hung slice returned = %v", err)
	}
	if st := b.rec.Stats(); st.Hanging != 0 {
		t.Fatalf("Hanging %d after Shutdown, want 0", st.Hanging)
	}
}
