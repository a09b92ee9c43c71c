package jobs_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/jobs"
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

func mustBatchJob(t *testing.T, cfg jobs.Batching, step func(context.Context, int) (int, error)) recruiter.Job {
	t.Helper()
	job, err := jobs.BatchJob("fake", cfg, step)
	if err != nil {
		t.Fatal(err)
	}
	return job
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
func TestBatchJobStopsBeforeTheDeadline(t *testing.T) {
	t.Parallel()
	const batch = 300 * time.Millisecond
	step, calls := fakeStep(batch, 1000)
	job := mustBatchJob(t, jobs.Batching{Batch: 10, RedisTimeout: time.Second}, step)
	ctx, cancel := context.WithTimeout(context.Background(), batch*9/2)
	defer cancel()
	rep, err := job.Run(ctx)
	n := int(calls.Load())
	if err != nil || ctx.Err() != nil || n < 1 || n > 3 || rep != (recruiter.Report{Items: 10 * n, More: true}) {
		t.Fatalf("Run = %+v, %v after %d batches (deadline passed: %v); want up to 3 full batches, More, within the budget",
			rep, err, n, ctx.Err() != nil)
	}
}

func TestBatchJobStopsWhenABatchIsShort(t *testing.T) {
	t.Parallel()
	step, calls := fakeStep(0, 25)
	job := mustBatchJob(t, jobs.Batching{Batch: 10, RedisTimeout: time.Second}, step)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if rep, err := job.Run(ctx); rep != (recruiter.Report{Items: 25}) || err != nil || calls.Load() != 3 {
		t.Fatalf("Run = %+v, %v after %d calls; want 25 items in 3 calls, no More", rep, err, calls.Load())
	}
	step, calls = fakeStep(0, 25)
	job = mustBatchJob(t, jobs.Batching{Batch: 10, MaxBatches: 2, RedisTimeout: time.Second}, step)
	if rep, err := job.Run(ctx); rep != (recruiter.Report{Items: 20, More: true}) || err != nil || calls.Load() != 2 {
		t.Fatalf("Run with MaxBatches 2 = %+v, %v after %d calls; want 20 items, More", rep, err, calls.Load())
	}
}

func TestBatchJobError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	job := mustBatchJob(t, jobs.Batching{Batch: 10, RedisTimeout: time.Second}, func(context.Context, int) (int, error) { return 0, boom })
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
func TestBatchJobDoesNotCutABatch(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	step := func(stepCtx context.Context, n int) (int, error) {
		<-ctx.Done()
		return n, stepCtx.Err()
	}
	job := mustBatchJob(t, jobs.Batching{Batch: 10, RedisTimeout: 10 * time.Second}, step)
	if rep, err := job.Run(ctx); rep != (recruiter.Report{Items: 10, More: true}) || err != nil {
		t.Fatalf("Run = %+v, %v; want the one batch counted, More", rep, err)
	}
}

// BatchJob's zero config: batches of 100, each step bounded by 250ms, one
// batch without a deadline; Name overrides the name; the arguments and
// the config are checked.
func TestBatchJobConfig(t *testing.T) {
	t.Parallel()
	var gotMax int
	var gotTimeout time.Duration
	step := func(ctx context.Context, max int) (int, error) {
		dl, _ := ctx.Deadline()
		gotMax, gotTimeout = max, time.Until(dl)
		return max, nil
	}
	job := mustBatchJob(t, jobs.Batching{}, step)
	if rep, err := job.Run(context.Background()); rep != (recruiter.Report{Items: 100, More: true}) || err != nil {
		t.Fatalf("Run = %+v, %v; want one full batch of 100", rep, err)
	}
	if gotMax != 100 || gotTimeout <= 200*time.Millisecond || gotTimeout > 250*time.Millisecond || job.Name() != "fake" {
		t.Fatalf("step got max %d, a timeout of %v, job name %q; want 100, 250ms, fake", gotMax, gotTimeout, job.Name())
	}
	if named := mustBatchJob(t, jobs.Batching{Name: "mine"}, step); named.Name() != "mine" {
		t.Errorf("Name: job named %q, want mine", named.Name())
	}
	if job, err := jobs.BatchJob("", jobs.Batching{Name: "mine"}, step); err != nil || job.Name() != "mine" {
		t.Errorf("BatchJob with an empty name and Name set: %v, %v; want a job called mine", job, err)
	}
	for _, c := range []struct {
		name   string
		cfg    jobs.Batching
		step   func(context.Context, int) (int, error)
		target error
		field  string
	}{
		{"nil step", jobs.Batching{}, nil, jobs.ErrInvalidArgument, "nil step"},
		{"bad name", jobs.Batching{}, step, jobs.ErrInvalidArgument, "name"},
		{"bad Name", jobs.Batching{Name: "a b"}, step, jobs.ErrInvalidConfig, "Name"},
		{"batch", jobs.Batching{Batch: 1001}, step, jobs.ErrInvalidConfig, "Batch 1001"},
	} {
		name := "fake"
		if c.name == "bad name" {
			name = "a b"
		}
		if job, err := jobs.BatchJob(name, c.cfg, c.step); job != nil || !errors.Is(err, c.target) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: %v, %v; want an error wrapping %v that names %q", c.name, job, err, c.target, c.field)
		}
	}
}
