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
func TestCountJobStopsBeforeTheDeadline(t *testing.T) {
	t.Parallel()
	step, calls := fakeStep(10*time.Millisecond, 1000)
	job := &countJob{name: "fake", batch: 10, timeout: time.Second, step: step}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Millisecond)
	defer cancel()
	rep, err := job.Run(ctx)
	n := int(calls.Load())
	// 10ms, 20ms, 30ms: 15ms are left after the third, below 2×10ms.
	// A slow machine makes batches longer, hence fewer, never more.
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
func TestCountJobDoesNotCutABatch(t *testing.T) {
	t.Parallel()
	step := func(ctx context.Context, n int) (int, error) {
		time.Sleep(15 * time.Millisecond)
		return n, ctx.Err()
	}
	job := &countJob{name: "fake", batch: 10, timeout: time.Second, step: step}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if rep, err := job.Run(ctx); rep != (recruiter.Report{Items: 10, More: true}) || err != nil {
		t.Fatalf("Run = %+v, %v; want the one batch counted, More", rep, err)
	}
}
