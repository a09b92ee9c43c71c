package jobs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

func TestTidyStaleReturnsExpiredLeases(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Lease: 50 * time.Millisecond})
	// The same queue through a client whose leases last: they must stay.
	patient := newQueue(t, b.rdb, b.q.Name(), queue.Config{Lease: time.Hour})
	enqueue(t, b.q, "item-", 40)
	crashed := mustClaim(t, b.q, 20, 20)
	kept := mustClaim(t, patient, 5, 5)
	untilRedisTime(t, b.rdb, crashed[0].Deadline)
	wantDepth(t, b.q, queue.Depth{Pending: 15, Leased: 25, Expired: 20})

	one, err := jobs.TidyStale(b.q, jobs.TidyConfig{Batching: jobs.Batching{Batch: 8, MaxBatches: 1}})
	if err != nil {
		t.Fatal(err)
	}
	wantReport(t, mustSlice(t, one, time.Second), recruiter.Report{Items: 8, More: true}, "one batch of 8")

	all, err := jobs.TidyStale(b.q, jobs.TidyConfig{Batching: jobs.Batching{Batch: 8}})
	if err != nil {
		t.Fatal(err)
	}
	// Budgets of 10s in this file: a slice makes another batch only while
	// twice the slowest is left, and a loaded machine can stretch one
	// batch past a third of a second; the batching, not the pacing, is
	// the point here (pace_internal_test.go tests that).
	wantReport(t, mustSlice(t, all, 10*time.Second), recruiter.Report{Items: 12, More: false}, "the rest, in batches of 8")
	wantReport(t, mustSlice(t, all, time.Second), recruiter.Report{}, "nothing left")
	wantDepth(t, b.q, queue.Depth{Pending: 35, Leased: 5})

	// The recovered items are claimed again, as their second attempt, and
	// the patient worker's claims are untouched.
	again := map[string]int{}
	for _, it := range mustClaim(t, b.q, 35, 35) {
		again[it.ID] = it.Attempt
	}
	for _, it := range crashed {
		if again[it.ID] != 2 {
			t.Errorf("crashed item %s: reclaimed at attempt %d, want 2", it.ID, again[it.ID])
		}
	}
	if s, err := patient.Settle(context.Background(), outcomes(kept)...); s.Acked != 5 || err != nil {
		t.Errorf("patient worker's Settle = %+v, %v; want its 5 leases intact", s, err)
	}
}

// A slice whose budget is already spent does nothing and says why; the
// pacing between batches is tested on a fake step in pace_internal_test.go.
func TestTidyStaleWithSpentBudget(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Lease: time.Millisecond})
	enqueue(t, b.q, "x", 10)
	mustClaim(t, b.q, 10, 10)
	untilRedisTime(t, b.rdb, redisNow(t, b.rdb).Add(5*time.Millisecond))
	job, err := jobs.TidyStale(b.q, jobs.TidyConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	rep, err := job.Run(ctx)
	if rep != (recruiter.Report{}) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slice with a spent budget: %+v, %v; want nothing done and the deadline's error", rep, err)
	}
	wantDepth(t, b.q, queue.Depth{Leased: 10, Expired: 10})
	// Without a deadline, one batch.
	rep, err = job.Run(context.Background())
	if rep != (recruiter.Report{Items: 10}) || err != nil {
		t.Fatalf("slice without a deadline: %+v, %v; want the 10 leases", rep, err)
	}
	wantDepth(t, b.q, queue.Depth{Pending: 10})
}

func TestPromoteDueMovesDueItems(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{BackoffBase: 20 * time.Millisecond, BackoffMax: 20 * time.Millisecond})
	later := newQueue(t, b.rdb, b.q.Name(), queue.Config{BackoffBase: time.Hour, BackoffMax: time.Hour})
	enqueue(t, b.q, "item-", 15)
	// The later ones first: a claim promotes what is due, and would take
	// back soon ones already due on a slow machine.
	if s, err := later.Settle(context.Background(), failures(mustClaim(t, later, 5, 5), "later")...); s.Retried != 5 || err != nil {
		t.Fatalf("Settle = %+v, %v", s, err)
	}
	soon := mustClaim(t, b.q, 10, 10)
	if s, err := b.q.Settle(context.Background(), failures(soon, "soon")...); s.Retried != 10 || err != nil {
		t.Fatalf("Settle = %+v, %v", s, err)
	}
	testrig.Eventually(t, 5*time.Second, "10 items due", func() bool { return mustDepth(t, b.q).Due == 10 })

	job, err := jobs.PromoteDue(b.q, jobs.PromoteConfig{Batching: jobs.Batching{Batch: 4}})
	if err != nil {
		t.Fatal(err)
	}
	wantReport(t, mustSlice(t, job, 10*time.Second), recruiter.Report{Items: 10, More: false}, "batches of 4, 4 and 2")
	wantReport(t, mustSlice(t, job, time.Second), recruiter.Report{}, "nothing due")
	wantDepth(t, b.q, queue.Depth{Pending: 10, Delayed: 5})
	// The promoted ones are the ten soon ones (in the order of their
	// jittered due times), at their second attempt.
	want := map[string]bool{}
	for _, it := range soon {
		want[it.ID] = true
	}
	for _, it := range mustClaim(t, b.q, 15, 10) {
		if !want[it.ID] || it.Attempt != 2 {
			t.Errorf("claimed after promotion: %s attempt %d, want one of the 10 soon items, attempt 2", it.ID, it.Attempt)
		}
		delete(want, it.ID)
	}
}

func outcomes(items []queue.Item) []queue.Settlement {
	out := make([]queue.Settlement, len(items))
	for i, it := range items {
		out[i] = queue.Settlement{Item: it, Result: []byte("ok")}
	}
	return out
}

func failures(items []queue.Item, cause string) []queue.Settlement {
	out := make([]queue.Settlement, len(items))
	for i, it := range items {
		out[i] = queue.Settlement{Item: it, Err: errors.New(cause)}
	}
	return out
}
