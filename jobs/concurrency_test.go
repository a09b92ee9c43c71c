package jobs_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// inFlight samples how many handlers run at once.
type inFlight struct{ now, most atomic.Int32 }

func (f *inFlight) enter() {
	n := f.now.Add(1)
	for m := f.most.Load(); n > m && !f.most.CompareAndSwap(m, n); m = f.most.Load() {
	}
}

func (f *inFlight) leave() { f.now.Add(-1) }

// A slice runs up to Concurrency handlers at once, never more, and each
// item exactly once: 48 items that wait 50ms each, 8 at a time, in a
// budget of 2s. One at a time they would need 2.4s.
func TestDrainRunsHandlersConcurrently(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ids := enqueue(t, b.q, "item-", 48)
	c, f := &calls{}, &inFlight{}
	wait := func(ctx context.Context, it queue.Item) ([]byte, error) {
		f.enter()
		defer f.leave()
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return echo(c)(ctx, it)
	}
	job := mustDrain(t, b.q, wait, jobs.DrainConfig{Concurrency: 8})
	var settled int
	for settled < len(ids) {
		rep, _, err := runSlice(t, job, 2*time.Second)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		settled += rep.Items
	}
	if most := f.most.Load(); most > 8 || most < 2 {
		t.Errorf("at most %d handlers ran at once; want 2 to 8 (Concurrency 8)", most)
	}
	wantResults(t, b.q, c, "item-", ids)
	wantDepth(t, b.q, queue.Depth{})
}

// A handler started within the budget runs to its end, its context not
// cut at the budget: items of 1s in a slice of 250ms all succeed (a
// budget long enough for the claim on a loaded machine: at 10ms, CI's
// claim outlasted it once and no item started), and
// through a recruiter the slice counts as ran, not as a timeout, since a
// Drain's job finishes what it started (recruiter.Finisher).
func TestDrainFinishesPastTheBudget(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ids := enqueue(t, b.q, "item-", 4)
	c := &calls{}
	var interrupted atomic.Int32
	wait := func(ctx context.Context, it queue.Item) ([]byte, error) {
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			interrupted.Add(1)
			return nil, ctx.Err()
		}
		return echo(c)(ctx, it)
	}
	job := mustDrain(t, b.q, wait, jobs.DrainConfig{Concurrency: 4})
	if _, ok := job.(recruiter.Finisher); !ok {
		t.Fatal("a Drain's job is not a recruiter.Finisher")
	}
	rec := inlineRecruiter(t, b.rdb, func() float64 { return 0 })
	if err := rec.Register(job, recruiter.JobConfig{Rate: 1, Budget: 250 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	rec.Enlist(testContext(t))
	if n := interrupted.Load(); n != 0 || c.total() != 4 {
		t.Fatalf("%d handlers interrupted, %d items done; want none interrupted, all 4 done in one slice", n, c.total())
	}
	wantResults(t, b.q, c, "item-", ids)
	st := rec.Stats().Jobs[0]
	if st.Ran != 1 || st.Timeouts != 0 {
		t.Errorf("%d ran, %d timeouts; want one ran, no timeout", st.Ran, st.Timeouts)
	}
}

// A zero Concurrency is the default; out of range is an error.
func TestDrainConcurrencyBounds(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	for _, n := range []int{-1, 1001} {
		if _, err := jobs.Drain(b.q, echo(&calls{}), jobs.DrainConfig{Concurrency: n}); err == nil {
			t.Errorf("Concurrency %d: no error", n)
		}
	}
}
