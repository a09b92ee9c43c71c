package tasks_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

// A task starts soon after its enqueue, not at its job's next planned
// visit: with Every a minute, the README's wiring starts each of 20
// tasks, enqueued one at a time in this process, within seconds (the
// median within a tenth of one, on a busy machine), and a chain of three
// steps ends as soon; without local wake-up each would wait for the
// next slot, up to a minute.
func TestEnqueueWakesTheJob(t *testing.T) {
	t.Parallel()
	s := newReadmeService(t, "wake", queue.Config{})
	started := make(chan time.Time, 1)
	ping := tasks.Define[int, int]("ping")
	step := tasks.Define[int, int]("step")
	s.start(t, time.Minute, func(mux *tasks.Mux) {
		if err := ping.Handle(mux, func(context.Context, int) (int, error) {
			started <- time.Now()
			return 0, nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := step.Handle(mux, func(_ context.Context, n int) (int, error) { return n + 1, nil }); err != nil {
			t.Fatal(err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The first planned visit takes the slot: from then on, only a
	// woken visit can run the job within the minute.
	if _, err := ping.Enqueue(ctx, s.client, -1); err != nil {
		t.Fatal(err)
	}
	<-started
	var waits []time.Duration
	for i := range 20 {
		enqueued := time.Now()
		if _, err := ping.Enqueue(ctx, s.client, i); err != nil {
			t.Fatal(err)
		}
		select {
		case at := <-started:
			waits = append(waits, at.Sub(enqueued))
		case <-time.After(10 * time.Second):
			t.Fatalf("task %d did not start within 10s of its enqueue, with Every a minute (waits so far %v)", i, waits)
		}
	}
	sort.Slice(waits, func(i, j int) bool { return waits[i] < waits[j] })
	t.Logf("enqueue → start: p50 %v, max %v", waits[len(waits)/2], waits[len(waits)-1])
	if p50 := waits[len(waits)/2]; p50 > 100*time.Millisecond {
		t.Errorf("enqueue → start p50 %v; want within 100ms", p50)
	}

	began := time.Now()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	got, err := tasks.CallChain[int](wctx, s.client, []tasks.Step{step.Step(1), step.Pipe(), step.Pipe()})
	if err != nil || got != 4 {
		t.Fatalf("CallChain = %d, %v; want 4 within 10s, with Every a minute", got, err)
	}
	took := time.Since(began)
	t.Logf("a chain of 3 steps: %v", took)
	if took > 10*time.Second {
		t.Errorf("a chain of 3 steps took %v with Every a minute; want seconds at most", took)
	}
}
