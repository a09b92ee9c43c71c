package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

// Tasks of the tests: a type, its arguments and its result, each declared
// once.
var (
	addTask   = tasks.Define[addArgs, sum]("add")
	labelTask = tasks.Define[sum, string]("label")
)

func label(_ context.Context, s sum) (string, error) {
	return fmt.Sprintf("%s=%d", s.Label, s.Sum), nil
}

// goRun runs call on its own goroutine, for a test that drives the job
// meanwhile.
func goRun[R any](t *testing.T, call func(context.Context) (R, error)) *called[R] {
	t.Helper()
	ctx := testrig.Context(t, 30*time.Second)
	cl := &called[R]{done: make(chan struct{})}
	go func() {
		defer close(cl.done)
		cl.result, cl.err = call(ctx)
	}()
	t.Cleanup(func() { <-cl.done })
	return cl
}

// A Task's methods meet the same tasks: its handler, a Call (whose result
// is the Task's R), an Enqueue, a chain of its Step and Pipe; what
// another Task of its type enqueues, its handler runs.
func TestTaskMethods(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, queue.Config{})
	ctx := testrig.Context(t, 30*time.Second)
	if err := addTask.Handle(b.mux, add); err != nil {
		t.Fatal(err)
	}
	if err := labelTask.Handle(b.mux, label); err != nil {
		t.Fatal(err)
	}
	if addTask.Type() != "add" || labelTask.Type() != "label" {
		t.Fatalf("types %q, %q", addTask.Type(), labelTask.Type())
	}

	call := goRun(t, func(ctx context.Context) (sum, error) {
		return addTask.Call(ctx, b.client, addArgs{A: 2, B: 3, Label: "call"})
	})
	chain := goRun(t, func(ctx context.Context) (string, error) {
		return tasks.CallChain[string](ctx, b.client, []tasks.Step{addTask.Step(addArgs{A: 4, B: 5, Label: "chain"}), labelTask.Pipe()})
	})
	id, err := addTask.Enqueue(ctx, b.client, addArgs{A: 6, B: 7, Label: "enqueue"}, tasks.Attempts(2))
	if err != nil {
		t.Fatal(err)
	}
	byOther := mustEnqueue(t, b.client, "label", sum{Sum: 1, Label: "other"})
	b.drive(t, "every call returned", func() bool { return call.finished() && chain.finished() })
	b.drive(t, "every task done", func() bool { d, err := b.q.Depth(ctx); return err == nil && d == queue.Depth{} })

	if call.err != nil || call.result != (sum{Sum: 5, Label: "call"}) {
		t.Errorf("addTask.Call = %+v, %v; want {5 call}", call.result, call.err)
	}
	if chain.err != nil || chain.result != "chain=9" {
		t.Errorf("chain of addTask.Step, labelTask.Pipe = %q, %v; want chain=9", chain.result, chain.err)
	}
	for id, want := range map[string]string{id: `{"Sum":13,"Label":"enqueue"}`, byOther: `"other=1"`} {
		if res, err := b.q.Result(ctx, id); err != nil || string(res) != want {
			t.Errorf("Result(%s) = %s, %v; want %s", id, res, err, want)
		}
	}
	// One type, one handler, whichever Task registers it.
	if err := tasks.Define[addArgs, sum]("add").Handle(b.mux, add); !errors.Is(err, tasks.ErrDuplicateType) {
		t.Errorf("Define(\"add\").Handle after addTask.Handle = %v, want ErrDuplicateType", err)
	}
}

// The zero Task has no type: every use fails with ErrInvalidArgument and
// adds nothing.
func TestZeroTask(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, queue.Config{})
	ctx := testrig.Context(t, 30*time.Second)
	var zero tasks.Task[int, int]
	for what, err := range map[string]error{
		"Handle":      zero.Handle(b.mux, func(context.Context, int) (int, error) { return 0, nil }),
		"Enqueue":     second(zero.Enqueue(ctx, b.client, 1)),
		"EnqueueMany": second(zero.EnqueueMany(ctx, b.client, []int{1})),
		"Call":        second(zero.Call(ctx, b.client, 1)),
		"Step":        second(tasks.EnqueueChain(ctx, b.client, []tasks.Step{zero.Step(1)})),
		"Pipe":        second(tasks.EnqueueChain(ctx, b.client, []tasks.Step{addTask.Step(addArgs{}), zero.Pipe()})),
		"Periodic":    second(zero.Periodic(b.client, "job", 1)),
		"SetLimit":    zero.SetLimit(ctx, b.client, tasks.Limit{Running: 1}),
	} {
		if !errors.Is(err, tasks.ErrInvalidArgument) {
			t.Errorf("%s of the zero Task: %v, want ErrInvalidArgument", what, err)
		}
	}
	if d, err := b.q.Depth(ctx); err != nil || d != (queue.Depth{}) {
		t.Fatalf("Depth = %+v, %v; want an empty queue", d, err)
	}
}
