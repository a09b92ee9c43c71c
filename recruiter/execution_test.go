package recruiter_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/recruiter"
)

type ctxKey struct{}

// TestSliceOutlivesTheRequest: the slice keeps the request context's
// values but not its cancellation, and its deadline is its budget.
func TestSliceOutlivesTheRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, recruiter.Config{})
	type seen struct {
		value       any
		errAtStart  error
		deadline    time.Time
		hasDeadline bool
		at          time.Time
	}
	got := make(chan seen, 1)
	proceed := make(chan struct{})
	// The budget is long enough that the slice's own deadline cannot pass
	// while the test goroutine is descheduled between Enlist and close
	// (with 200ms it could on a loaded machine, and look like the
	// request's cancellation); the deadline is checked exactly below.
	const budget = 5 * time.Second
	mustRegister(t, b.rec, recruiter.Func("outlives", func(ctx context.Context) (recruiter.Report, error) {
		<-proceed // the request has been cancelled by now
		d, ok := ctx.Deadline()
		got <- seen{ctx.Value(ctxKey{}), ctx.Err(), d, ok, time.Now()}
		return recruiter.Report{}, nil
	}), recruiter.JobConfig{Rate: 1, Budget: budget})

	reqCtx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "request-scoped"))
	enlisted := time.Now()
	b.rec.Enlist(reqCtx) // background: returns before the slice runs
	cancel()             // the response is done
	close(proceed)
	s := <-got
	if s.value != "request-scoped" {
		t.Errorf("the slice saw value %v, want the request's", s.value)
	}
	if s.errAtStart != nil {
		t.Errorf("the slice's context was done (%v) when the request was cancelled", s.errAtStart)
	}
	// The budget from the slice's start, which lies between the Enlist
	// and the job's look at its context.
	if !s.hasDeadline || s.deadline.Before(enlisted.Add(budget)) || s.deadline.After(s.at.Add(budget)) {
		t.Errorf("the slice's deadline is %v after the Enlist (set: %v), want its budget %v from the slice's start",
			s.deadline.Sub(enlisted), s.hasDeadline, budget)
	}
}

// TestConcurrencyBound: with all slots busy, enlistments are dismissed at
// once, never queued.
func TestConcurrencyBound(t *testing.T) {
	t.Parallel()
	b := setup(t, recruiter.Config{MaxConcurrent: 2})
	release := make(chan struct{})
	var running, peak atomic.Int32
	var runs atomic.Int32
	job := func(context.Context) (recruiter.Report, error) {
		n := running.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		runs.Add(1)
		<-release
		running.Add(-1)
		return recruiter.Report{More: true}, nil
	}
	// Two jobs, so the lock is not what limits them.
	mustRegister(t, b.rec, recruiter.Func("first", job), recruiter.JobConfig{Rate: 0.5, Budget: 5 * time.Second})
	mustRegister(t, b.rec, recruiter.Func("second", job), recruiter.JobConfig{Rate: 0.5, Budget: 5 * time.Second})
	ctx := context.Background()
	testrig.Eventually(t, 5*time.Second, "both slots busy", func() bool { b.rec.Enlist(ctx); return running.Load() == 2 })
	for range 1000 {
		b.rec.Enlist(ctx)
	}
	if n := b.rec.Stats().InFlight; n != 2 {
		t.Fatalf("InFlight = %d, want 2", n)
	}
	close(release)
	if p := peak.Load(); p != 2 {
		t.Fatalf("peak concurrency %d, want MaxConcurrent = 2", p)
	}
	var gated uint64
	for _, js := range b.rec.Stats().Jobs {
		gated += js.SkippedGate
	}
	if gated < 1000 {
		t.Fatalf("%d draws were gated while both slots were busy, want at least 1000", gated)
	}
}

// TestRegisterWhileDrawing: registration swaps the job list under draws
// from many goroutines without a data race (run with -race) or a torn
// view: every recruited draw names a registered job.
func TestRegisterWhileDrawing(t *testing.T) {
	t.Parallel()
	rec := newRecruiter(t, offlineClient(t), recruiter.Config{}, nil)
	stop := make(chan struct{})
	var recruited atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if d := rec.Draw(); d.Recruited() {
					recruited.Add(1)
					if !strings.HasPrefix(d.Job(), "job-") {
						t.Errorf("drew %q, which was never registered", d.Job())
						return
					}
				}
			}
		})
	}
	for i := range 100 {
		mustRegister(t, rec, recruiter.Func(fmt.Sprintf("job-%d", i), noop), recruiter.JobConfig{Rate: 0.005})
	}
	for recruited.Load() < 100 { // draws after the last registration index the full list
		runtime.Gosched()
	}
	close(stop)
	wg.Wait()
	if n := len(rec.Stats().Jobs); n != 100 {
		t.Fatalf("%d jobs registered, want 100", n)
	}
}
