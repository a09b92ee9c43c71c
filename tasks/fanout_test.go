package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

type squareArgs struct{ X int }

// fanOutMux registers the fan-out tests' tasks: square, a child; total,
// a final step summing its children's results; broken, a child that
// fails. ran counts each type's runs.
func fanOutMux(t *testing.T, b *bundle) map[string]*atomic.Int64 {
	t.Helper()
	ran := map[string]*atomic.Int64{}
	for _, typ := range []string{"square", "total", "broken"} {
		ran[typ] = &atomic.Int64{}
	}
	mustHandle(t, b.mux, "square", func(ctx context.Context, a squareArgs) (int, error) {
		ran["square"].Add(1)
		if _, ok, err := tasks.ChildResults[int](ctx); ok || err != nil {
			return 0, fmt.Errorf("a child has child results: %v, %v", ok, err)
		}
		return a.X * a.X, nil
	})
	mustHandle(t, b.mux, "total", func(ctx context.Context, label string) (string, error) {
		ran["total"].Add(1)
		squares, ok, err := tasks.ChildResults[int](ctx)
		if err != nil || !ok {
			return "", fmt.Errorf("child results: %v, %v", ok, err)
		}
		n := 0
		for _, s := range squares {
			n += s
		}
		return fmt.Sprintf("%s=%d/%d", label, n, len(squares)), nil
	})
	mustHandle(t, b.mux, "broken", func(ctx context.Context, _ struct{}) (int, error) {
		ran["broken"].Add(1)
		return 0, errors.New("child broke on purpose")
	})
	return ran
}

func squares(n int) []tasks.Step {
	s := make([]tasks.Step, n)
	for i := range s {
		s[i] = stepOf("square", squareArgs{X: i + 1})
	}
	return s
}

// sumOfSquares is 1² + … + n².
func sumOfSquares(n int) int { return n * (n + 1) * (2*n + 1) / 6 }

// runConcurrently runs the job from workers goroutines until stop is
// closed.
func runConcurrently(t *testing.T, b *bundle, workers int, stop <-chan struct{}) {
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	for range workers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_, err := b.job.Run(ctx)
				cancel()
				if err != nil && !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Run: %v", err)
					return
				}
			}
		})
	}
}

// The final step runs once, after every child, with their results, in
// order; workers run the job concurrently.
func TestFanOutRunsTheFinalStepOnce(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil, fastRetries)
			ran := fanOutMux(t, b)
			ctx := testrig.Context(t, 30*time.Second)
			id, err := tasks.EnqueueFanOut(ctx, b.client, squares(n), stepOf("total", "sum"))
			if err != nil {
				t.Fatal(err)
			}
			if st, err := tasks.FanOutStatus(ctx, b.client, id); err != nil || st.State != tasks.StateRunning || st.Done != 0 || st.Children != n {
				t.Fatalf("FanOutStatus = %+v, %v", st, err)
			}
			stop := make(chan struct{})
			runConcurrently(t, b, 4, stop)
			got, err := tasks.WaitFanOut[string](ctx, b.client, id)
			close(stop)
			if want := fmt.Sprintf("sum=%d/%d", sumOfSquares(n), n); err != nil || got != want {
				t.Fatalf("WaitFanOut = %q, %v; want %q", got, err, want)
			}
			if r, s := ran["total"].Load(), ran["square"].Load(); r != 1 || s != int64(n) {
				t.Fatalf("total ran %d times, square %d; want 1 and %d", r, s, n)
			}
			st, err := tasks.FanOutStatus(ctx, b.client, id)
			if err != nil || st.State != tasks.StateDone || st.Done != n || string(st.Result) != fmt.Sprintf("%q", got) {
				t.Fatalf("FanOutStatus = %+v, %v", st, err)
			}
		})
	}
}

// A handler fans out; retried after the fan-out, it adds it once.
func TestFanOutFromAHandlerIsAddedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, fastRetries)
	ran := fanOutMux(t, b)
	var attempts atomic.Int64
	ids := make(chan string, 4)
	mustHandle(t, b.mux, "split", func(ctx context.Context, n int) (string, error) {
		id, err := tasks.EnqueueFanOut(ctx, b.client, squares(n), stepOf("total", "split"))
		if err != nil {
			return "", err
		}
		ids <- id
		if attempts.Add(1) == 1 {
			return "", errors.New("failed after the fan-out, on purpose")
		}
		return id, nil
	})
	ctx := testrig.Context(t, 30*time.Second)
	split := goCall[int, string](t, b.client, "split", 10)
	b.drive(t, "the split and its fan-out ran", func() bool {
		d, err := b.q.Depth(ctx)
		return split.finished() && err == nil && fmtDepth(d) == fmtDepth(queue.Depth{})
	})
	if split.err != nil || attempts.Load() != 2 {
		t.Fatalf("split: %q, %v after %d attempts", split.result, split.err, attempts.Load())
	}
	if first, second := <-ids, <-ids; first != second || first != split.result {
		t.Fatalf("fan-out ids %s and %s, split returned %s; want one id", first, second, split.result)
	}
	if got, err := tasks.WaitFanOut[string](ctx, b.client, split.result); err != nil || got != fmt.Sprintf("split=%d/10", sumOfSquares(10)) {
		t.Fatalf("WaitFanOut = %q, %v", got, err)
	}
	if r, s := ran["total"].Load(), ran["square"].Load(); r != 1 || s != 10 {
		t.Fatalf("total ran %d times, square %d; want 1 and 10", r, s)
	}
}

// A child that dies fails the fan-out: the final step does not run, the
// waiter gets the child's cause.
func TestFanOutDeadChildFailsIt(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, fastRetries)
	ran := fanOutMux(t, b)
	ctx := testrig.Context(t, 30*time.Second)
	children := append(squares(3), stepOf("broken", struct{}{}))
	id, err := tasks.EnqueueFanOut(ctx, b.client, children, stepOf("total", "x"))
	if err != nil {
		t.Fatal(err)
	}
	b.drive(t, "the children ran", func() bool {
		d, err := b.q.Depth(ctx)
		return err == nil && fmtDepth(d) == fmtDepth(queue.Depth{Dead: 1})
	})
	_, err = tasks.WaitFanOut[string](ctx, b.client, id)
	if !errors.Is(err, queue.ErrDead) || !strings.Contains(err.Error(), "child broke on purpose") {
		t.Fatalf("WaitFanOut = %v, want ErrDead with the child's cause", err)
	}
	st, err := tasks.FanOutStatus(ctx, b.client, id)
	if err != nil || st.State != tasks.StateFailed || st.Done != 3 || st.Dead != 1 || st.DeadChild != id+".4" {
		t.Fatalf("FanOutStatus = %+v, %v", st, err)
	}
	if r := ran["total"].Load(); r != 0 {
		t.Fatalf("the final step ran %d times after a child died", r)
	}
}

// Bad input fails the call with ErrInvalidArgument naming the problem,
// and adds nothing.
func TestEnqueueFanOutInvalid(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, queue.Config{MaxPayload: 1024})
	ctx := testrig.Context(t, 30*time.Second)
	final := stepOf("total", "x")
	for _, c := range []struct {
		name     string
		c        *tasks.Client
		children []tasks.Step
		final    tasks.Step
		want     error
		text     string
	}{
		{"nil client", nil, squares(1), final, tasks.ErrInvalidArgument, "nil Client"},
		{"no children", b.client, nil, final, tasks.ErrInvalidArgument, "0 children"},
		{"too many", b.client, squares(1001), final, tasks.ErrInvalidArgument, "1001 children"},
		{"final missing", b.client, squares(1), tasks.Step{}, tasks.ErrInvalidArgument, "final step: task type"},
		{"piped final", b.client, squares(1), pipeOf("total"), tasks.ErrInvalidArgument, "ChildResults"},
		{"piped child", b.client, []tasks.Step{pipeOf("square")}, final, tasks.ErrInvalidArgument, "child 1"},
		{"bad child type", b.client, append(squares(2), stepOf("a b", nil)), final, tasks.ErrInvalidArgument, "child 3: task type"},
		{"bad arguments", b.client, []tasks.Step{stepOf("square", make(chan int))}, final, tasks.ErrInvalidArgument, "arguments of square"},
		{"large child", b.client, []tasks.Step{stepOf("square", strings.Repeat("x", 2000))}, final, queue.ErrPayloadTooLarge, "child 1"},
	} {
		id, err := tasks.EnqueueFanOut(ctx, c.c, c.children, c.final)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) || id != "" {
			t.Errorf("%s: EnqueueFanOut = %q, %v; want %v naming %q", c.name, id, err, c.want, c.text)
		}
	}
	// Bad options, to EnqueueFanOut and to CallFanOut.
	for name, opt := range map[string]tasks.EnqueueOption{
		"negative delay":   tasks.Delay(-time.Second),
		"absurd delay":     tasks.Delay(366 * 24 * time.Hour),
		"absurd attempts":  tasks.Attempts(1001),
		"negative attempt": tasks.Attempts(-1),
		"empty unique key": tasks.Unique("", time.Minute),
		"long unique key":  tasks.Unique(strings.Repeat("k", 257), time.Minute),
		"no unique ttl":    tasks.Unique("k", 0),
	} {
		if id, err := tasks.EnqueueFanOut(ctx, b.client, squares(2), final, opt); !errors.Is(err, tasks.ErrInvalidArgument) || id != "" {
			t.Errorf("%s: EnqueueFanOut = %q, %v; want ErrInvalidArgument", name, id, err)
		}
		if _, err := tasks.CallFanOut[string](ctx, b.client, squares(2), final, opt); !errors.Is(err, tasks.ErrInvalidArgument) {
			t.Errorf("%s: CallFanOut = %v; want ErrInvalidArgument", name, err)
		}
	}
	if d, err := b.q.Depth(ctx); err != nil || fmtDepth(d) != fmtDepth(queue.Depth{}) {
		t.Fatalf("Depth = %+v, %v; want nothing added", d, err)
	}
	if keys, err := b.rdb.Keys(ctx, "*").Result(); len(keys) != 0 || err != nil {
		t.Fatalf("bad input wrote %v (%v)", keys, err)
	}
	if _, err := tasks.FanOutStatus(ctx, b.client, "nosuch"); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("FanOutStatus of an unknown fan-out = %v, want ErrNotFound", err)
	}
}

// A fan-out's options: Delay holds its children back until promoted;
// Unique, per the final step's type, returns the fan-out's id while it
// runs (to a fan-out, and to a task of that type), CallFanOut under the
// key waits for it, and the key is free once the final step succeeded;
// Attempts is every child's and the final step's (the queue's is 3); a
// fan-out failed by a dead child holds its key.
func TestFanOutOptions(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, fastRetries)
	ran := fanOutMux(t, b)
	ctx := testrig.Context(t, 30*time.Second)
	// Long enough that the slice below runs before it on a loaded machine.
	const delay = time.Second
	key := tasks.Unique("nightly", time.Hour)
	total := stepOf("total", "n")
	before, err := b.rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	id, err := tasks.EnqueueFanOut(ctx, b.client, squares(3), total, tasks.Delay(delay), key)
	if err != nil {
		t.Fatal(err)
	}
	// A slice before they are due: the children wait.
	if _, err := b.job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if d, err := b.q.Depth(ctx); err != nil || d.Delayed != 3 || d.Pending != 0 || ran["square"].Load() != 0 {
		t.Fatalf("after a slice: %+v, %v, %d squares ran; want 3 children delayed", d, err, ran["square"].Load())
	}
	if again, err := tasks.EnqueueFanOut(ctx, b.client, squares(5), stepOf("total", "m"), key); again != id || err != nil {
		t.Fatalf("a fan-out under the held key = %s, %v; want %s", again, err, id)
	}
	if task, err := enqueue(ctx, b.client, "total", "t", key); task != id || err != nil {
		t.Fatalf("a task of the final step's type under the key = %s, %v; want %s", task, err, id)
	}
	other, err := enqueue(ctx, b.client, "square", squareArgs{X: 10}, key) // another type: another key
	if other == id || err != nil {
		t.Fatalf("a square under the key = %s, %v; want a task of its own", other, err)
	}
	got := make(chan string, 1)
	go func() {
		r, err := tasks.CallFanOut[string](ctx, b.client, squares(2), stepOf("total", "c"), key)
		if err != nil {
			r = err.Error()
		}
		got <- r
	}()
	var called string
	b.drive(t, "the fan-out and the call done", func() bool {
		select {
		case called = <-got:
		default:
		}
		d, err := b.q.Depth(ctx)
		return called != "" && err == nil && fmtDepth(d) == fmtDepth(queue.Depth{})
	})
	if want := fmt.Sprintf("n=%d/3", sumOfSquares(3)); called != want {
		t.Fatalf("CallFanOut under the key = %q, want the held fan-out's %q", called, want)
	}
	if now, err := b.rdb.Time(ctx).Result(); err != nil || now.Sub(before) < delay {
		t.Fatalf("done %v after the enqueue (%v), before the delay %v", now.Sub(before), err, delay)
	}
	if r, s := ran["total"].Load(), ran["square"].Load(); r != 1 || s != 4 {
		t.Fatalf("total ran %d times, square %d; want 1 and 4 (3 children, 1 task)", r, s)
	}

	// Attempts(2): the final step dies at its second run, not the queue's third.
	failFinal, err := tasks.EnqueueFanOut(ctx, b.client, squares(2), stepOf("broken", struct{}{}), tasks.Attempts(2), key)
	if err != nil || failFinal == id {
		t.Fatalf("a fan-out under the freed key = %s, %v; want a new one", failFinal, err)
	}
	b.drive(t, "the final step dead", func() bool {
		d, err := b.q.Depth(ctx)
		return err == nil && fmtDepth(d) == fmtDepth(queue.Depth{Dead: 1})
	})
	if _, err := tasks.WaitFanOut[int](ctx, b.client, failFinal); !errors.Is(err, queue.ErrDead) {
		t.Fatalf("WaitFanOut of a dead final step = %v, want ErrDead", err)
	}
	if n := ran["broken"].Load(); n != 2 {
		t.Fatalf("the final step ran %d times, want 2", n)
	}

	// Attempts(1): a failing child dies at once, failing the fan-out, which
	// keeps its key.
	failChild, err := tasks.EnqueueFanOut(ctx, b.client, append(squares(1), stepOf("broken", struct{}{})), total, tasks.Attempts(1), key)
	if err != nil || failChild == id {
		t.Fatalf("a fan-out under the freed key = %s, %v; want a new one", failChild, err)
	}
	b.drive(t, "the child dead", func() bool {
		d, err := b.q.Depth(ctx)
		return err == nil && fmtDepth(d) == fmtDepth(queue.Depth{Dead: 2})
	})
	if _, err := tasks.WaitFanOut[string](ctx, b.client, failChild); !errors.Is(err, queue.ErrDead) || !strings.Contains(err.Error(), "child broke on purpose") {
		t.Fatalf("WaitFanOut of a fan-out with a dead child = %v, want ErrDead with its cause", err)
	}
	if n := ran["broken"].Load(); n != 3 {
		t.Fatalf("broken ran %d times, want 3 (the child once)", n)
	}
	if again, err := tasks.EnqueueFanOut(ctx, b.client, squares(1), total, key); again != failChild || err != nil {
		t.Fatalf("a fan-out under the failed fan-out's key = %s, %v; want %s", again, err, failChild)
	}
	if r := ran["total"].Load(); r != 1 {
		t.Fatalf("total ran %d times, want 1", r)
	}
}
