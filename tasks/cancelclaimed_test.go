package tasks_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

// claimedSetup is a Mux whose job runs one handler at once with the given
// batch, so that a task enqueued behind a "hold" task is claimed with it
// and waits, claimed but not started, while hold runs: hold says when it
// starts and returns once the test closes release.
type claimedSetup struct {
	*bundle
	held    chan struct{} // hold started
	release chan struct{}
	started atomic.Int64 // of every other type
}

func setupClaimed(t *testing.T, batch int) *claimedSetup {
	t.Helper()
	c := &claimedSetup{bundle: setup(t, nil, queue.Config{Lease: 30 * time.Second}),
		held: make(chan struct{}, 1), release: make(chan struct{})}
	mustHandle(t, c.mux, "hold", func(context.Context, string) (string, error) {
		c.held <- struct{}{}
		<-c.release
		return "held", nil
	})
	counted := func(context.Context, string) (string, error) { c.started.Add(1); return "ran", nil }
	for _, typ := range []string{"quick", "child", "final", "later"} {
		mustHandle(t, c.mux, typ, counted)
	}
	var err error
	if c.job, err = c.mux.Job(c.q, jobs.DrainConfig{Concurrency: 1, Batching: jobs.Batching{Batch: batch}}); err != nil {
		t.Fatal(err)
	}
	return c
}

// A task that a drain has claimed but not started when it is canceled
// never starts once Cancel returned nil, whether the slice goes on at
// once (the hold released the moment Cancel returns) or later: the
// repro of issue 35 (batch 2, one handler), the default batch, and a
// chain's step and a fan-out's children and final step claimed behind a
// running task. Its waiters, ChainStatus and FanOutStatus read canceled,
// the Mux counts no outcome for it, and the task before it is done.
func TestCancelClaimedTaskNeverStarts(t *testing.T) {
	t.Parallel()
	enqueue := map[string]func(t *testing.T, c *claimedSetup) string{
		"task": func(t *testing.T, c *claimedSetup) string { return mustEnqueue(t, c.client, "quick", "q") },
		"chain": func(t *testing.T, c *claimedSetup) string {
			id, err := tasks.EnqueueChain(context.Background(), c.client, []tasks.Step{stepOf("quick", "1"), stepOf("later", "2")})
			if err != nil {
				t.Fatal(err)
			}
			return id
		},
		"fan-out": func(t *testing.T, c *claimedSetup) string {
			children := make([]tasks.Step, 5)
			for i := range children {
				children[i] = stepOf("child", "c")
			}
			id, err := tasks.EnqueueFanOut(context.Background(), c.client, children, stepOf("final", "f"))
			if err != nil {
				t.Fatal(err)
			}
			return id
		},
	}
	for _, batch := range []struct {
		name string
		size int
	}{{"batch-2", 2}, {"batch-default", 0}} {
		for _, kind := range []string{"task", "chain", "fan-out"} {
			for _, later := range []time.Duration{0, 250 * time.Millisecond} {
				if batch.size == 2 && kind == "fan-out" {
					continue // a batch of 2 claims one child only
				}
				name := batch.name + "/" + kind + "/released-at-once"
				if later > 0 {
					name = batch.name + "/" + kind + "/released-later"
				}
				t.Run(name, func(t *testing.T) {
					canceledClaimed(t, batch.size, later, enqueue[kind], kind)
				})
			}
		}
	}
}

// canceledClaimed runs one case of TestCancelClaimedTaskNeverStarts: the
// hold task released at once after Cancel returned, or later (the moment
// of the release, not an assertion: a drain's watch has polled by then).
func canceledClaimed(t *testing.T, batch int, later time.Duration, enqueue func(*testing.T, *claimedSetup) string, kind string) {
	t.Parallel()
	c := setupClaimed(t, batch)
	ctx := testrig.Context(t, 30*time.Second)
	holdID := mustEnqueue(t, c.client, "hold", "h")
	id := enqueue(t, c)
	slice := runSlice(t, c.bundle)
	receive(t, c.held, "hold's start")
	began := time.Now()
	err := tasks.Cancel(ctx, c.client, id)
	returned := time.Now()
	time.Sleep(later)
	close(c.release)
	if err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if err := receive(t, slice, "slice end"); err != nil {
		t.Fatalf("slice: %v", err)
	}
	t.Logf("Cancel took %v", returned.Sub(began))
	if n := c.started.Load(); n != 0 {
		t.Fatalf("%d handlers started after Cancel returned nil, want none", n)
	}
	if err := receive(t, runSlice(t, c.bundle), "second slice"); err != nil || c.started.Load() != 0 {
		t.Fatalf("a second slice: %v, %d handlers started; want none", err, c.started.Load())
	}
	switch kind {
	case "task":
		if _, err := c.q.Wait(ctx, id); !errors.Is(err, queue.ErrCanceled) {
			t.Fatalf("Wait = %v, want queue.ErrCanceled", err)
		}
	case "chain":
		if p, err := tasks.ChainStatus(ctx, c.client, id); err != nil || p.State != tasks.StateCanceled || p.Step != 1 {
			t.Fatalf("ChainStatus = %+v, %v; want canceled at step 1", p, err)
		}
	case "fan-out":
		if p, err := tasks.FanOutStatus(ctx, c.client, id); err != nil || p.State != tasks.StateCanceled {
			t.Fatalf("FanOutStatus = %+v, %v; want canceled", p, err)
		}
	}
	if got, err := c.q.Wait(ctx, holdID); err != nil || string(got) == "" {
		t.Fatalf("the held task: %q, %v; want its result", got, err)
	}
	for _, st := range c.mux.Stats() {
		want := doneCount(st.Type == "hold")
		if st.Running != 0 || st.Done != want || st.Retried+st.Dead != 0 {
			t.Fatalf("Mux.Stats for %s = %+v, want %d done and no other outcome", st.Type, st, want)
		}
	}
	if d, err := c.q.Depth(ctx); err != nil || fmtDepth(d) != fmtDepth(queue.Depth{}) {
		t.Fatalf("Depth = %s, %v; want empty", fmtDepth(d), err)
	}
}

// doneCount is how many attempts of a type are done: 1 when it ran.
func doneCount(ran bool) uint64 {
	if ran {
		return 1
	}
	return 0
}

// A task in a batch claimed ahead, while the batch before it runs, is
// not watched until its batch starts, long after its claim (here more
// than qstore's fence of 150 ms, as Cancel waits it out): its batch reads
// which of its items are canceled before it starts the first, and the
// canceled task never starts.
func TestCancelTaskClaimedAheadNeverStarts(t *testing.T) {
	t.Parallel()
	c := setupClaimed(t, 2)
	ctx := testrig.Context(t, 30*time.Second)
	// A first slice teaches the job how long an item takes, so that the
	// next claims a batch ahead.
	warm := mustEnqueue(t, c.client, "quick", "warm")
	if err := receive(t, runSlice(t, c.bundle), "warming slice"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.q.Wait(ctx, warm); err != nil {
		t.Fatal(err)
	}
	c.started.Store(0)
	mustEnqueue(t, c.client, "hold", "h")
	mustEnqueue(t, c.client, "quick", "1")
	ahead := mustEnqueue(t, c.client, "quick", "2")
	mustEnqueue(t, c.client, "quick", "3")
	slice := runSlice(t, c.bundle)
	receive(t, c.held, "hold's start")
	testrig.Eventually(t, 10*time.Second, "the batch after hold's claimed ahead", func() bool {
		d, err := c.q.Depth(ctx)
		return err == nil && d.Leased == 4
	})
	err := tasks.Cancel(ctx, c.client, ahead)
	close(c.release)
	if err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if err := receive(t, slice, "slice end"); err != nil {
		t.Fatalf("slice: %v", err)
	}
	if n := c.started.Load(); n != 2 {
		t.Fatalf("%d quick tasks started, want 2 (all but the canceled one)", n)
	}
	if _, err := c.q.Wait(ctx, ahead); !errors.Is(err, queue.ErrCanceled) {
		t.Fatalf("Wait = %v, want queue.ErrCanceled", err)
	}
	if d, err := c.q.Depth(ctx); err != nil || fmtDepth(d) != fmtDepth(queue.Depth{}) {
		t.Fatalf("Depth = %s, %v; want empty", fmtDepth(d), err)
	}
}
