package tasks_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

var prioTask = tasks.Define[string, struct{}]("prio")

// One Mux's job drains every priority: with all three backlogged, the
// first 300 tasks it runs are 6:3:1 within 10 %, the lightest among
// them. A priority without a weight, or on a fan-out, is refused.
func TestPriorityOneJobDrainsAllWeights(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, queue.Config{})
	ctx := testrig.Context(t, 30*time.Second)
	if err := b.q.SetPriorities(ctx, map[string]int{"critical": 6, "default": 3, "low": 1}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ran []string
	if err := prioTask.Handle(b.mux, func(_ context.Context, p string) (struct{}, error) {
		mu.Lock()
		ran = append(ran, p)
		mu.Unlock()
		return struct{}{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	for p, n := range map[string]int{"critical": 300, "default": 200, "low": 100} {
		args := make([]string, n)
		for i := range args {
			args[i] = p
		}
		opt := tasks.Priority(p)
		if p == "default" {
			opt = nil // the default lane, without the option
		}
		if _, err := prioTask.EnqueueMany(ctx, b.client, args, opt); err != nil {
			t.Fatal(err)
		}
	}
	b.drive(t, "300 tasks run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ran) >= 300
	})
	got := map[string]int{}
	mu.Lock()
	for _, p := range ran[:300] {
		got[p]++
	}
	mu.Unlock()
	for p, want := range map[string]float64{"critical": 180, "default": 90, "low": 30} {
		if g := float64(got[p]); g < want*0.9 || g > want*1.1 {
			t.Errorf("%s: %d of the first 300 tasks, want %.0f ± 10 %%", p, got[p], want)
		}
	}
	if d, err := b.q.Depth(ctx); err != nil || d.Pending+d.Leased+int64(len(ran)) < 600 {
		t.Fatalf("Depth = %+v, %v: with %d run, the lanes' tasks are not all counted", d, err, len(ran))
	}
	if _, err := prioTask.Enqueue(ctx, b.client, "x", tasks.Priority("unknown")); !errors.Is(err, tasks.ErrInvalidArgument) {
		t.Fatalf("Enqueue with a priority without a weight = %v, want ErrInvalidArgument", err)
	}
	if _, err := tasks.EnqueueFanOut(ctx, b.client, []tasks.Step{prioTask.Step("a")}, prioTask.Step("b"), tasks.Priority("low")); !errors.Is(err, tasks.ErrInvalidArgument) {
		t.Fatalf("EnqueueFanOut with a priority = %v, want ErrInvalidArgument", err)
	}
}
