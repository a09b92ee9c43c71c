package tasks_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
	"github.com/worksteal/worksteal/tasks"
)

// TestQuietFleetRunsTasks: a fleet of three processes wired as the
// README's Tasks section shows, with zero Enlist calls (no traffic at
// all), runs the tasks enqueued into it: the recruiters' pace timers make
// the visits that no fast exit made. Before the timer, no task ever ran.
//
// Automatic pace runs the job in nearly every slot (the carrier visits
// each, and random visits cover the slots it misses), so a task waits at
// most two Everys unless the slot after its enqueue was missed: most
// tasks must meet that bound,
// and every one must run within eight Everys (three missed slots in a
// row: about one in 2,000).
func TestQuietFleetRunsTasks(t *testing.T) {
	t.Parallel()
	const (
		every = 250 * time.Millisecond
		fleet = 3
		tries = 10
	)
	s := newReadmeService(t, "quiet", queue.Config{})
	started := make(chan time.Time, tries)
	recs := make([]*recruiter.Recruiter, fleet)
	for i := range recs {
		mux := tasks.NewMux()
		if err := handle(mux, "ping", func(context.Context, int) (int, error) {
			started <- time.Now()
			return 0, nil
		}); err != nil {
			t.Fatal(err)
		}
		job, err := mux.Job(s.q, jobs.DrainConfig{})
		if err != nil {
			t.Fatal(err)
		}
		rec := readmeRecruiter(t, s) // defaults, but for the pressure gate (see readmeService.start)
		if err := rec.Register(job, recruiter.JobConfig{Every: every}); err != nil {
			t.Fatal(err)
		}
		recs[i] = rec
	}
	// Until each process has learnt the fleet's size, and the count has
	// seen its young slots, visits are sparser by design (pacing.md).
	testrig.Eventually(t, 30*time.Second, "each recruiter learnt the fleet's size", func() bool {
		for _, rec := range recs {
			if rec.Stats().Jobs[0].Fleet == 0 {
				return false
			}
		}
		return true
	})
	time.Sleep(12 * every) // the count's young slots: a span of time, not a wait for an event

	var waits []time.Duration
	for i := range tries {
		enqueued := time.Now()
		if _, err := enqueue(context.Background(), s.client, "ping", i); err != nil {
			t.Fatal(err)
		}
		select {
		case at := <-started:
			waits = append(waits, at.Sub(enqueued))
		case <-time.After(8 * every):
			t.Fatalf("task %d did not run within %v in a fleet of %d with no traffic (waits so far %v)", i, 8*every, fleet, waits)
		}
	}
	sort.Slice(waits, func(i, j int) bool { return waits[i] < waits[j] })
	within := sort.Search(len(waits), func(i int) bool { return waits[i] > 2*every })
	t.Logf("enqueue to start, %d tasks, Every %v: %v", tries, every, waits)
	if within < tries-2 {
		t.Errorf("%d of %d tasks started within 2 × Every (%v), want at least %d: %v", within, tries, 2*every, tries-2, waits)
	}
	var drawn, timed uint64
	for _, rec := range recs {
		js := rec.Stats().Jobs[0]
		drawn, timed = drawn+js.Drawn, timed+js.Timed
	}
	if drawn != 0 || timed == 0 {
		t.Errorf("the fleet drew %d times and its timers started %d slices; want no draw, all by the timers", drawn, timed)
	}
}
