package tasks_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

// A type's Timeout ends its handler's context at the timeout, with
// ErrTimeout as its cause, long before the lease would; the attempt fails
// with a cause that says so; a handler that ignores its context is
// counted Overdue until it returns, and TimedOut after.
func TestTimeoutEndsTheHandlersContext(t *testing.T) {
	t.Parallel()
	const timeout = 100 * time.Millisecond
	// A 10 s lease: without the timeout the context would end seconds later.
	b := setup(t, nil, queue.Config{Lease: 10 * time.Second, MaxAttempts: 1})
	late := make(chan time.Duration, 1)
	var cause atomic.Value
	if err := tasks.Define[int, int]("hangs").Handle(b.mux, func(ctx context.Context, _ int) (int, error) {
		began := time.Now()
		<-ctx.Done()
		late <- time.Since(began) - timeout
		cause.Store(context.Cause(ctx))
		return 0, ctx.Err()
	}, tasks.Timeout(timeout)); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var releasing sync.Once
	free := func() { releasing.Do(func() { close(release) }) }
	t.Cleanup(free)
	ignored := make(chan struct{})
	if err := tasks.Define[int, int]("ignores").Handle(b.mux, func(ctx context.Context, _ int) (int, error) {
		close(ignored)
		<-release // ignores ctx
		return 1, nil
	}, tasks.Timeout(timeout)); err != nil {
		t.Fatal(err)
	}
	hung := mustEnqueue(t, b.client, "hangs", 1)
	b.drive(t, "the hung task dead", func() bool { d, err := b.q.Depth(context.Background()); return err == nil && d.Dead == 1 })
	lateBy := <-late
	t.Logf("the timeout ended the handler's context %v after it", lateBy)
	// 50 ms is the promise; a loaded 2-core CI under -race gets a margin,
	// and a timeout not applied would end the context seconds later.
	if lateBy < 0 || lateBy > 750*time.Millisecond {
		t.Errorf("the handler's context ended %v after its timeout, want within 50 ms (750 with a margin for load)", lateBy)
	}
	if got, _ := cause.Load().(error); got != tasks.ErrTimeout {
		t.Errorf("context.Cause = %v, want ErrTimeout", got)
	}
	wantDead(t, b.q, hung, tasks.ErrTimeout.Error(), "after 100ms")

	// The one that ignores its context: Overdue while it runs on, past
	// its timeout; then its attempt fails, counted TimedOut.
	ignorer := mustEnqueue(t, b.client, "ignores", 1)
	ran := make(chan error, 1)
	go func() {
		_, err := b.job.Run(context.Background())
		ran <- err
	}()
	<-ignored
	overdue := func() int64 {
		for _, s := range b.mux.Stats() {
			if s.Type == "ignores" {
				return s.Overdue
			}
		}
		return -1
	}
	testrig.Eventually(t, 10*time.Second, "the handler past its timeout counted Overdue", func() bool { return overdue() == 1 })
	free()
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
	wantDead(t, b.q, ignorer, tasks.ErrTimeout.Error())
	for _, s := range b.mux.Stats() {
		want := tasks.TypeStats{Type: s.Type, Dead: 1, TimedOut: 1}
		if s != want {
			t.Errorf("Stats = %+v, want %+v", s, want)
		}
	}
}

// A timeout longer than the queue's lease is refused where the two meet:
// at Handle on a Mux that serves a queue of a shorter lease, and at Job
// for a queue shorter than a registered timeout; a negative one always.
func TestTimeoutLongerThanTheLease(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, queue.Config{Lease: time.Second})
	ok := func(context.Context, int) (int, error) { return 0, nil }
	if err := tasks.Define[int, int]("fits").Handle(b.mux, ok, tasks.Timeout(time.Second)); err != nil {
		t.Errorf("Handle with a timeout of the lease: %v", err)
	}
	if err := tasks.Define[int, int]("long").Handle(b.mux, ok, tasks.Timeout(2*time.Second)); !errors.Is(err, tasks.ErrInvalidArgument) {
		t.Errorf("Handle with a timeout past the served queue's lease: %v, want ErrInvalidArgument", err)
	}
	if err := tasks.Define[int, int]("negative").Handle(tasks.NewMux(), ok, tasks.Timeout(-time.Second)); !errors.Is(err, tasks.ErrInvalidArgument) {
		t.Errorf("Handle with a negative timeout: %v, want ErrInvalidArgument", err)
	}
	m := tasks.NewMux()
	if err := tasks.Define[int, int]("long").Handle(m, ok, tasks.Timeout(2*time.Second)); err != nil {
		t.Fatalf("Handle on a Mux that serves no queue yet: %v", err)
	}
	if _, err := m.Job(b.q, jobs.DrainConfig{}); !errors.Is(err, tasks.ErrInvalidArgument) {
		t.Errorf("Job for a queue whose lease is shorter than a timeout: %v, want ErrInvalidArgument", err)
	}
	if _, err := m.Job(newQueue(t, b.rdb, "long-lease", queue.Config{Lease: 3 * time.Second}), jobs.DrainConfig{}); err != nil {
		t.Errorf("Job for a queue whose lease fits: %v", err)
	}
}
