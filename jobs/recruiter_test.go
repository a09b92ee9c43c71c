package jobs_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/seams"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// inlineRecruiter runs slices on the enlisting goroutine and takes its
// rolls from rolls, shut down at cleanup.
func inlineRecruiter(t *testing.T, rdb redis.UniversalClient, rolls func() float64) *recruiter.Recruiter {
	t.Helper()
	// The pressure gate is off: it reads the test process's scheduler, and
	// a loaded CI machine would hold an enlisted slice back.
	cfg := recruiter.Config{Inline: true, Prefix: testPrefix(t), Pressure: -1}
	seams.SetRoll(&cfg, rolls, nil)
	rec, err := recruiter.New(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rec.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return rec
}

// enlistUntil enlists, as fast exits would, until done holds.
func enlistUntil(t *testing.T, rec *recruiter.Recruiter, what string, done func() bool) {
	t.Helper()
	ctx := testContext(t)
	testrig.Eventually(t, 20*time.Second, what, func() bool {
		rec.Enlist(ctx)
		return done()
	})
}

// 1,000 items drained through enlistments of a real recruiter, two
// batches of 100 a slice: every id gets its result, once.
// MaxBatches, not the budget, bounds a slice here: the budget of 5s leaves
// a grace of 500ms (a tenth) before a slice of two batches counts as a
// timeout, which a loaded machine does not reach; a 50ms budget it did.
func TestDrainThroughRecruiter(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ids := enqueue(t, b.q, "item-", 1000)
	c := &calls{}
	rec := inlineRecruiter(t, b.rdb, func() float64 { return 0 })
	drain := mustDrain(t, b.q, echo(c), jobs.DrainConfig{Batching: jobs.Batching{MaxBatches: 2}})
	if err := rec.Register(drain, recruiter.JobConfig{Rate: 1, Budget: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	enlistUntil(t, rec, "all 1000 items handled", func() bool { return c.total() >= 1000 })

	wantResults(t, b.q, c, "item-", ids)
	wantDepth(t, b.q, queue.Depth{})
	js := rec.Stats().Jobs[0]
	if js.Name != "drain.jobs" || js.Items != 1000 || js.Ran < 5 || js.Failed() != 0 {
		t.Fatalf("recruiter stats %+v; want 1000 items in at least 5 clean slices", js)
	}
}

// A crashed worker's claims come back and are drained: the drain's own
// claims hand them back, or TidyStale does, whichever comes first after
// they expire; the two jobs share one recruiter, half the rolls each, and
// neither gets in the other's way.
func TestTidyAndDrainThroughRecruiter(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ids := enqueue(t, b.q, "item-", 300)
	// The crashed worker's leases last 50ms, so that they expire soon; the
	// drain's have the default length, since a drain starts an item only
	// while its lease, less a margin for the settle, outlasts it, which a
	// 50ms lease did not after a slow claim on a loaded machine.
	crashed := newQueue(t, b.rdb, b.q.Name(), queue.Config{Prefix: b.q.Config().Prefix, Lease: 50 * time.Millisecond})
	mustClaim(t, crashed, 100, 100) // and never settled: the worker crashed
	var roll atomic.Int64
	rec := inlineRecruiter(t, b.rdb, func() float64 { return float64(roll.Add(1)%2)/2 + 0.25 })
	c := &calls{}
	tidy, err := jobs.TidyStale(b.q, jobs.TidyConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, job := range []recruiter.Job{mustDrain(t, b.q, echo(c), jobs.DrainConfig{}), tidy} {
		if err := rec.Register(job, recruiter.JobConfig{Rate: 0.5, Budget: 20 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
	}
	enlistUntil(t, rec, "all 300 items handled", func() bool { return c.total() >= 300 })

	wantResults(t, b.q, c, "item-", ids)
	wantDepth(t, b.q, queue.Depth{})
	// Timeouts are not counted as failures here: a slice that overruns a
	// 20ms budget by one queue call is what a loaded machine does (Drain
	// ends late by a call rather than early, and its budget is checked in
	// drain_test.go). What this test claims is that nothing is lost or done
	// twice, and that no slice errs or panics.
	st := rec.Stats()
	d, tj := st.Jobs[0], st.Jobs[1]
	if d.Items != 300 || tj.Name != "tidy.jobs" || tj.Items > 100 || d.Errors+d.Panics+tj.Errors+tj.Panics != 0 {
		t.Fatalf("recruiter stats %+v; want 300 items drained, at most 100 leases tidied, no slice failed", st.Jobs)
	}
	t.Logf("of the 100 expired leases, TidyStale handed back %d, the drain's claims the others", tj.Items)
}
