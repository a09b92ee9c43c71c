package tasks_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

// runSlice runs one slice of b's job on its own goroutine; the returned
// channel has its error.
func runSlice(t *testing.T, b *bundle) <-chan error {
	t.Helper()
	ctx := testrig.Context(t, 30*time.Second)
	out := make(chan error, 1)
	go func() {
		_, err := b.job.Run(ctx)
		out <- err
	}()
	return out
}

func receive[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("no %s in 20s", what)
		panic("unreachable")
	}
}

// blocking is a handler that says when it starts, then waits for its
// context's end and reports the cause.
type blocking struct {
	started chan string
	causes  chan error
	runs    atomic.Int64
}

func newBlocking() *blocking {
	return &blocking{started: make(chan string, 100), causes: make(chan error, 100)}
}

func (h *blocking) handle(ctx context.Context, name string) (string, error) {
	h.runs.Add(1)
	h.started <- name
	<-ctx.Done()
	h.causes <- context.Cause(ctx)
	return "", ctx.Err()
}

// A running task's handler sees its context end with queue.ErrCanceled
// as the cause (the lease is 30s: nothing else ends it); the slice ends
// without an error, the task is not retried, and its waiters learn.
func TestCancelRunningTaskEndsItsContext(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, queue.Config{Lease: 30 * time.Second})
	h := newBlocking()
	mustHandle(t, b.mux, "block", h.handle)
	id := mustEnqueue(t, b.client, "block", "a")
	slice := runSlice(t, b)
	receive(t, h.started, "handler start")
	ctx := testrig.Context(t, 30*time.Second)
	if err := tasks.Cancel(ctx, b.client, id); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if cause := receive(t, h.causes, "context end"); !errors.Is(cause, queue.ErrCanceled) {
		t.Fatalf("handler's context cause = %v, want queue.ErrCanceled", cause)
	}
	if err := receive(t, slice, "slice end"); err != nil {
		t.Fatalf("slice of a canceled task = %v, want no error", err)
	}
	if _, err := b.q.Wait(ctx, id); !errors.Is(err, queue.ErrCanceled) {
		t.Fatalf("Wait = %v, want ErrCanceled", err)
	}
	if err := receive(t, runSlice(t, b), "second slice"); err != nil || h.runs.Load() != 1 {
		t.Fatalf("after a cancel: slice %v, %d runs; want one run", err, h.runs.Load())
	}
	if d, err := b.q.Depth(ctx); err != nil || fmtDepth(d) != fmtDepth(queue.Depth{}) {
		t.Fatalf("Depth = %s, %v; want empty", fmtDepth(d), err)
	}
	if err := tasks.Cancel(ctx, b.client, id); err != nil {
		t.Fatalf("second Cancel = %v, want nil", err)
	}
	// The Mux counts no outcome for it: the queue neither retries it nor
	// dead-letters it.
	if st := b.mux.Stats(); len(st) != 1 || st[0].Running != 0 || st[0].Done+st[0].Retried+st[0].Dead != 0 {
		t.Fatalf("Mux.Stats = %+v, want no outcome", st)
	}
}

// A Call blocked on a task returns queue.ErrCanceled when it is canceled,
// long before its blocking read would end (WaitBlock is a minute); the
// task's unique key is free again; a task that succeeded cannot be
// canceled; an unknown one is not found.
func TestCancelEndsCallsAndFreesUniqueKey(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, queue.Config{WaitBlock: time.Minute})
	mustHandle(t, b.mux, "add", add)
	ctx := testrig.Context(t, 30*time.Second)
	key := tasks.Unique("k", time.Hour)
	id := mustEnqueueWith(t, b.client, "add", addArgs{A: 1}, key)
	done := make(chan error, 1)
	go func() { // shares the task through its key
		_, err := tasks.Define[addArgs, sum]("add").Call(ctx, b.client, addArgs{A: 2}, key)
		done <- err
	}()
	testrig.Eventually(t, 10*time.Second, "the Call waiting", func() bool {
		n, err := b.rdb.HExists(ctx, "{"+b.q.Config().Prefix+":q:tasks}:waiting", id).Result()
		return err == nil && n
	})
	began := time.Now()
	if err := tasks.Cancel(ctx, b.client, id); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if err := receive(t, done, "Call's return"); !errors.Is(err, queue.ErrCanceled) {
		t.Fatalf("Call = %v, want queue.ErrCanceled", err)
	}
	t.Logf("Call returned %v after the cancel", time.Since(began))
	again := mustEnqueueWith(t, b.client, "add", addArgs{A: 3}, key)
	if again == id {
		t.Fatal("the unique key still names the canceled task")
	}
	b.drive(t, "the new task done", func() bool {
		_, err := b.q.Result(ctx, again)
		return err == nil
	})
	if err := tasks.Cancel(ctx, b.client, again); !errors.Is(err, queue.ErrFinished) {
		t.Fatalf("Cancel of a done task = %v, want queue.ErrFinished", err)
	}
	if err := tasks.Cancel(ctx, b.client, "nosuchtask"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("Cancel of an unknown task = %v, want queue.ErrNotFound", err)
	}
	if err := tasks.Cancel(ctx, nil, id); !errors.Is(err, tasks.ErrInvalidArgument) {
		t.Fatalf("Cancel with a nil Client = %v, want ErrInvalidArgument", err)
	}
}

// Canceling a chain while its first step runs stops it: the step's
// handler sees the cancel, no later step runs, WaitChain returns
// queue.ErrCanceled and ChainStatus reads canceled.
func TestCancelChainRunsNoLaterStep(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, queue.Config{Lease: 30 * time.Second})
	h := newBlocking()
	mustHandle(t, b.mux, "block", h.handle)
	var later atomic.Int64
	mustHandle(t, b.mux, "later", func(context.Context, string) (string, error) { later.Add(1); return "", nil })
	ctx := testrig.Context(t, 30*time.Second)
	id, err := tasks.EnqueueChain(ctx, b.client, []tasks.Step{stepOf("block", "1"), stepOf("later", "2"), stepOf("later", "3")})
	if err != nil {
		t.Fatal(err)
	}
	slice := runSlice(t, b)
	receive(t, h.started, "step 1's start")
	if err := tasks.Cancel(ctx, b.client, id); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if _, err := tasks.WaitChain[string](ctx, b.client, id); !errors.Is(err, queue.ErrCanceled) {
		t.Fatalf("WaitChain = %v, want queue.ErrCanceled", err)
	}
	receive(t, h.causes, "step 1's context end")
	if err := receive(t, slice, "slice end"); err != nil {
		t.Fatal(err)
	}
	if err := receive(t, runSlice(t, b), "second slice"); err != nil || later.Load() != 0 {
		t.Fatalf("after the cancel: slice %v, later steps ran %d times", err, later.Load())
	}
	if p, err := tasks.ChainStatus(ctx, b.client, id); err != nil || p.State != tasks.StateCanceled || p.Step != 1 {
		t.Fatalf("ChainStatus = %+v, %v; want canceled at step 1", p, err)
	}
}

// Canceling a fan-out while its children run: the running children see
// it, the final step never runs, WaitFanOut returns queue.ErrCanceled.
func TestCancelFanOutRunsNoFinalStep(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, queue.Config{Lease: 30 * time.Second})
	h := newBlocking()
	mustHandle(t, b.mux, "block", h.handle)
	var finals atomic.Int64
	mustHandle(t, b.mux, "final", func(context.Context, string) (string, error) { finals.Add(1); return "", nil })
	ctx := testrig.Context(t, 30*time.Second)
	id, err := tasks.EnqueueFanOut(ctx, b.client, []tasks.Step{stepOf("block", "1"), stepOf("block", "2")}, stepOf("final", "f"))
	if err != nil {
		t.Fatal(err)
	}
	slice := runSlice(t, b)
	receive(t, h.started, "child 1's start")
	receive(t, h.started, "child 2's start")
	if err := tasks.Cancel(ctx, b.client, id); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if _, err := tasks.WaitFanOut[string](ctx, b.client, id); !errors.Is(err, queue.ErrCanceled) {
		t.Fatalf("WaitFanOut = %v, want queue.ErrCanceled", err)
	}
	for range 2 {
		if cause := receive(t, h.causes, "a child's context end"); !errors.Is(cause, queue.ErrCanceled) {
			t.Fatalf("child's cause = %v", cause)
		}
	}
	if err := receive(t, slice, "slice end"); err != nil {
		t.Fatal(err)
	}
	if err := receive(t, runSlice(t, b), "second slice"); err != nil || finals.Load() != 0 {
		t.Fatalf("after the cancel: slice %v, final ran %d times", err, finals.Load())
	}
	if p, err := tasks.FanOutStatus(ctx, b.client, id); err != nil || p.State != tasks.StateCanceled {
		t.Fatalf("FanOutStatus = %+v, %v; want canceled", p, err)
	}
}

func TestCancelRacesWorkers(t *testing.T) {
	t.Parallel()
	cancelRaces(t, redistest.Start(t).Options().Addr, nil)
}

func TestCancelRacesWorkersOnCluster(t *testing.T) {
	t.Parallel()
	cancelRaces(t, "", redistest.StartCluster(t))
}

// cancelRaces: tasks canceled before any worker runs never run; then
// three workers (each its own client, as processes are) drain while two
// cancelers cancel every other task: each task runs at most once and
// ends in exactly one state, done (every cancel of it found it finished)
// or canceled (one cancel did it, Wait says canceled).
func cancelRaces(t *testing.T, addr string, cluster *redistest.Cluster) {
	newClient := func() redis.UniversalClient {
		if cluster != nil {
			return cluster.Client(t)
		}
		c := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	cfg := queue.Config{Lease: 30 * time.Second, WaitBlock: time.Minute}
	var mu sync.Mutex
	runs := map[int]int{} // by argument: task i has i
	work := func(ctx context.Context, n int) (int, error) {
		mu.Lock()
		runs[n]++
		mu.Unlock()
		select { // some work, cut short by a cancel
		case <-time.After(time.Duration(n%5) * time.Millisecond):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		return n, nil
	}
	workers := make([]*bundle, 3)
	for i := range workers {
		workers[i] = setup(t, newClient(), cfg)
		mustHandle(t, workers[i].mux, "work", work)
	}
	c := workers[0].client
	ctx := testrig.Context(t, 60*time.Second)
	const early, n = 40, 200
	args := make([]int, early+n)
	for i := range args {
		args[i] = i
	}
	ids, err := enqueueMany(ctx, c, "work", args)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[:early] {
		if err := tasks.Cancel(ctx, c, id); err != nil {
			t.Fatalf("Cancel(%s) before the workers: %v", id, err)
		}
	}
	canceled, finished := map[string]int{}, map[string]int{}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, w := range workers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				rctx, cancel := context.WithTimeout(ctx, time.Second)
				_, err := w.job.Run(rctx)
				cancel()
				if err != nil && !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Run: %v", err)
					return
				}
			}
		})
	}
	var cancelers sync.WaitGroup
	for k := range 2 {
		cancelers.Go(func() {
			client := workers[k+1].client
			for i := n - 1 - k; i >= 0; i -= 2 { // from the newest: the workers start at the oldest
				id := ids[early+i]
				err := tasks.Cancel(ctx, client, id)
				mu.Lock()
				switch {
				case err == nil:
					canceled[id]++
				case errors.Is(err, queue.ErrFinished):
					finished[id]++
				default:
					t.Errorf("Cancel(%s): %v", id, err)
				}
				mu.Unlock()
			}
		})
	}
	cancelers.Wait()
	testrig.Eventually(t, 30*time.Second, "the queue empty", func() bool {
		d, err := workers[0].q.Depth(ctx)
		return err == nil && fmtDepth(d) == fmtDepth(queue.Depth{})
	})
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for i, id := range ids[:early] {
		if runs[i] != 0 {
			t.Errorf("task %s canceled while pending ran %d times", id, runs[i])
		}
	}
	done, ended := 0, 0
	for i, id := range ids[early:] {
		ran := runs[early+i]
		if ran > 1 {
			t.Errorf("task %s ran %d times", id, ran)
		}
		_, err := workers[0].q.Wait(ctx, id)
		switch {
		case err == nil:
			done++
			if canceled[id] != 0 || finished[id] != 1 || ran != 1 {
				t.Errorf("done task %s: %d cancels took, %d found it finished, %d runs", id, canceled[id], finished[id], ran)
			}
		case errors.Is(err, queue.ErrCanceled):
			ended++
			if canceled[id] != 1 {
				t.Errorf("canceled task %s: %d cancels took", id, canceled[id])
			}
		default:
			t.Errorf("Wait(%s) = %v", id, err)
		}
	}
	t.Logf("%d done, %d canceled of %d; %d canceled while pending", done, ended, n, early)
	if done+ended != n {
		t.Fatalf("%d done + %d canceled, want %d", done, ended, n)
	}
}
