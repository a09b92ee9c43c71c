package tasks_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
	"github.com/worksteal/worksteal/tasks"
)

// TestPeriodicTaskOncePerTick: three processes, each with a periodic job
// on a per-second schedule and the queue's job, no traffic: 20 ticks
// enqueue 20 tasks, and each runs once.
func TestPeriodicTaskOncePerTick(t *testing.T) {
	t.Parallel()
	s := newReadmeService(t, "periodic", queue.Config{})
	type report struct{ Kind string }
	reportTask := tasks.Define[report, int]("report")
	var handled atomic.Int64
	recs := make([]*recruiter.Recruiter, 3)
	for i := range recs {
		mux := tasks.NewMux()
		if err := reportTask.Handle(mux, func(ctx context.Context, a report) (int, error) {
			handled.Add(1)
			return 0, nil
		}); err != nil {
			t.Fatal(err)
		}
		drain, err := mux.Job(s.q, jobs.DrainConfig{})
		if err != nil {
			t.Fatal(err)
		}
		periodic, err := reportTask.Periodic(s.client, "nightly-report", report{Kind: "sales"})
		if err != nil {
			t.Fatal(err)
		}
		rec := readmeRecruiter(t, s)
		if err := rec.Register(drain, recruiter.JobConfig{Every: 200 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		if err := rec.Register(periodic, recruiter.JobConfig{Schedule: "* * * * * *"}); err != nil {
			t.Fatal(err)
		}
		recs[i] = rec
	}
	// Registered just now: the first tick is the next second; stop after
	// the twentieth, and let its task run.
	start := time.Now()
	time.Sleep(time.Until(start.Truncate(time.Second).Add(20*time.Second + 500*time.Millisecond))) // twenty ticks: a span, not a wait for an event
	var enqueued uint64
	for _, rec := range recs {
		if err := rec.Pause(context.Background(), "nightly-report", time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	for _, rec := range recs {
		for _, js := range rec.Stats().Jobs {
			if js.Name == "nightly-report" {
				enqueued += js.Items
			}
		}
	}
	if enqueued < 19 || enqueued > 22 {
		t.Errorf("%d tasks enqueued over twenty ticks, want 20 ± 1", enqueued)
	}
	testrig.Eventually(t, 10*time.Second, "every task enqueued ran", func() bool { return handled.Load() >= int64(enqueued) })
	time.Sleep(500 * time.Millisecond) // room for a second run, which must not come: a span, not a wait for an event
	if n := handled.Load(); n != int64(enqueued) {
		t.Errorf("%d runs of %d tasks, want each once", n, enqueued)
	}
}
