package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/jobs"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/recruiter"
)

// TestDrainLeaseCoversTheFinish: a handler that runs until its context
// ends, with a tidier returning expired leases as soon as Redis sees them
// expire. Drain must end the handler early enough that the calls after it
// (settling the item, releasing the batch's unstarted items) reach Redis
// within the lease: the blocked item is settled by its own nack, never by
// Tidy as "lease expired", and the unstarted items come back uncounted,
// never at attempt 2 or in the dead letters.
//
// No margin survives a machine that stops the process (or Redis) for
// longer than it: a round in which the handler's wake-up and the finish
// together took more than an eighth of the lease is not judged, only
// counted. Drain's margin is wider than that, and the defect this guards
// against (a margin of a round trip or two, with Settle and Release one
// after the other) loses leases in rounds well within it.
func TestDrainLeaseCoversTheFinish(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		lease       time.Duration
		maxAttempts int // 1: a nacked item dies, with the nack's cause
		rounds      int
	}{
		{name: "lease150ms", lease: 150 * time.Millisecond, rounds: 8},
		{name: "lease40ms", lease: 40 * time.Millisecond, maxAttempts: 1, rounds: 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			drainLeaseRounds(t, tc.lease, tc.maxAttempts, tc.rounds)
		})
	}
}

// drainLeaseRounds runs slices of 10 items whose first blocks until its
// context ends, until rounds of them are judged (at most 3×rounds).
func drainLeaseRounds(t *testing.T, lease time.Duration, maxAttempts, rounds int) {
	const batch = 10
	// Retries wait an hour: every claim promotes the retries that are due,
	// and a round's nacked item, due in the next round, would come back
	// among that round's items (and out of its count of delayed ones).
	b := setup(t, queue.Config{Lease: lease, MaxAttempts: maxAttempts, BackoffBase: time.Hour, BackoffMax: time.Hour})
	cfg := b.q.Config()
	// The checker claims with a long lease, so that its own claims cannot
	// expire before it acks them.
	checkCfg := cfg
	checkCfg.Lease = time.Minute
	checker := newQueue(t, b.rdb, "jobs", checkCfg)
	runTidier(t, newQueue(t, b.srv.Client(t), "jobs", cfg), 200*time.Microsecond)

	var blocked atomic.Value      // the id of this round's blocking item
	var blockedUntil atomic.Value // its context's deadline, once started
	handler := func(ctx context.Context, it queue.Item) ([]byte, error) {
		if id, _ := blocked.Load().(string); it.ID == id {
			dl, _ := ctx.Deadline()
			blockedUntil.Store(dl)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return []byte("done"), nil
	}
	job := mustDrain(t, b.q, handler, jobs.DrainConfig{Batching: jobs.Batching{Batch: batch}, Concurrency: 1})

	stall := lease / 8
	var judged, stalled int
	var tally leaseTally
	for r := 0; judged < rounds && r < 3*rounds; r++ {
		ids := enqueue(t, b.q, fmt.Sprintf("r%d-item-", r), batch)
		blocked.Store(ids[0])
		blockedUntil.Store(time.Time{})
		delayed := mustDepth(t, b.q).Delayed
		rep, _, runErr := runSlice(t, job, time.Second)
		dl, _ := blockedUntil.Load().(time.Time)
		started := !dl.IsZero()
		window := time.Since(dl)
		back := reclaimAll(t, checker)
		dead, err := testrig.DeadLetters(context.Background(), b.q, queue.BatchMax)
		if err != nil {
			t.Fatalf("Dead: %v", err)
		}
		if _, err := qstore.Of(b.q).PurgeDead(context.Background(), queue.BatchMax); err != nil {
			t.Fatalf("PurgeDead: %v", err)
		}
		if started && window > stall {
			stalled++ // the machine held us past the margin: not judged
			t.Logf("round %d not judged: %v from the handler's deadline to the slice's end", r, window)
			continue
		}
		judged++
		tally.judge(t, r, ids, started, rep, runErr, back, dead, mustDepth(t, b.q).Delayed-delayed, cfg.MaxAttempts)
	}
	t.Logf("lease %v: %d rounds judged (%d not: stalled); the blocked item lost its lease in %d; of %d unstarted items, %d came back counted again, %d dead",
		lease, judged, stalled, tally.blockedLost, tally.unstarted, tally.recounted, tally.deadUnstarted)
	if judged < rounds/2 {
		t.Errorf("only %d rounds of %d were judged: the machine stalled past %v in the others", judged, judged+stalled, stall)
	}
}

// leaseTally counts what the judged rounds lost.
type leaseTally struct {
	blockedLost   int // rounds whose blocked item was not settled by its own nack
	unstarted     int // items that had to come back unstarted
	recounted     int // of them, claimed again at attempt 2
	deadUnstarted int // of them, dead-lettered by Tidy
}

// judge checks one round: back are the items claimed again after the
// slice, dead the dead letters it left, delayed how many items it delayed.
func (l *leaseTally) judge(t *testing.T, r int, ids []string, started bool, rep recruiter.Report, runErr error,
	back []queue.Item, dead []qstore.ItemInfo, delayed int64, maxAttempts int) {
	t.Helper()
	want := len(ids) // items that must come back unstarted
	if started {
		want--
	}
	l.unstarted += want
	recounted, blockedBack := 0, false
	for _, it := range back {
		switch {
		case started && it.ID == ids[0]:
			blockedBack = true // Tidy handed it back: its nack came too late
		case it.Attempt != 1:
			recounted++
		}
	}
	causes := map[string]int{}
	blockedNacked := false
	for _, d := range dead {
		if d.ID == ids[0] && d.Cause == context.DeadlineExceeded.Error() && d.Attempts == 1 {
			blockedNacked = true
		} else {
			causes[d.Cause]++
		}
	}
	deadUnstarted := len(dead)
	if blockedNacked {
		deadUnstarted--
	}
	l.recounted += recounted
	l.deadUnstarted += deadUnstarted
	if len(back)-btoi(blockedBack) != want || recounted > 0 || deadUnstarted > 0 {
		t.Errorf("round %d: %d of %d unstarted items came back, %d of them at attempt 2; other dead letters %v; want all, at attempt 1",
			r, len(back)-btoi(blockedBack), want, recounted, causes)
	}
	if !started {
		if runErr != nil || delayed != 0 {
			t.Errorf("round %d: Run = %+v, %v, %d delayed; want nothing started, no error", r, rep, runErr, delayed)
		}
		return
	}
	settled := rep.Items == 1 && runErr == nil && !blockedBack
	if maxAttempts > 1 {
		settled = settled && delayed == 1
	} else {
		settled = settled && blockedNacked
	}
	if !settled {
		l.blockedLost++
		t.Errorf("round %d: Run = %+v, %v, %d delayed, blocked item dead by its nack %v, back in the queue %v; want it settled by its own nack",
			r, rep, runErr, delayed, blockedNacked, blockedBack)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// reclaimAll claims every pending item with q and acks it, and returns
// the items as claimed.
func reclaimAll(t *testing.T, q *queue.Queue) []queue.Item {
	t.Helper()
	items, err := q.Claim(context.Background(), queue.BatchMax)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	outcomes := make([]queue.Settlement, len(items))
	for i, it := range items {
		outcomes[i] = queue.Settlement{Item: it, Result: []byte("checked")}
	}
	if st, err := q.Settle(context.Background(), outcomes...); err != nil || st.Acked != len(items) {
		t.Fatalf("acking the %d reclaimed items: %+v, %v", len(items), st, err)
	}
	return items
}

// runTidier calls q.Tidy every period until the test ends, as an eager
// TidyStale job would.
func runTidier(t *testing.T, q *queue.Queue, period time.Duration) {
	t.Helper()
	var calls, failed atomic.Int64
	var lastErr atomic.Value
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			calls.Add(1)
			if _, err := qstore.Of(q).Tidy(context.Background(), queue.BatchMax); err != nil && !errors.Is(err, context.Canceled) {
				failed.Add(1)
				lastErr.Store(err.Error())
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
		if calls.Load() == 0 || failed.Load() > 0 {
			t.Errorf("the tidier made %d calls, %d failed (last: %v): want it running throughout", calls.Load(), failed.Load(), lastErr.Load())
		}
	})
}
