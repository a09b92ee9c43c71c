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
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

// runs records a handler's calls per task, by the number in its
// arguments, with the time of each.
type runs struct {
	mu sync.Mutex
	at map[int][]time.Time
}

func (r *runs) add(id int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at == nil {
		r.at = map[int][]time.Time{}
	}
	r.at[id] = append(r.at[id], time.Now())
	return len(r.at[id])
}

func (r *runs) of(id int) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.at[id]...)
}

// wantDead waits for the queue to hold dead letters only, and checks the
// one of task id.
func (b *bundle) wantDead(t *testing.T, id string, attempts int, cause string) {
	t.Helper()
	b.drive(t, "the task is dead", func() bool {
		d, err := b.q.Depth(context.Background())
		return err == nil && d.Dead > 0 && d.Pending == 0 && d.Delayed == 0 && d.Leased == 0
	})
	dead, err := testrig.DeadLetters(testrig.Context(t, 5*time.Second), b.q, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dead {
		if d.ID == id {
			if d.Attempts != attempts || d.Cause != cause {
				t.Fatalf("dead letter %s: %d attempts, cause %q; want %d, %q", id, d.Attempts, d.Cause, attempts, cause)
			}
			return
		}
	}
	t.Fatalf("dead letters %+v, want %s among them", dead, id)
}

var errDeclined = errors.New("card declined")

// DeadLetter, wrapped, dead-letters the task at its first of five
// attempts, with the handler's whole text as the cause; the Mux counts it
// dead.
func TestDeadLetterEndsTheTaskNow(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, queue.Config{MaxAttempts: 5, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	var r runs
	charge := tasks.Define[int, string]("charge")
	if err := charge.Handle(b.mux, func(ctx context.Context, n int) (string, error) {
		r.add(n)
		return "", fmt.Errorf("charge %d: %w", n, tasks.DeadLetter(errDeclined))
	}); err != nil {
		t.Fatal(err)
	}
	id, err := charge.Enqueue(testrig.Context(t, 5*time.Second), b.client, 7)
	if err != nil {
		t.Fatal(err)
	}
	b.wantDead(t, id, 1, "charge 7: card declined")
	if n := len(r.of(7)); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
	if st := b.mux.Stats(); len(st) != 1 || st[0].Dead != 1 || st[0].Retried != 0 {
		t.Fatalf("Stats = %+v, want 1 dead, none retried", st)
	}
	// What a caller learns: ErrDead with the cause.
	call := goCall[int, string](t, b.client, "charge", 8)
	b.drive(t, "the call returned", call.finished)
	if !errors.Is(call.err, queue.ErrDead) || !strings.Contains(call.err.Error(), "charge 8: card declined") {
		t.Fatalf("Call = %v, want ErrDead with the handler's cause", call.err)
	}
}

// RetryAfter's delay replaces the queue's backoff (an hour here) and uses
// the attempt: two attempts, two runs, at least the delay apart, then dead.
// A negative delay is 0: at once, no panic.
func TestRetryAfterSetsTheDelay(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, queue.Config{MaxAttempts: 2, BackoffBase: time.Hour, BackoffMax: time.Hour})
	const delay = 400 * time.Millisecond
	var r runs
	slow := tasks.Define[int, string]("slow")
	if err := slow.Handle(b.mux, func(ctx context.Context, n int) (string, error) {
		if r.add(n) == 1 && n == 1 {
			return "", tasks.RetryAfter(delay, errors.New("busy"))
		}
		return "", fmt.Errorf("still: %w", tasks.RetryAfter(-time.Hour, errors.New("busy")))
	}); err != nil {
		t.Fatal(err)
	}
	ctx := testrig.Context(t, 5*time.Second)
	id1, err := slow.Enqueue(ctx, b.client, 1)
	if err != nil {
		t.Fatal(err)
	}
	id2, err := slow.Enqueue(ctx, b.client, 2)
	if err != nil {
		t.Fatal(err)
	}
	b.wantDead(t, id1, 2, "still: busy")
	b.wantDead(t, id2, 2, "still: busy")
	at := r.of(1)
	if len(at) != 2 {
		t.Fatalf("task 1 ran %d times, want 2 (its attempts)", len(at))
	}
	gap := at[1].Sub(at[0])
	t.Logf("RetryAfter(%v): the retry ran %v after the first run", delay, gap)
	// Redis's clock and this process's are one machine's: a few ms of
	// rounding at most.
	if gap < delay-10*time.Millisecond || gap > 15*time.Second {
		t.Fatalf("the retry ran %v after the first run, want about %v", gap, delay)
	}
	if n := len(r.of(2)); n != 2 {
		t.Fatalf("task 2 ran %d times, want 2", n)
	}
}

// A snooze uses no attempt: a task of two attempts that snoozes five times
// runs seven times before it is dead, the first snooze at least its delay
// later; a task at its last attempt that snoozes is not dead-lettered.
func TestSnoozeUsesNoAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, queue.Config{MaxAttempts: 2, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	const delay = 300 * time.Millisecond
	var r runs
	wait := tasks.Define[int, string]("wait")
	if err := wait.Handle(b.mux, func(ctx context.Context, n int) (string, error) {
		switch r.add(n) {
		case 1:
			return "", tasks.Snooze(delay)
		case 2, 3, 4, 5:
			return "", fmt.Errorf("not ready: %w", tasks.Snooze(0))
		}
		return "", errors.New("gave up")
	}); err != nil {
		t.Fatal(err)
	}
	id, err := wait.Enqueue(testrig.Context(t, 5*time.Second), b.client, 1)
	if err != nil {
		t.Fatal(err)
	}
	b.wantDead(t, id, 2, "gave up")
	at := r.of(1)
	if len(at) != 7 {
		t.Fatalf("the task ran %d times, want 7: 5 snoozes and its 2 attempts", len(at))
	}
	gap := at[1].Sub(at[0])
	t.Logf("Snooze(%v): the task ran again %v later", delay, gap)
	if gap < delay-10*time.Millisecond || gap > 15*time.Second {
		t.Fatalf("the snoozed task ran again %v later, want about %v", gap, delay)
	}
	if st := b.mux.Stats(); len(st) != 1 || st[0].Dead != 1 || st[0].Retried != 6 {
		t.Fatalf("Stats = %+v, want 1 dead, 6 retried (5 snoozes, 1 failure)", st)
	}
}

// A task that snoozes for ever is stopped: 100 snoozes are free, each one
// past them a failed attempt, so a task of three attempts runs 103 times
// and dies with a cause that says why.
func TestSnoozeHasItsMost(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, fastRetries)
	var r runs
	forever := tasks.Define[int, string]("forever")
	if err := forever.Handle(b.mux, func(ctx context.Context, n int) (string, error) {
		r.add(n)
		return "", tasks.Snooze(0)
	}); err != nil {
		t.Fatal(err)
	}
	id, err := forever.Enqueue(testrig.Context(t, 5*time.Second), b.client, 1)
	if err != nil {
		t.Fatal(err)
	}
	b.wantDead(t, id, 3, "tasks: snoozed for 0s (snoozed 100 times, the most an item may: this snooze is a failed attempt)")
	if n := len(r.of(1)); n != 103 {
		t.Fatalf("the task ran %d times, want 103: 100 snoozes, then its 3 attempts", n)
	}
}

// RetryDelay sets a type's delay per attempt, in place of the queue's
// backoff (an hour here), and sees the attempt and the handler's error; an
// error that says its own delay passes it by.
func TestRetryDelayPerType(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, queue.Config{MaxAttempts: 3, BackoffBase: time.Hour, BackoffMax: time.Hour})
	const delay = 300 * time.Millisecond
	errFlaky := errors.New("flaky")
	var mu sync.Mutex
	var seen []int
	var r runs
	flaky := tasks.Define[int, string]("flaky")
	err := flaky.Handle(b.mux, func(ctx context.Context, n int) (string, error) {
		if n == 2 {
			r.add(n)
			return "", tasks.DeadLetter(errors.New("own verdict"))
		}
		if r.add(n) == 3 {
			return "done", nil
		}
		return "", fmt.Errorf("try %d: %w", len(r.of(n)), errFlaky)
	}, tasks.RetryDelay(func(attempt int, err error) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		if !errors.Is(err, errFlaky) {
			t.Errorf("RetryDelay got %v, want the handler's error", err)
		}
		seen = append(seen, attempt)
		if attempt == 1 {
			return delay
		}
		return -time.Minute // at once
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testrig.Context(t, 30*time.Second)
	if _, err := flaky.Enqueue(ctx, b.client, 2); err != nil {
		t.Fatal(err)
	}
	result := goCall[int, string](t, b.client, "flaky", 1)
	b.drive(t, "the flaky task succeeded", result.finished)
	if result.err != nil || result.result != "done" {
		t.Fatalf("Call = %q, %v; want done", result.result, result.err)
	}
	at := r.of(1)
	gap := at[1].Sub(at[0])
	t.Logf("RetryDelay: attempt 2 ran %v after attempt 1 (asked %v), attempt 3 %v after 2 (asked 0)", gap, delay, at[2].Sub(at[1]))
	if gap < delay-10*time.Millisecond || gap > 15*time.Second || at[2].Sub(at[1]) > 15*time.Second {
		t.Fatalf("retries ran %v and %v later, want about %v and soon", gap, at[2].Sub(at[1]), delay)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(seen) != "[1 2]" {
		t.Fatalf("RetryDelay saw attempts %v, want [1 2] (task 2's DeadLetter passes it by)", seen)
	}
	if n := len(r.of(2)); n != 1 {
		t.Fatalf("task 2 ran %d times, want once", n)
	}
}

// A chain's step that dead-letters itself stops the chain at once: the
// waiter gets its cause, the later steps never run; a snoozed step holds
// the chain, which then goes on.
func TestChainStepSteers(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, queue.Config{MaxAttempts: 5, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	var r runs
	step := tasks.Define[int, int]("step")
	if err := step.Handle(b.mux, func(ctx context.Context, n int) (int, error) {
		switch k := r.add(n); {
		case n == 20:
			return 0, tasks.DeadLetter(errors.New("step refused"))
		case n == 30 && k < 3:
			return 0, tasks.Snooze(time.Millisecond)
		}
		return n, nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx := testrig.Context(t, 30*time.Second)
	dies, err := tasks.EnqueueChain(ctx, b.client, []tasks.Step{step.Step(10), step.Step(20), step.Step(21)})
	if err != nil {
		t.Fatal(err)
	}
	snoozes, err := tasks.EnqueueChain(ctx, b.client, []tasks.Step{step.Step(30), step.Step(31)})
	if err != nil {
		t.Fatal(err)
	}
	b.drive(t, "both chains ended", func() bool {
		a, errA := tasks.ChainStatus(ctx, b.client, dies)
		s, errS := tasks.ChainStatus(ctx, b.client, snoozes)
		return errA == nil && errS == nil && a.State == tasks.StateFailed && s.State == tasks.StateDone
	})
	if _, err := tasks.WaitChain[int](ctx, b.client, dies); !errors.Is(err, queue.ErrDead) || !strings.Contains(err.Error(), "step refused") || !strings.Contains(err.Error(), "step 2 of 3") {
		t.Fatalf("WaitChain = %v; want ErrDead with step 2's cause", err)
	}
	if got, err := tasks.WaitChain[int](ctx, b.client, snoozes); got != 31 || err != nil {
		t.Fatalf("WaitChain of the snoozing chain = %d, %v; want 31", got, err)
	}
	if a, c, s, u := len(r.of(20)), len(r.of(21)), len(r.of(30)), len(r.of(31)); a != 1 || c != 0 || s != 3 || u != 1 {
		t.Fatalf("runs: step 20 %d, 21 %d, 30 %d, 31 %d; want 1, 0, 3 (2 snoozes), 1", a, c, s, u)
	}
}

// A fan-out's child that dead-letters itself fails the fan-out at its
// first attempt, the final step never runs; one whose child snoozes waits
// for it, then runs its final step once.
func TestFanOutChildSteers(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, queue.Config{MaxAttempts: 5, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	var r runs
	child := tasks.Define[int, int]("child")
	final := tasks.Define[string, int]("final")
	if err := child.Handle(b.mux, func(ctx context.Context, n int) (int, error) {
		switch k := r.add(n); {
		case n == 2:
			return 0, fmt.Errorf("child %d: %w", n, tasks.DeadLetter(nil))
		case n == 12 && k < 3:
			return 0, tasks.Snooze(time.Millisecond)
		}
		return n, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := final.Handle(b.mux, func(ctx context.Context, s string) (int, error) {
		results, _, err := tasks.ChildResults[int](ctx)
		r.add(100)
		total := 0
		for _, v := range results {
			total += v
		}
		return total, err
	}); err != nil {
		t.Fatal(err)
	}
	ctx := testrig.Context(t, 30*time.Second)
	fails, err := tasks.EnqueueFanOut(ctx, b.client, []tasks.Step{child.Step(1), child.Step(2)}, final.Step("a"))
	if err != nil {
		t.Fatal(err)
	}
	waits, err := tasks.EnqueueFanOut(ctx, b.client, []tasks.Step{child.Step(11), child.Step(12)}, final.Step("b"))
	if err != nil {
		t.Fatal(err)
	}
	b.drive(t, "both fan-outs ended", func() bool {
		f, errF := tasks.FanOutStatus(ctx, b.client, fails)
		w, errW := tasks.FanOutStatus(ctx, b.client, waits)
		return errF == nil && errW == nil && f.State == tasks.StateFailed && w.State == tasks.StateDone
	})
	if _, err := tasks.WaitFanOut[int](ctx, b.client, fails); !errors.Is(err, queue.ErrDead) || !strings.Contains(err.Error(), "child 2: dead-lettered by the handler") {
		t.Fatalf("WaitFanOut = %v; want ErrDead with the child's cause", err)
	}
	if got, err := tasks.WaitFanOut[int](ctx, b.client, waits); got != 23 || err != nil {
		t.Fatalf("WaitFanOut of the snoozing fan-out = %d, %v; want 23", got, err)
	}
	if d, s, f := len(r.of(2)), len(r.of(12)), len(r.of(100)); d != 1 || s != 3 || f != 1 {
		t.Fatalf("runs: child 2 %d, child 12 %d, final steps %d; want 1, 3 (2 snoozes), 1", d, s, f)
	}
}

// A jobs.Drain handler's DeadLetter is read where the queue settles, as a
// Mux's: one path.
func TestDrainHandlerSteersToo(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, queue.Config{MaxAttempts: 5, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	var calls atomic.Int64
	job, err := jobs.Drain(b.q, func(ctx context.Context, it queue.Item) ([]byte, error) {
		calls.Add(1)
		return nil, fmt.Errorf("plain drain: %w", tasks.DeadLetter(errors.New("bad item")))
	}, jobs.DrainConfig{})
	if err != nil {
		t.Fatal(err)
	}
	b.job = job
	ctx := testrig.Context(t, 5*time.Second)
	id, err := b.q.Enqueue(ctx, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	b.wantDead(t, id, 1, "plain drain: bad item")
	if n := calls.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
}
