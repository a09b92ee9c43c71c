package faults_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// TestShutdownUnderLoad calls Shutdown, through each stack, while requests
// keep arriving and a drain slice is in the middle of its batch. Shutdown
// returns within the slice's budget and a settle's timeout; the slice
// settles what it handled and hands the rest back, so nothing stays
// leased and tidying finds nothing; every item is either settled or
// pending; requests go on being served, and no slice starts afterwards.
func TestShutdownUnderLoad(t *testing.T) {
	t.Parallel()
	for _, st := range stacks {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			shutdownUnderLoad(t, st)
		})
	}
}

func shutdownUnderLoad(t *testing.T, st stack) {
	const (
		items  = 2000
		budget = 200 * time.Millisecond
		// The drain's RedisTimeout, its default, set here for the bound.
		redisTimeout = 250 * time.Millisecond
		// The slice's budget, then its settle and release (each bounded by
		// the drain's RedisTimeout), then slack for a loaded machine.
		shutdownBound = budget + 2*redisTimeout + 2*time.Second
	)
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := testrig.Context(t, time.Minute)
	q, err := queue.New(rdb, "shutdown", queue.Config{Prefix: redistest.Prefix(t), Lease: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := enqueueNumbered(t, q, items, "", 0)
	working := make(chan struct{}, 1)
	drain, err := jobs.Drain(q, func(_ context.Context, it queue.Item) ([]byte, error) {
		select {
		case working <- struct{}{}:
		default:
		}
		time.Sleep(2 * time.Millisecond) // the work
		return it.Payload, nil
	}, jobs.DrainConfig{Batching: jobs.Batching{Batch: 20, RedisTimeout: redisTimeout}, Concurrency: 1}) // one at a time: the backlog outlasts the test
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecruiter(t, rdb, recruiter.Config{Prefix: redistest.Prefix(t)})
	mustRegister(t, rec, drain, recruiter.JobConfig{Rate: 0.5, Budget: budget})
	l := startLoad(t, st.serve(t, rec), 20*time.Millisecond)
	testrig.Eventually(t, 20*time.Second, "drain slices running", func() bool { return jobStats(t, rec, drain.Name()).Slices >= 2 })

	// Shut down as a handler of the slice in flight starts an item.
	select {
	case <-working:
	default:
	}
	select {
	case <-working:
	case <-time.After(20 * time.Second):
		t.Fatal("no item started within 20s")
	}
	shutdownAt := time.Now()
	sctx, cancel := context.WithTimeout(ctx, shutdownBound)
	err = rec.Shutdown(sctx)
	cancel()
	took := time.Since(shutdownAt)
	if err != nil {
		t.Fatalf("Shutdown with a slice in flight: %v after %v (bound %v)", err, took, shutdownBound)
	}
	atShutdown := jobStats(t, rec, drain.Name())
	inFlight := rec.Stats().InFlight
	testrig.Eventually(t, 10*time.Second, "requests served after Shutdown", func() bool {
		return l.window(shutdownAt.Add(took), time.Now().Add(time.Hour)).requests >= 50
	})
	l.Stop()

	js := jobStats(t, rec, drain.Name())
	all := l.all()
	afterShutdown := l.window(shutdownAt.Add(took), time.Now().Add(time.Hour))
	stats, err := q.Depth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tidied, err := qstore.Of(q).Tidy(ctx, queue.BatchMax)
	if err != nil {
		t.Fatal(err)
	}
	var results []string // the items settled, by the queue's own account
	for _, id := range ids {
		switch _, err := q.Result(ctx, id); {
		case err == nil:
			results = append(results, id)
		case !errors.Is(err, queue.ErrNotFound):
			t.Fatal(err)
		}
	}
	t.Logf("Shutdown took %v (bound %v) with a slice in flight; %d slices, %d items settled; queue after: %+v, %d results, tidy found %d; requests: %v, after Shutdown: %v",
		took.Round(time.Millisecond), shutdownBound, js.Slices, js.Items, stats, len(results), tidied, all, afterShutdown)
	if all.failed != 0 {
		t.Errorf("%d of %d requests failed; first: %v", all.failed, all.requests, all.firstErr)
	}
	if inFlight != 0 {
		t.Errorf("%d slices in flight after Shutdown returned", inFlight)
	}
	if js.Slices != atShutdown.Slices {
		t.Errorf("%d slices started after Shutdown", js.Slices-atShutdown.Slices)
	}
	if stats.Leased != 0 || stats.Delayed != 0 || stats.Dead != 0 || tidied != 0 {
		t.Errorf("after Shutdown the queue holds %+v and tidy found %d: a slice left items leased", stats, tidied)
	}
	if int(stats.Pending)+len(results) != len(ids) || len(results) != int(js.Items) {
		t.Errorf("%d pending + %d results != %d items, or the slices counted %d settled: items lost or doubled",
			stats.Pending, len(results), len(ids), js.Items)
	}
	if stats.Pending == 0 {
		t.Errorf("the queue was drained before Shutdown: the test did not shut down mid-backlog")
	}
	if err := rec.Register(recruiter.Func("late", func(context.Context) (recruiter.Report, error) {
		return recruiter.Report{}, nil
	}), recruiter.JobConfig{Rate: 0.1}); !errors.Is(err, recruiter.ErrClosed) {
		t.Errorf("Register after Shutdown = %v, want ErrClosed", err)
	}
}
