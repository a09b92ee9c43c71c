package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

type labelArgs struct{ Label string }

// chainMux registers the steps of the chain tests: add; double, piped
// (the sum as its arguments); label, which reads the previous result.
// ran counts each type's runs.
func chainMux(t *testing.T, b *bundle, ran map[string]*atomic.Int64) {
	t.Helper()
	for _, typ := range []string{"add", "double", "label", "fail"} {
		ran[typ] = &atomic.Int64{}
	}
	mustHandle(t, b.mux, "add", func(ctx context.Context, a addArgs) (sum, error) {
		ran["add"].Add(1)
		return add(ctx, a)
	})
	mustHandle(t, b.mux, "double", func(ctx context.Context, s sum) (sum, error) {
		ran["double"].Add(1)
		if _, ok, _ := tasks.PreviousResult[sum](ctx); !ok {
			return sum{}, errors.New("double: no previous result")
		}
		return sum{Sum: 2 * s.Sum, Label: s.Label}, nil
	})
	mustHandle(t, b.mux, "label", func(ctx context.Context, a labelArgs) (string, error) {
		ran["label"].Add(1)
		prev, ok, err := tasks.PreviousResult[sum](ctx)
		if err != nil || !ok {
			return "", fmt.Errorf("label: previous result %v, %v", ok, err)
		}
		return a.Label + "=" + strconv.Itoa(prev.Sum), nil
	})
	mustHandle(t, b.mux, "fail", func(ctx context.Context, _ struct{}) (string, error) {
		ran["fail"].Add(1)
		return "", errors.New("step failed on purpose")
	})
}

// oneBatch makes b's job one of a batch a slice, so that a test sees a
// chain's steps one slice at a time.
func oneBatch(t *testing.T, b *bundle) {
	t.Helper()
	var err error
	if b.job, err = b.mux.Job(b.q, jobs.DrainConfig{Batching: jobs.Batching{MaxBatches: 1}}); err != nil {
		t.Fatal(err)
	}
}

func chainOf(label string, a, b int) []tasks.Step {
	return []tasks.Step{
		stepOf("add", addArgs{A: a, B: b, Label: label}),
		pipeOf("double"),
		stepOf("label", labelArgs{Label: label}),
	}
}

// A → B → C: each step is enqueued by the previous one's ack, with its
// result; the chain's progress shows step by step; the waiter gets the
// last result, typed.
func TestChainRunsStepByStep(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, fastRetries)
	ran := map[string]*atomic.Int64{}
	chainMux(t, b, ran)
	oneBatch(t, b) // a slice runs the next step too, since its ack enqueued it
	ctx := testrig.Context(t, 30*time.Second)
	id, err := tasks.EnqueueChain(ctx, b.client, chainOf("x", 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	for step, want := range []string{"add", "double", "label"} {
		st, err := tasks.ChainStatus(ctx, b.client, id)
		if err != nil || st.State != tasks.StateRunning || st.Step != step+1 || st.Steps != 3 {
			t.Fatalf("before %s: ChainStatus = %+v, %v; want running at step %d of 3", want, st, err, step+1)
		}
		if d, _ := b.q.Depth(ctx); d.Pending != 1 {
			t.Fatalf("before %s: %s, want the one step pending", want, fmtDepth(d))
		}
		if _, err := b.job.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if n := ran[want].Load(); n != 1 {
			t.Fatalf("%s ran %d times, want 1", want, n)
		}
	}
	got, err := tasks.WaitChain[string](ctx, b.client, id)
	if err != nil || got != "x=10" {
		t.Fatalf("WaitChain = %q, %v; want x=10", got, err)
	}
	st, err := tasks.ChainStatus(ctx, b.client, id)
	if err != nil || st.State != tasks.StateDone || st.Step != 3 || string(st.Result) != `"x=10"` {
		t.Fatalf("ChainStatus = %+v, %v; want done with \"x=10\"", st, err)
	}
	if d, _ := b.q.Depth(ctx); fmtDepth(d) != fmtDepth(queue.Depth{}) {
		t.Fatalf("after the chain: %s", fmtDepth(d))
	}
}

// Many chains, waited for concurrently while the job drives them.
func TestCallChainWhileTheJobRuns(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	b := setup(t, srv.Client(t), fastRetries)
	ran := map[string]*atomic.Int64{}
	chainMux(t, b, ran)
	// The waiters on a client of their own: each holds a connection while
	// it blocks, which would starve the job's pool (see queue.Wait).
	waiters, err := tasks.NewClient(newQueue(t, srv.Client(t), "tasks", fastRetries))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testrig.Context(t, 30*time.Second)
	const n = 20
	errs := make(chan error, n)
	for i := range n {
		go func() {
			got, err := tasks.CallChain[string](ctx, waiters, chainOf("c"+strconv.Itoa(i), i, 1))
			if want := fmt.Sprintf("c%d=%d", i, 2*(i+1)); err == nil && got != want {
				err = fmt.Errorf("CallChain %d = %q, want %q", i, got, want)
			}
			errs <- err
		}()
	}
	done := 0
	b.drive(t, "every chain answered", func() bool {
		for {
			select {
			case err := <-errs:
				if err != nil {
					t.Error(err)
				}
				done++
				continue
			default:
			}
			return done == n
		}
	})
	for typ, want := range map[string]int64{"add": n, "double": n, "label": n} {
		if got := ran[typ].Load(); got != want {
			t.Errorf("%s ran %d times, want %d", typ, got, want)
		}
	}
}

// A step that dead-letters stops the chain: the waiter gets its cause,
// wrapping queue.ErrDead, and the steps after it never run.
func TestChainStopsAtADeadStep(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, fastRetries)
	ran := map[string]*atomic.Int64{}
	chainMux(t, b, ran)
	ctx := testrig.Context(t, 30*time.Second)
	id, err := tasks.EnqueueChain(ctx, b.client, []tasks.Step{
		stepOf("add", addArgs{A: 1}), stepOf("fail", nil), stepOf("label", labelArgs{})})
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { _, err := tasks.WaitChain[string](ctx, b.client, id); waited <- err }()
	var werr error
	b.drive(t, "the waiter answered", func() bool {
		select {
		case werr = <-waited:
			return true
		default:
			return false
		}
	})
	if !errors.Is(werr, queue.ErrDead) || !strings.Contains(werr.Error(), "step failed on purpose") || !strings.Contains(werr.Error(), "step 2 of 3") {
		t.Fatalf("WaitChain: %v; want ErrDead with the cause of step 2 of 3", werr)
	}
	st, err := tasks.ChainStatus(ctx, b.client, id)
	if err != nil || st.State != tasks.StateFailed || st.Step != 2 || st.Cause != "step failed on purpose" {
		t.Fatalf("ChainStatus = %+v, %v; want failed at step 2", st, err)
	}
	if a, f, l := ran["add"].Load(), ran["fail"].Load(), ran["label"].Load(); a != 1 || f != 3 || l != 0 {
		t.Fatalf("runs: add %d, fail %d, label %d; want 1, 3 (its attempts), 0", a, f, l)
	}
}

// A chain's options: Delay holds its first step back; Attempts gives every
// step that many; Unique holds the key while any step is live, so an
// enqueue under it returns the chain's id, and frees it when a step dies.
func TestChainOptions(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, fastRetries)
	ran := map[string]*atomic.Int64{}
	chainMux(t, b, ran)
	ctx := testrig.Context(t, 30*time.Second)
	steps := []tasks.Step{stepOf("add", addArgs{A: 1}), stepOf("fail", nil), stepOf("label", labelArgs{})}
	once := []tasks.EnqueueOption{tasks.Unique("nightly", time.Hour), tasks.Attempts(1)}
	id, err := tasks.EnqueueChain(ctx, b.client, steps, append(once, tasks.Delay(500*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing promotes it yet.
	if d, err := b.q.Depth(ctx); err != nil || d.Delayed != 1 || d.Pending != 0 {
		t.Fatalf("after a delayed chain: %+v, %v; want its first step delayed", d, err)
	}
	again := func() string {
		t.Helper()
		got, err := tasks.EnqueueChain(ctx, b.client, chainOf("again", 1, 1), once...)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := again(); got != id {
		t.Fatalf("a chain under a held key = %s, want the first chain's %s", got, id)
	}
	// Due, it runs a step a slice: add, then fail, which dies at its one
	// attempt (the queue would give it 3). The key is held at each step.
	one, err := b.mux.Job(b.q, jobs.DrainConfig{Batching: jobs.Batching{Batch: 1, MaxBatches: 1}})
	if err != nil {
		t.Fatal(err)
	}
	testrig.Eventually(t, 20*time.Second, "the first step due", func() bool {
		n, err := qstore.Of(b.q).Promote(ctx, queue.BatchMax)
		return err == nil && n == 1
	})
	for step, want := range []tasks.State{tasks.StateRunning, tasks.StateFailed} {
		if rep, err := one.Run(ctx); err != nil || rep.Items != 1 {
			t.Fatalf("slice %d: %+v, %v; want one item", step+1, rep, err)
		}
		st, err := tasks.ChainStatus(ctx, b.client, id)
		if err != nil || st.State != want || st.Step != 2 {
			t.Fatalf("after step %d: %+v, %v; want %v at step 2", step+1, st, err, want)
		}
		if got := again(); (got == id) != (want == tasks.StateRunning) {
			t.Fatalf("a chain under the key after step %d (%v) = %s; the chain is %s", step+1, want, got, id)
		}
	}
	if f := ran["fail"].Load(); f != 1 {
		t.Fatalf("fail ran %d times, want 1 (Attempts(1) on every step)", f)
	}
}

// Bad chains are refused with ErrInvalidArgument, adding nothing.
func TestChainBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, fastRetries)
	ctx := testrig.Context(t, 10*time.Second)
	for name, steps := range map[string][]tasks.Step{
		"zero steps":       nil,
		"empty type":       {stepOf("", nil)},
		"bad type":         {stepOf("add", nil), stepOf("a b", nil)},
		"piped first step": {pipeOf("add")},
		"unencodable args": {stepOf("add", make(chan int))},
		"too many steps":   make([]tasks.Step, 1001),
	} {
		if _, err := tasks.EnqueueChain(ctx, b.client, steps); !errors.Is(err, tasks.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
		if _, err := tasks.CallChain[int](ctx, b.client, steps); !errors.Is(err, tasks.ErrInvalidArgument) {
			t.Errorf("CallChain, %s: %v, want ErrInvalidArgument", name, err)
		}
	}
	if _, err := tasks.EnqueueChain(ctx, nil, []tasks.Step{stepOf("add", nil)}); !errors.Is(err, tasks.ErrInvalidArgument) {
		t.Errorf("nil Client: %v", err)
	}
	if _, err := tasks.ChainStatus(ctx, b.client, ""); !errors.Is(err, tasks.ErrInvalidArgument) {
		t.Errorf("ChainStatus(\"\"): %v", err)
	}
	if _, err := tasks.WaitChain[int](ctx, b.client, "nope"); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("WaitChain(nope): %v, want ErrNotFound", err)
	}
	if d, _ := b.q.Depth(ctx); fmtDepth(d) != fmtDepth(queue.Depth{}) {
		t.Fatalf("refused chains added items: %s", fmtDepth(d))
	}
	if _, ok, err := tasks.PreviousResult[int](ctx); ok || err != nil {
		t.Fatalf("PreviousResult outside a chain = %v, %v", ok, err)
	}
}

// A slice that runs a batch of chain steps acks them and enqueues their
// next steps in one round trip, as a batch of plain tasks: one claim, one
// settle.
func TestChainStepsSettleInOneRoundTrip(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	rt := &redistest.RoundTrips{}
	rdb.AddHook(rt)
	b := setup(t, rdb, fastRetries)
	ran := map[string]*atomic.Int64{}
	chainMux(t, b, ran)
	oneBatch(t, b)
	ctx := testrig.Context(t, 30*time.Second)
	ids := make([]string, 30)
	for i := range ids {
		var err error
		if ids[i], err = tasks.EnqueueChain(ctx, b.client, chainOf("r", i, 0)); err != nil {
			t.Fatal(err)
		}
	}
	for step := 1; step <= 3; step++ {
		before := rt.Load()
		r, err := b.job.Run(ctx)
		if err != nil || r.Items != len(ids) {
			t.Fatalf("step %d: Run = %+v, %v", step, r, err)
		}
		// Step 1 loads the scripts; step 2's settle is the first with
		// follow-ups that are not the first.
		if got := rt.Load() - before; step > 1 && got != 2 {
			t.Errorf("step %d of %d chains: %d round trips, want 2 (claim, settle)", step, len(ids), got)
		}
	}
	for i, id := range ids {
		if got, err := tasks.WaitChain[string](ctx, b.client, id); err != nil || got != "r="+strconv.Itoa(2*i) {
			t.Fatalf("chain %d = %q, %v", i, got, err)
		}
	}
}
