package jobs

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/recruiter"
)

// fakeStep handles n entries per call, taking d, with `left` entries in all.
func fakeStep(d time.Duration, left int) (step func(context.Context, int) (int, error), calls *atomic.Int32) {
	calls = &atomic.Int32{}
	var remaining atomic.Int64
	remaining.Store(int64(left))
	return func(ctx context.Context, n int) (int, error) {
		calls.Add(1)
		time.Sleep(d)
		k := min(int64(n), remaining.Load())
		remaining.Add(-k)
		return int(k), nil
	}, calls
}

// A batch starts only while twice the slowest one's duration is left, so a
// slice ends before its deadline with More, its last batch being full.
//
// Batches of 300ms in a budget of 4.5 of them: after the third, 1.5
// batches are left, below 2; after the second, 2.5 were. A loaded machine
// makes batches longer, hence fewer, never more; and the slice still ends
// in time unless one batch runs 300ms past the slowest before it, a
// scheduling delay beyond what a busy CI machine shows. With 10ms batches,
// one delay of 15ms was enough to miss the deadline.
func TestCountJobStopsBeforeTheDeadline(t *testing.T) {
	t.Parallel()
	const batch = 300 * time.Millisecond
	step, calls := fakeStep(batch, 1000)
	job := &countJob{name: "fake", batch: 10, timeout: time.Second, step: step}
	ctx, cancel := context.WithTimeout(context.Background(), batch*9/2)
	defer cancel()
	rep, err := job.Run(ctx)
	n := int(calls.Load())
	if err != nil || ctx.Err() != nil || n < 1 || n > 3 || rep != (recruiter.Report{Items: 10 * n, More: true}) {
		t.Fatalf("Run = %+v, %v after %d batches (deadline passed: %v); want up to 3 full batches, More, within the budget",
			rep, err, n, ctx.Err() != nil)
	}
}

func TestCountJobStopsWhenABatchIsShort(t *testing.T) {
	t.Parallel()
	step, calls := fakeStep(0, 25)
	job := &countJob{name: "fake", batch: 10, timeout: time.Second, step: step}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if rep, err := job.Run(ctx); rep != (recruiter.Report{Items: 25}) || err != nil || calls.Load() != 3 {
		t.Fatalf("Run = %+v, %v after %d calls; want 25 items in 3 calls, no More", rep, err, calls.Load())
	}
	job.maxBatches = 2
	step, calls = fakeStep(0, 25)
	job.step = step
	if rep, err := job.Run(ctx); rep != (recruiter.Report{Items: 20, More: true}) || err != nil || calls.Load() != 2 {
		t.Fatalf("Run with MaxBatches 2 = %+v, %v after %d calls; want 20 items, More", rep, err, calls.Load())
	}
}

func TestCountJobError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	job := &countJob{name: "fake", batch: 10, timeout: time.Second, step: func(context.Context, int) (int, error) { return 0, boom }}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := job.Run(ctx)
	if !errors.Is(err, boom) || err.Error() != "jobs: fake: boom" || rep != (recruiter.Report{More: true}) {
		t.Fatalf("Run = %+v, %v; want the step's error named after the job, and More", rep, err)
	}
}

// A batch once started runs to its end, past the deadline if it must, so
// that its count is not lost; the slice then stops.
// The step itself waits for the slice's deadline to pass, so the batch is
// in flight at the deadline however slow the machine; the 300ms budget is
// the time the job has to start its first batch, and the step's own
// timeout of 10s leaves its context alive after the slice's ends.
func TestCountJobDoesNotCutABatch(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	step := func(stepCtx context.Context, n int) (int, error) {
		<-ctx.Done()
		return n, stepCtx.Err()
	}
	job := &countJob{name: "fake", batch: 10, timeout: 10 * time.Second, step: step}
	if rep, err := job.Run(ctx); rep != (recruiter.Report{Items: 10, More: true}) || err != nil {
		t.Fatalf("Run = %+v, %v; want the one batch counted, More", rep, err)
	}
}
