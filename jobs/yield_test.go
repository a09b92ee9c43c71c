package jobs_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/seams"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// A slice whose process becomes busy mid-slice ends early: once the
// pressure gate reads busy, the drain starts no more items, and hands the
// unstarted ones back with no attempt used. The first item makes the
// process busy and outlasts the gate's cached verdict; of 20 items, it
// alone runs, and the 19 others are claimed again as first attempts.
// Without the yield the slice, with a budget of 10s, would run them all.
func TestDrainYieldsWhenTheProcessIsBusy(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	enqueue(t, b.q, "item-", 20)
	var busy atomic.Bool
	read := func() (time.Duration, bool) {
		if busy.Load() {
			return 50 * time.Millisecond, true
		}
		return 0, true
	}
	cfg := recruiter.Config{Inline: true, Prefix: testPrefix(t), Pressure: time.Millisecond}
	seams.SetRoll(&cfg, func() float64 { return 0 }, nil)
	seams.SetPressure(&cfg, read)
	rec, err := recruiter.New(b.rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rec.Shutdown(context.Background()) })
	c := &calls{}
	job := mustDrain(t, b.q, func(ctx context.Context, it queue.Item) ([]byte, error) {
		busy.Store(true)
		time.Sleep(250 * time.Millisecond) // past the gate's cached verdict (100ms)
		return echo(c)(ctx, it)
	}, jobs.DrainConfig{Concurrency: 1})
	if err := rec.Register(job, recruiter.JobConfig{Rate: 1, Budget: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	rec.Enlist(testContext(t))
	if n := c.total(); n != 1 {
		t.Fatalf("%d items ran in the slice; want 1: the process became busy after the first", n)
	}
	wantDepth(t, b.q, queue.Depth{Pending: 19})
	for _, it := range mustClaim(t, b.q, 20, 19) {
		if it.Attempt != 1 {
			t.Errorf("item %s came back at attempt %d; want 1: a yield uses no attempt", it.ID, it.Attempt)
		}
	}
	if st := rec.Stats().Jobs[0]; st.Ran != 1 {
		t.Errorf("the slice's outcome: %+v; want it ran", st)
	}
}

// recruiter.Busy is false outside a slice.
func TestBusyOutsideASlice(t *testing.T) {
	t.Parallel()
	if recruiter.Busy(context.Background()) {
		t.Fatal("Busy(Background) = true")
	}
}
