package taskstest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
	"github.com/worksteal/worksteal/tasks/taskstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSignupExample(t *testing.T) {
	t.Parallel()
	testSignup(t)
}

type step struct{ N int }

// stepTask is the task of type typ over steps, for the tests' several
// types of one shape.
func stepTask(typ string) tasks.Task[step, step] { return tasks.Define[step, step](typ) }

// Every option shows: a delay's due time, an attempt limit, a unique
// key, a chain's step; pending tasks first, oldest first.
func TestTasksOptions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, err := queue.New(taskstest.Redis(t), "q", queue.Config{Prefix: "app"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := tasks.NewClient(q)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := stepTask("plain").Enqueue(ctx, c, step{1}, tasks.Attempts(3))
	later, _ := stepTask("later").Enqueue(ctx, c, step{2}, tasks.Delay(time.Hour))
	once, _ := stepTask("once").Enqueue(ctx, c, step{3}, tasks.Unique("k1", time.Minute))
	chain, err := tasks.EnqueueChain(ctx, c, []tasks.Step{stepTask("a").Step(step{4}), stepTask("b").Step(step{5})})
	if err != nil {
		t.Fatal(err)
	}
	got := taskstest.Tasks(t, q)
	if len(got) != 4 {
		t.Fatalf("Tasks = %+v; want 4", got)
	}
	byID := map[string]taskstest.Task{}
	for _, tk := range got {
		byID[tk.ID] = tk
	}
	if tk := byID[plain]; tk.Type != "plain" || tk.MaxAttempts != 3 || !tk.Due.IsZero() || taskstest.Args[step](t, tk, nil).N != 1 {
		t.Errorf("plain = %+v", tk)
	}
	if tk := byID[later]; tk.Type != "later" || time.Until(tk.Due) < 59*time.Minute || got[3].ID != later {
		t.Errorf("later = %+v (last: %v); want due in an hour, listed last", tk, got[3].ID)
	}
	if tk := byID[once]; tk.Unique != "k1" {
		t.Errorf("once = %+v; want its unique key", tk)
	}
	if tk := byID[chain]; tk.Type != "a" || tk.ChainStep != 1 || tk.ChainSteps != 2 {
		t.Errorf("chain = %+v; want a, step 1 of 2", tk)
	}
}

// Run works a chain to its end, and leaves a failing task dead with
// MaxAttempts 1.
func TestRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, err := queue.New(taskstest.Redis(t), "q", queue.Config{MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ran []int
	mux := tasks.NewMux()
	for _, typ := range []string{"a", "b", "c"} {
		if err := stepTask(typ).Handle(mux, func(_ context.Context, s step) (step, error) {
			mu.Lock()
			defer mu.Unlock()
			ran = append(ran, s.N)
			return step{s.N + 1}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := stepTask("fail").Handle(mux, func(context.Context, step) (step, error) { return step{}, errors.New("no") }); err != nil {
		t.Fatal(err)
	}
	job, err := mux.Job(q, jobs.DrainConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := tasks.NewClient(q)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tasks.EnqueueChain(ctx, c, []tasks.Step{stepTask("a").Step(step{1}), stepTask("b").Pipe(), stepTask("c").Pipe()}); err != nil {
		t.Fatal(err)
	}
	if _, err := stepTask("fail").Enqueue(ctx, c, step{}); err != nil {
		t.Fatal(err)
	}
	rep := taskstest.Run(t, q, job)
	if len(ran) != 3 || ran[0] != 1 || ran[1] != 2 || ran[2] != 3 || rep.Depth.Dead != 1 || rep.Depth.Pending != 0 || rep.Items < 4 {
		t.Fatalf("ran %v, report %+v; want the chain 1, 2, 3 and one dead", ran, rep)
	}
	if got := taskstest.Tasks(t, q); len(got) != 0 {
		t.Fatalf("left %+v", got)
	}
}

// fatalTB records a fatal failure and ends the goroutine, as testing.T's
// Fatalf does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

// A missing redis-server fails the test with how to install it.
func TestRedisMissing(t *testing.T) {
	t.Setenv("REDIS_SERVER", "no-such-redis-server")
	f := &fatalTB{TB: t}
	func() {
		defer func() {
			if v := recover(); v != nil && v != any(f) {
				panic(v)
			}
		}()
		taskstest.Redis(f)
	}()
	if !strings.Contains(f.msg, "install") || !strings.Contains(f.msg, "no-such-redis-server") {
		t.Fatalf("Redis without a server failed with %q; want the install command", f.msg)
	}
}

// Args refuses a codec other than the task's.
func TestArgsCodec(t *testing.T) {
	t.Parallel()
	f := &fatalTB{TB: t}
	func() {
		defer func() {
			if v := recover(); v != nil && v != any(f) {
				panic(v)
			}
		}()
		taskstest.Args[step](f, taskstest.Task{Type: "x", Codec: "gob", Args: []byte("?")}, nil)
	}()
	if !strings.Contains(f.msg, "gob") {
		t.Fatalf("Args of a gob task failed with %q", f.msg)
	}
}

// A canceled task is not listed, though its id waits in pending for a
// claim to drop it, and Run runs the others only.
func TestTasksLeavesOutCanceled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, err := queue.New(taskstest.Redis(t), "q", queue.Config{Prefix: "app"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := tasks.NewClient(q)
	if err != nil {
		t.Fatal(err)
	}
	work := tasks.Define[step, int]("work")
	keep, _ := work.Enqueue(ctx, c, step{1})
	drop, _ := work.Enqueue(ctx, c, step{2})
	if err := tasks.Cancel(ctx, c, drop); err != nil {
		t.Fatal(err)
	}
	if got := taskstest.Tasks(t, q); len(got) != 1 || got[0].ID != keep {
		t.Fatalf("Tasks = %+v; want %s alone", got, keep)
	}
	mux := tasks.NewMux()
	var ran []int
	if err := work.Handle(mux, func(_ context.Context, s step) (int, error) { ran = append(ran, s.N); return s.N, nil }); err != nil {
		t.Fatal(err)
	}
	job, err := mux.Job(q, jobs.DrainConfig{Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep := taskstest.Run(t, q, job); len(ran) != 1 || ran[0] != 1 || rep.Depth.Pending != 0 {
		t.Fatalf("Run ran %v, left %+v; want task 1 alone", ran, rep.Depth)
	}
}
