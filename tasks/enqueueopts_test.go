package tasks_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/redistest"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

func mustEnqueueWith[A any](t testing.TB, c *tasks.Client, typ string, args A, opts ...tasks.EnqueueOption) string {
	t.Helper()
	id, err := enqueue(context.Background(), c, typ, args, opts...)
	if err != nil {
		t.Fatalf("Enqueue(%q): %v", typ, err)
	}
	return id
}

// runOnce runs one slice of the job, as drive does, once.
func (b *bundle) runOnce(t *testing.T) {
	t.Helper()
	ctx := testrig.Context(t, 10*time.Second)
	if _, err := b.job.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// A delayed task does not run before its time, and runs after it.
func TestEnqueueDelay(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, fastRetries)
	mustHandle(t, b.mux, "add", add)
	ctx := testrig.Context(t, 30*time.Second)
	const delay = 300 * time.Millisecond
	before, err := b.rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	id := mustEnqueueWith(t, b.client, "add", addArgs{A: 1, B: 2}, tasks.Delay(delay))
	b.runOnce(t)
	if d, err := b.q.Depth(ctx); err != nil || fmtDepth(d) != fmtDepth(queue.Depth{Delayed: 1, Due: d.Due}) {
		t.Fatalf("Depth after a slice = %+v, %v; want the task delayed", d, err)
	}
	b.drive(t, "the delayed task done", func() bool { _, err := b.q.Result(ctx, id); return err == nil })
	now, err := b.rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if now.Sub(before) < delay {
		t.Fatalf("done %v after the enqueue, before its delay %v", now.Sub(before), delay)
	}
}

// A task's own attempts replace the queue's (3 here), below and above.
func TestEnqueueAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, fastRetries)
	mustHandle(t, b.mux, "fail", func(context.Context, int) (int, error) { return 0, errors.New("always") })
	ctx := testrig.Context(t, 30*time.Second)
	ids := map[string]int{
		mustEnqueueWith(t, b.client, "fail", 1, tasks.Attempts(1)): 1,
		mustEnqueueWith(t, b.client, "fail", 5, tasks.Attempts(5)): 5,
		mustEnqueueWith(t, b.client, "fail", 0, tasks.Attempts(0)): 3, // the queue's
		mustEnqueue(t, b.client, "fail", 3):                        3,
	}
	b.drive(t, "every task dead", func() bool { d, err := b.q.Depth(ctx); return err == nil && d.Dead == 4 })
	dead, err := testrig.DeadLetters(ctx, b.q, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dead {
		if d.Attempts != ids[d.ID] {
			t.Errorf("task %s died after %d attempts, want %d", d.ID, d.Attempts, ids[d.ID])
		}
	}
}

// A unique key per task type: a second enqueue while the first is
// pending returns its id, calls share the task, a new task follows the
// first's completion, and another type's same key is another key.
func TestEnqueueUnique(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, fastRetries)
	mustHandle(t, b.mux, "add", add)
	mustHandle(t, b.mux, "add2", add)
	ctx := testrig.Context(t, 30*time.Second)
	once := tasks.Unique("sum:1+2", time.Minute)
	first := mustEnqueueWith(t, b.client, "add", addArgs{A: 1, B: 2}, once)
	if again := mustEnqueueWith(t, b.client, "add", addArgs{A: 5, B: 5}, once); again != first {
		t.Fatalf("second enqueue = %s, want the first's id %s", again, first)
	}
	if other := mustEnqueueWith(t, b.client, "add2", addArgs{A: 1, B: 2}, once); other == first {
		t.Fatal("another type's key returned the first's id")
	}
	calls := []*called[sum]{}
	for range 3 {
		calls = append(calls, goCallWith[addArgs, sum](t, b.client, "add", addArgs{A: 9, B: 9}, once))
	}
	// Each call has enqueued (a duplicate) once it blocks in its Wait.
	testrig.Eventually(t, 10*time.Second, "3 calls blocked", func() bool {
		info, err := b.rdb.Info(ctx, "clients").Result()
		return err == nil && strings.Contains(info, "blocked_clients:3\r\n")
	})
	b.drive(t, "the calls returned", func() bool {
		for _, c := range calls {
			if !c.finished() {
				return false
			}
		}
		return true
	})
	for _, c := range calls {
		if c.err != nil || c.result.Sum != 3 {
			t.Fatalf("Call = %+v, %v; want the first task's sum 3", c.result, c.err)
		}
	}
	if d, err := b.q.Depth(ctx); err != nil || fmtDepth(d) != fmtDepth(queue.Depth{}) {
		t.Fatalf("Depth = %+v, %v; want two tasks done, no more", d, err)
	}
	if next := mustEnqueueWith(t, b.client, "add", addArgs{A: 1, B: 2}, once); next == first {
		t.Fatal("after the first was done: its id again")
	}
}

func goCallWith[A, R any](t *testing.T, c *tasks.Client, typ string, args A, opts ...tasks.EnqueueOption) *called[R] {
	t.Helper()
	ctx := testrig.Context(t, 30*time.Second)
	cl := &called[R]{done: make(chan struct{})}
	go func() {
		defer close(cl.done)
		cl.result, cl.err = tasks.Define[A, R](typ).Call(ctx, c, args, opts...)
	}()
	t.Cleanup(func() { <-cl.done })
	return cl
}

// 50 concurrent enqueues with one key add one task.
func TestEnqueueUniqueConcurrently(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, fastRetries)
	const n = 50
	ids := make([]string, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			var err error
			if ids[i], err = enqueue(context.Background(), b.client, "add", addArgs{A: i}, tasks.Unique("k", time.Minute)); err != nil {
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	for i, id := range ids {
		if id != ids[0] {
			t.Fatalf("enqueue %d returned %s, enqueue 0 %s", i, id, ids[0])
		}
	}
	if d, err := b.q.Depth(context.Background()); err != nil || fmtDepth(d) != fmtDepth(queue.Depth{Pending: 1}) {
		t.Fatalf("Depth = %+v, %v; want one task", d, err)
	}
}

// Bad options fail the enqueue with ErrInvalidArgument (the queue's too,
// for what the queue checks), naming what is wrong, and add nothing.
func TestEnqueueOptionRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, fastRetries)
	ctx := testrig.Context(t, 30*time.Second)
	year := 365 * 24 * time.Hour
	for _, tc := range []struct {
		what  string
		opt   tasks.EnqueueOption
		says  string
		queue bool // the queue refused it
	}{
		{"empty unique key", tasks.Unique("", time.Minute), "enqueue add: empty unique key", false},
		{"unique key too long", tasks.Unique(strings.Repeat("k", 257), time.Minute), "unique key of 257 bytes is above 256", false},
		{"unique key without a lifetime", tasks.Unique("k", 0), "UniqueFor 0s", true},
		{"unique key for too long", tasks.Unique("k", year+time.Second), "UniqueFor", true},
		{"negative delay", tasks.Delay(-time.Second), "Delay -1s", true},
		{"absurd delay", tasks.Delay(100 * year), "Delay", true},
		{"negative attempts", tasks.Attempts(-1), "MaxAttempts -1", true},
		{"absurd attempts", tasks.Attempts(1 << 20), "MaxAttempts", true},
	} {
		id, err := enqueue(ctx, b.client, "add", addArgs{}, tasks.Delay(time.Second), tc.opt)
		if id != "" || !errors.Is(err, tasks.ErrInvalidArgument) || errors.Is(err, queue.ErrInvalidArgument) != tc.queue || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: Enqueue = %q, %v; want ErrInvalidArgument (the queue's too: %v) saying %q", tc.what, id, err, tc.queue, tc.says)
		}
		if _, err := tasks.Define[addArgs, sum]("add").Call(ctx, b.client, addArgs{}, tc.opt); !errors.Is(err, tasks.ErrInvalidArgument) {
			t.Errorf("%s: Call = %v; want ErrInvalidArgument", tc.what, err)
		}
	}
	if d, err := b.q.Depth(ctx); err != nil || d != (queue.Depth{}) {
		t.Fatalf("Depth = %+v, %v; want an empty queue", d, err)
	}
	// A nil option is ignored; the later of two wins; the bounds are valid.
	id := mustEnqueueWith(t, b.client, "add", addArgs{}, nil, tasks.Delay(year), tasks.Delay(0),
		tasks.Attempts(1000), tasks.Unique(strings.Repeat("k", 256), year))
	if _, err := b.q.Value(ctx, id); err != nil {
		t.Fatal(err)
	}
	if d, err := b.q.Depth(ctx); err != nil || fmtDepth(d) != fmtDepth(queue.Depth{Pending: 1}) {
		t.Fatalf("Depth = %+v, %v; want one task pending", d, err)
	}
}

// An enqueue with every option is one round trip, as one without.
func TestEnqueueWithOptionsIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	rt := &redistest.RoundTrips{}
	rdb.AddHook(rt)
	b := setup(t, rdb, fastRetries)
	// Dial, and load the scripts: the usual task's, a delayed one's and
	// the one with every option, each with a unique key and without.
	mustEnqueue(t, b.client, "add", addArgs{})
	mustEnqueueWith(t, b.client, "add", addArgs{}, tasks.Delay(time.Minute))
	mustEnqueueWith(t, b.client, "add", addArgs{}, tasks.Unique("warm", time.Minute))
	mustEnqueueWith(t, b.client, "add", addArgs{}, tasks.Unique("warm2", time.Minute), tasks.Attempts(2))
	for _, opts := range [][]tasks.EnqueueOption{
		nil,
		{tasks.Delay(time.Minute), tasks.Attempts(2), tasks.Unique("k", time.Minute)},
		{tasks.Unique("k", time.Minute)}, // the duplicate
	} {
		before := rt.Load()
		mustEnqueueWith(t, b.client, "add", addArgs{}, opts...)
		if n := rt.Load() - before; n != 1 {
			t.Errorf("Enqueue with %d options: %d round trips, want 1", len(opts), n)
		}
	}
}
