package jobs_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// echo answers each item with "done:" + its payload, counting its calls.
func echo(c *calls) jobs.Handler {
	return func(_ context.Context, it queue.Item) ([]byte, error) {
		c.add(it.ID)
		return append([]byte("done:"), it.Payload...), nil
	}
}

func mustDrain(t testing.TB, q *queue.Queue, h jobs.Handler, cfg jobs.DrainConfig) recruiter.Job {
	t.Helper()
	job, err := jobs.Drain(q, h, cfg)
	if err != nil {
		t.Fatalf("Drain: %v", err)
	}
	return job
}

// wantResults checks that every item i of ids has the result "done:" +
// prefix + i, and was handled exactly once.
func wantResults(t testing.TB, q *queue.Queue, c *calls, prefix string, ids []string) {
	t.Helper()
	for i, id := range ids {
		r, err := q.Result(context.Background(), id)
		if want := "done:" + prefix + strconv.Itoa(i); string(r) != want || err != nil {
			t.Fatalf("Result(item %d) = %q, %v; want %q", i, r, err, want)
		}
		if n := c.of(id); n != 1 {
			t.Fatalf("item %d handled %d times, want once", i, n)
		}
	}
}

func TestDrainAcksResults(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ids := enqueue(t, b.q, "item-", 250)
	c := &calls{}
	job := mustDrain(t, b.q, echo(c), jobs.DrainConfig{})
	wantReport(t, mustSlice(t, job, 10*time.Second), recruiter.Report{Items: 250}, "batches of 100, 100, 50")
	wantResults(t, b.q, c, "item-", ids)
	wantDepth(t, b.q, queue.Depth{})
	wantReport(t, mustSlice(t, job, time.Second), recruiter.Report{}, "empty queue")
}

func TestDrainBatchLimits(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ids := enqueue(t, b.q, "item-", 25)
	c := &calls{}
	two := mustDrain(t, b.q, echo(c), jobs.DrainConfig{Batching: jobs.Batching{Batch: 10, MaxBatches: 2}})
	wantReport(t, mustSlice(t, two, 10*time.Second), recruiter.Report{Items: 20, More: true}, "MaxBatches 2")
	// Without a deadline, one batch.
	if rep, err := two.Run(context.Background()); rep != (recruiter.Report{Items: 5}) || err != nil {
		t.Fatalf("slice without a deadline: %+v, %v; want the last 5 items", rep, err)
	}
	wantResults(t, b.q, c, "item-", ids)
}

// A slice whose budget is spent claims nothing, so strands nothing.
func TestDrainWithSpentBudget(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	enqueue(t, b.q, "item-", 3)
	c := &calls{}
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Millisecond))
	defer cancel()
	rep, err := mustDrain(t, b.q, echo(c), jobs.DrainConfig{}).Run(ctx)
	if rep != (recruiter.Report{}) || !errors.Is(err, context.DeadlineExceeded) || c.total() != 0 {
		t.Fatalf("Run = %+v, %v, %d handled; want nothing and the deadline's error", rep, err, c.total())
	}
	wantDepth(t, b.q, queue.Depth{Pending: 3})
}

func TestDrainNacksFailures(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxAttempts: 2, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	ids := enqueue(t, b.q, "item-", 10)
	c := &calls{}
	failOdd := func(ctx context.Context, it queue.Item) ([]byte, error) {
		if p := string(it.Payload); p[len(p)-1]%2 == 1 {
			c.add(it.ID)
			return nil, errors.New("odd payload " + p)
		}
		return echo(c)(ctx, it)
	}
	job := mustDrain(t, b.q, failOdd, jobs.DrainConfig{})
	wantReport(t, mustSlice(t, job, 10*time.Second), recruiter.Report{Items: 10}, "first attempts")
	if s := mustDepth(t, b.q); s.Delayed != 5 || s.Pending+s.Leased+s.Dead != 0 {
		t.Fatalf("Depth after the first attempts = %+v; want the 5 failures delayed for a retry", s)
	}

	promote, err := jobs.PromoteDue(b.q, jobs.PromoteConfig{})
	if err != nil {
		t.Fatal(err)
	}
	testrig.Eventually(t, 5*time.Second, "the 5 retries promoted", func() bool {
		mustSlice(t, promote, time.Second)
		return mustDepth(t, b.q).Pending == 5
	})
	wantReport(t, mustSlice(t, job, 10*time.Second), recruiter.Report{Items: 5}, "second attempts")
	wantDepth(t, b.q, queue.Depth{Dead: 5})

	dead, err := testrig.DeadLetters(context.Background(), b.q, 10)
	if err != nil || len(dead) != 5 {
		t.Fatalf("Dead = %+v, %v; want the 5 odd items", dead, err)
	}
	for _, d := range dead {
		if !strings.HasPrefix(d.Cause, "odd payload item-") || d.Attempts != 2 || c.of(d.ID) != 2 {
			t.Errorf("dead letter %+v (handled %d times): want the handler's error as cause, 2 attempts", d, c.of(d.ID))
		}
	}
	for i, id := range ids {
		if i%2 == 0 {
			if r, err := b.q.Result(context.Background(), id); string(r) != "done:item-"+strconv.Itoa(i) || err != nil {
				t.Errorf("Result(item %d) = %q, %v", i, r, err)
			}
		}
	}
}

// A panic fails only its own item: nacked with the panic as cause, the
// other items settled, and the slice's error carries the stack.
func TestDrainPanicLosesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxAttempts: 1})
	ids := enqueue(t, b.q, "item-", 5)
	c := &calls{}
	panicky := func(ctx context.Context, it queue.Item) ([]byte, error) {
		if string(it.Payload) == "item-2" {
			panic("handler bug")
		}
		return echo(c)(ctx, it)
	}
	rep, _, err := runSlice(t, mustDrain(t, b.q, panicky, jobs.DrainConfig{}), 10*time.Second)
	if !errors.Is(err, jobs.ErrHandlerPanic) || !strings.Contains(err.Error(), "handler bug") ||
		!strings.Contains(err.Error(), ids[2]) || !strings.Contains(err.Error(), "drain_test.go") {
		t.Errorf("Run error %v; want ErrHandlerPanic with the value, the item and the stack", err)
	}
	wantReport(t, rep, recruiter.Report{Items: 5}, "a batch with a panic")
	wantDepth(t, b.q, queue.Depth{Dead: 1})
	dead, err := testrig.DeadLetters(context.Background(), b.q, 10)
	if err != nil || len(dead) != 1 || dead[0].ID != ids[2] || dead[0].Cause != "jobs: handler panicked: handler bug" {
		t.Fatalf("Dead = %+v, %v; want item 2 with the panic as cause", dead, err)
	}
	for _, i := range []int{0, 1, 3, 4} {
		if r, err := b.q.Result(context.Background(), ids[i]); string(r) != "done:item-"+strconv.Itoa(i) || err != nil {
			t.Errorf("Result(item %d) = %q, %v", i, r, err)
		}
	}
}

// With a slow handler and a short budget, a slice stops before its
// deadline and hands the items it could not start back at once: nothing
// stays leased, and they are claimed again as first attempts.
// Items of 50ms in a budget of 1s, so at most 19 can start: the first item
// starts whatever is left, and the claim before it has most of a second,
// where a 100ms budget once let a slow claim leave less than an item.
func TestDrainHandsBackUnstartedItems(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ids := enqueue(t, b.q, "item-", 50)
	c, late := &calls{}, &lateStarts{}
	const item, budget = 50 * time.Millisecond, time.Second
	slow := func(ctx context.Context, it queue.Item) ([]byte, error) {
		late.check(item)
		select {
		case <-time.After(item):
			return echo(c)(ctx, it)
		case <-ctx.Done():
			c.add(it.ID)
			return nil, ctx.Err()
		}
	}
	late.deadline = time.Now().Add(budget)
	rep, elapsed, err := runSlice(t, mustDrain(t, b.q, slow, jobs.DrainConfig{Concurrency: 1}), budget)
	t.Logf("%d items settled in %v of %v", rep.Items, elapsed, budget)
	if err != nil || rep.Items < 1 || rep.Items > 19 || !rep.More || late.n.Load() != 0 {
		t.Fatalf("Run = %+v, %v, %d items started without %v left; want fewer than 20 items settled, More, none started late",
			rep, err, late.n.Load(), item)
	}
	handled := c.total()
	s := mustDepth(t, b.q)
	if handled != rep.Items || s.Leased != 0 || s.Pending != int64(50-handled) || s.Delayed > 1 {
		t.Fatalf("%d items handled, %d settled, Depth %+v; want nothing leased, the %d unstarted items pending, at most the last item interrupted",
			handled, rep.Items, s, 50-handled)
	}
	// Released to the head, uncounted: the next claim takes them, first attempts.
	for _, it := range mustClaim(t, b.q, 50, 50-handled) {
		if it.Attempt != 1 || c.of(it.ID) != 0 {
			t.Errorf("reclaimed %s: attempt %d, handled %d times; want an unstarted first attempt", it.ID, it.Attempt, c.of(it.ID))
		}
	}
	for i := range handled - int(s.Delayed) {
		if r, err := b.q.Result(context.Background(), ids[i]); string(r) != "done:item-"+strconv.Itoa(i) || err != nil {
			t.Errorf("Result(item %d) = %q, %v", i, r, err)
		}
	}
}

// lateStarts counts the items started with less than their own duration
// left before the deadline. Unlike the slice's wall time, which a loaded
// machine stretches, this is what Drain decides, and is checked exactly.
// The slice's deadline is set before it runs: a handler's own context
// ends with its lease, not with the budget.
type lateStarts struct {
	n        atomic.Int32
	deadline time.Time
}

func (l *lateStarts) check(d time.Duration) {
	if time.Until(l.deadline) < d {
		l.n.Add(1)
	}
}

// Later batches claim only what the budget left fits, so little is
// claimed in vain; each batch's unstarted items are still handed back.
// Items of 25ms in a budget of 600ms: at most 24 fit, and the first batch
// of 4 has about half a second to spare on a slow machine (with 5ms items
// in 120ms, one slow claim left too little for the first batch).
func TestDrainClaimsWhatFits(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	enqueue(t, b.q, "item-", 100)
	c, late := &calls{}, &lateStarts{}
	const item, budget = 25 * time.Millisecond, 600 * time.Millisecond
	slow := func(ctx context.Context, it queue.Item) ([]byte, error) {
		late.check(item)
		time.Sleep(item) // ignores ctx: the job must not start it late
		return echo(c)(ctx, it)
	}
	late.deadline = time.Now().Add(budget)
	rep, elapsed, err := runSlice(t, mustDrain(t, b.q, slow, jobs.DrainConfig{Batching: jobs.Batching{Batch: 4}, Concurrency: 1}), budget)
	t.Logf("%d items settled in %v of %v", rep.Items, elapsed, budget)
	if err != nil || rep.Items < 4 || rep.Items > 24 || !rep.More || rep.Items != c.total() || late.n.Load() != 0 {
		t.Fatalf("Run = %+v, %v, %d handled, %d started without %v left; want 4 to 24 items, More, none started late",
			rep, err, c.total(), late.n.Load(), item)
	}
	wantDepth(t, b.q, queue.Depth{Pending: int64(100 - rep.Items)})
}

// An item whose lease expired while its handler ran, and that Tidy handed
// to someone else, is not settled by this slice and not counted.
// The lease of 1s leaves the claim 750ms (the lease less Drain's margin for
// the settle) to return before the item can start at all; with 20ms, a
// claim slower than a few milliseconds left the item unstarted.
func TestDrainLostLeaseIsNotCounted(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Lease: time.Second})
	enqueue(t, b.q, "item-", 1)
	tidy, err := jobs.TidyStale(b.q, jobs.TidyConfig{})
	if err != nil {
		t.Fatal(err)
	}
	late := func(ctx context.Context, it queue.Item) ([]byte, error) {
		untilRedisTime(t, b.rdb, it.Deadline)
		if rep := mustSlice(t, tidy, time.Second); rep.Items != 1 {
			t.Errorf("tidy during the handler: %+v, want the expired lease", rep)
		}
		return []byte("too late"), nil
	}
	// The lost lease is not counted, and not silent: the slice reports it.
	rep, _, err := runSlice(t, mustDrain(t, b.q, late, jobs.DrainConfig{}), 10*time.Second)
	if !errors.Is(err, queue.ErrLeaseLost) || rep.Items != 0 {
		t.Fatalf("Run = %+v, %v; want no items and an error wrapping queue.ErrLeaseLost", rep, err)
	}
	wantDepth(t, b.q, queue.Depth{Pending: 1})
	if it := mustClaim(t, b.q, 1, 1)[0]; it.Attempt != 2 {
		t.Errorf("reclaimed at attempt %d, want 2", it.Attempt)
	}
}

// TestDrainRespectsTheLease: with a lease shorter than a batch's handling
// and a tidier returning expired leases meanwhile, Drain starts no item
// whose lease cannot cover it and settles every item it handled: none is
// thrown away, retried or dead-lettered for a lease that ran out.
//
// A lease of 1.2s and items of 300ms: Drain keeps a quarter of the lease
// (300ms, with RedisTimeout above it) for the settle, so an item may run
// 300ms late, or the settle take 300ms, before a lease is lost. With a
// 60ms lease that margin was 15ms, which a loaded machine overran.
func TestDrainRespectsTheLease(t *testing.T) {
	t.Parallel()
	const lease, item = 1200 * time.Millisecond, 300 * time.Millisecond
	b := setup(t, queue.Config{Lease: lease, MaxAttempts: 1})
	enqueue(t, b.q, "item-", 6)
	stopTidy := make(chan struct{})
	tidied := make(chan struct{})
	go func() { // an adversary: returns expired leases as soon as they expire
		defer close(tidied)
		for {
			select {
			case <-stopTidy:
				return
			case <-time.After(time.Millisecond):
				qstore.Of(b.q).Tidy(context.Background(), queue.BatchMax)
			}
		}
	}()
	defer func() { close(stopTidy); <-tidied }()
	c := &calls{}
	handler := func(ctx context.Context, it queue.Item) ([]byte, error) {
		time.Sleep(item)
		return echo(c)(ctx, it)
	}
	// A batch of 6 items takes 1.8s, longer than the lease; the budget of
	// 10s leaves the lease as the only bound.
	job := mustDrain(t, b.q, handler, jobs.DrainConfig{Batching: jobs.Batching{Batch: 6, RedisTimeout: time.Second}})
	for range 20 {
		if mustDepth(t, b.q).Pending == 0 {
			break
		}
		if _, _, err := runSlice(t, job, 10*time.Second); err != nil {
			t.Fatalf("a slice failed: %v", err)
		}
	}
	s := mustDepth(t, b.q)
	if s.Pending != 0 || s.Leased != 0 || s.Dead != 0 || s.Delayed != 0 || c.total() != 6 {
		t.Fatalf("Depth %+v after %d handled; want all 6 acked, none dead for a lost lease", s, c.total())
	}
}
