package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// Drain alone keeps its queue moving: its claims bring back the retries
// when due and a crashed worker's expired leases, with no PromoteDue or
// TidyStale, and every item ends with its result, handled once per
// attempt.
func TestDrainMaintainsItsQueue(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Lease: 100 * time.Millisecond, BackoffBase: 20 * time.Millisecond, BackoffMax: 20 * time.Millisecond})
	// The drain's handle on the queue claims for a minute, so that its own
	// leases do not expire on a slow machine.
	patient := newQueue(t, b.rdb, b.q.Name(), queue.Config{Prefix: b.q.Config().Prefix, Lease: time.Minute,
		BackoffBase: 20 * time.Millisecond, BackoffMax: 20 * time.Millisecond})
	ids := enqueue(t, b.q, "item-", 30)
	crashed := mustClaim(t, b.q, 10, 10) // never settled: the worker crashed
	c := &calls{}
	failed := map[string]bool{}
	failOnce := func(ctx context.Context, it queue.Item) ([]byte, error) {
		if it.Payload[len(it.Payload)-1] == '5' && !failed[it.ID] {
			failed[it.ID] = true // handlers run one at a time in a slice
			return nil, errors.New("fails once")
		}
		return echo(c)(ctx, it)
	}
	drain := mustDrain(t, patient, failOnce, jobs.DrainConfig{Batching: jobs.Batching{Batch: 8}})
	settled := 0
	testrig.Eventually(t, 20*time.Second, "every item done", func() bool {
		settled += mustSlice(t, drain, 10*time.Second).Items
		return mustDepth(t, b.q) == queue.Depth{}
	}, func() string { return fmt.Sprintf("queue: %+v", mustDepth(t, b.q)) })
	wantResults(t, b.q, c, "item-", ids)
	// 30 items, 3 of them ("item-5", "-15", "-25") failed once (item-5
	// maybe at its second attempt, recovered from the crashed worker).
	if settled != 33 || len(failed) != 3 {
		t.Fatalf("settled %d with %d failures, want 33 with 3", settled, len(failed))
	}
	for _, it := range crashed {
		if err := b.q.Ack(context.Background(), it, nil); !errors.Is(err, queue.ErrLeaseLost) {
			t.Fatalf("the crashed worker's Ack of %s = %v, want ErrLeaseLost", it.ID, err)
		}
	}
}

// Drain reports More while its claims' maintenance reaches its bound
// (the batch's size), also when what it handed back went to the dead
// letters and left nothing to handle, so that the recruiter comes back
// soon; and reports no More once it caught up.
func TestDrainReportsMoreWhileMaintenanceIsBehind(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Lease: 20 * time.Millisecond, MaxAttempts: 1})
	enqueue(t, b.q, "item-", 5)
	crashed := mustClaim(t, b.q, 5, 5) // their last attempt: they expire to the dead letters
	untilRedisTime(t, b.rdb, crashed[0].Deadline)
	c := &calls{}
	drain := mustDrain(t, b.q, echo(c), jobs.DrainConfig{Batching: jobs.Batching{Batch: 2, MaxBatches: 1}})
	for i, want := range []recruiter.Report{{More: true}, {More: true}, {}} {
		if rep := mustSlice(t, drain, 10*time.Second); rep != want {
			t.Fatalf("slice %d: Report = %+v, want %+v", i+1, rep, want)
		}
	}
	wantDepth(t, b.q, queue.Depth{Dead: 5})
	if c.total() != 0 {
		t.Fatalf("handler called %d times, want none", c.total())
	}
}
