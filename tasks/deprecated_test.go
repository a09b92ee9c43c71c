//lint:file-ignore SA1019 the deprecated string forms are tested here until they are removed.

package tasks_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

// The deprecated string forms are their Task methods: their handler runs
// what a Task enqueues, a Task's handler what they enqueue, a chain of
// their steps runs, their limit is the type's, and they refuse what the
// Task refuses.
func TestDeprecatedStringForms(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, queue.Config{})
	ctx := testrig.Context(t, 30*time.Second)
	if err := tasks.Handle(b.mux, "add", add); err != nil {
		t.Fatal(err)
	}
	if err := labelTask.Handle(b.mux, label); err != nil {
		t.Fatal(err)
	}
	call := goRun(t, func(ctx context.Context) (sum, error) {
		return tasks.Call[addArgs, sum](ctx, b.client, "add", addArgs{A: 2, B: 3, Label: "call"})
	})
	chain := goRun(t, func(ctx context.Context) (string, error) {
		return tasks.CallChain[string](ctx, b.client, []tasks.Step{{Type: "add", Args: addArgs{A: 4, B: 5, Label: "chain"}}, tasks.Pipe("label")})
	})
	byTask, err := addTask.Enqueue(ctx, b.client, addArgs{A: 1, B: 1, Label: "task"})
	if err != nil {
		t.Fatal(err)
	}
	byString, err := tasks.Enqueue(ctx, b.client, "label", sum{Sum: 1, Label: "string"})
	if err != nil {
		t.Fatal(err)
	}
	many, err := tasks.EnqueueMany(ctx, b.client, "label", []sum{{Sum: 2, Label: "many"}})
	if err != nil || len(many) != 1 {
		t.Fatalf("EnqueueMany = %v, %v", many, err)
	}
	b.drive(t, "every call returned", func() bool { return call.finished() && chain.finished() })
	b.drive(t, "every task done", func() bool { d, err := b.q.Depth(ctx); return err == nil && d == queue.Depth{} })

	if call.err != nil || call.result != (sum{Sum: 5, Label: "call"}) {
		t.Errorf("Call = %+v, %v; want {5 call}", call.result, call.err)
	}
	if chain.err != nil || chain.result != "chain=9" {
		t.Errorf("chain of a Step literal and Pipe = %q, %v; want chain=9", chain.result, chain.err)
	}
	for id, want := range map[string]string{byTask: `{"Sum":2,"Label":"task"}`, byString: `"string=1"`, many[0]: `"many=2"`} {
		if res, err := b.q.Result(ctx, id); err != nil || string(res) != want {
			t.Errorf("Result(%s) = %s, %v; want %s", id, res, err, want)
		}
	}

	if err := b.client.SetLimit(ctx, "add", tasks.Limit{Running: 2}); err != nil {
		t.Fatal(err)
	}
	if limits, err := b.client.Limits(ctx); err != nil || limits["add"] != (tasks.Limit{Running: 2}) {
		t.Errorf("Limits after Client.SetLimit = %v, %v; want add's", limits, err)
	}
	if job, err := tasks.Periodic(b.client, "nightly", "add", addArgs{}); err != nil || job.Name() != "nightly" {
		t.Errorf("Periodic = %v, %v", job, err)
	}

	for what, err := range map[string]error{
		"Handle of a handled type": tasks.Handle(b.mux, "label", label),
		"Handle on a nil Mux":      tasks.Handle(nil, "x", add),
		"Enqueue of a bad type":    second(tasks.Enqueue(ctx, b.client, "a b", 1)),
		"Call on a nil Client":     second(tasks.Call[int, int](ctx, nil, "add", 1)),
		"EnqueueMany with Unique":  second(tasks.EnqueueMany(ctx, b.client, "add", []int{1}, tasks.Unique("k", time.Hour))),
		"Periodic of a bad type":   second(tasks.Periodic(b.client, "job", "", 1)),
		"SetLimit of a bad type":   b.client.SetLimit(ctx, "a b", tasks.Limit{Running: 1}),
		"SetLimit on a nil Client": (*tasks.Client)(nil).SetLimit(ctx, "add", tasks.Limit{Running: 1}),
	} {
		want := tasks.ErrInvalidArgument
		if what == "Handle of a handled type" {
			want = tasks.ErrDuplicateType
		}
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", what, err, want)
		}
	}
}
