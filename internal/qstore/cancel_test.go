package qstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
)

func mustCancel(t testing.TB, q *qstore.Store, id string, want qstore.CancelResult) {
	t.Helper()
	if got, err := q.Cancel(context.Background(), id); err != nil || got != want {
		t.Fatalf("Cancel(%s) = %+v, %v; want %+v", id, got, err, want)
	}
}

func wantWaitCanceled(t testing.TB, q *qstore.Store, id string) {
	t.Helper()
	if _, err := q.Wait(context.Background(), id); !errors.Is(err, qstore.ErrCanceled) {
		t.Fatalf("Wait(%s) = %v, want ErrCanceled", id, err)
	}
}

// A canceled pending item is never claimed, not even dead-lettered as a
// malformed entry: its tombstone is dropped by the claim that meets it;
// Depth does not count it meanwhile; a second cancel changes nothing.
func TestCancelPendingIsNeverClaimed(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ids := enqueueTasks(t, b.q, []byte("a"), []byte("b"), []byte("c"))
	mustCancel(t, b.q, ids[1], qstore.CancelResult{Canceled: 1})
	mustCancel(t, b.q, ids[1], qstore.CancelResult{})
	wantCounts(t, b.q, qstore.Depth{Pending: 3}) // its tombstone, until a claim meets it
	wantWaitCanceled(t, b.q, ids[1])
	items := mustClaim(t, b.q, 10, 2)
	if items[0].ID != ids[0] || items[1].ID != ids[2] {
		t.Fatalf("claimed %s %s, want %s %s", items[0].ID, items[1].ID, ids[0], ids[2])
	}
	wantCounts(t, b.q, qstore.Depth{Leased: 2})
	if n, err := b.rdb.Exists(context.Background(), tagOf(b.q)+":tombstones").Result(); err != nil || n != 0 {
		t.Fatalf("tombstones left after the claim: %d, %v", n, err)
	}
	if it, err := b.q.Item(context.Background(), ids[1], 0); err != nil || it.State != qstore.StateUnknown {
		t.Fatalf("Item of the canceled = %+v, %v; want unknown", it, err)
	}
}

// Delayed items, items in a priority's lane and items set aside by their
// type's limit are canceled where they are, and never claimed.
func TestCancelDelayedLanedAndParked(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	if err := b.q.SetPriorities(ctx, map[string]int{"high": 2}); err != nil {
		t.Fatal(err)
	}
	delayed := mustEnqueueWith(t, b.q, "d", qstore.EnqueueOptions{Delay: time.Millisecond}, false)
	laned := mustEnqueueWith(t, b.q, "l", qstore.EnqueueOptions{Priority: "high"}, false)
	setLimit(t, b.q, "slow", qstore.TypeLimit{Running: 1})
	slow := enqueueTasks(t, b.q, task("slow", "s1"), task("slow", "s2"))
	promoteDue(t, b, delayed)
	running := mustClaim(t, b.q, 10, 3) // the due delayed, the laned, s1; s2 set aside
	wantCounts(t, b.q, qstore.Depth{Leased: 3, Pending: 1, Parked: 1})
	if n, err := b.q.Release(ctx, running...); n != 3 || err != nil {
		t.Fatalf("Release = %d, %v", n, err)
	}
	// Back where they were: the delayed and laned ones pending, s1 and s2
	// set aside.
	for _, id := range []string{delayed, laned, slow[0], slow[1]} {
		mustCancel(t, b.q, id, qstore.CancelResult{Canceled: 1})
	}
	late := mustEnqueueWith(t, b.q, "later", qstore.EnqueueOptions{Delay: time.Hour}, false)
	mustCancel(t, b.q, late, qstore.CancelResult{Canceled: 1})
	// Depth counts tombstones until claims meet them: a claim looks at as
	// many set-aside items of a type as its limit has room.
	wantCounts(t, b.q, qstore.Depth{Pending: 4, Parked: 2})
	mustClaim(t, b.q, 10, 0)
	mustClaim(t, b.q, 10, 0)
	wantCounts(t, b.q, qstore.Depth{})
}

// A leased item's cancel ends its lease at once: its place in its type's
// limit is free, the drain's poll sees it, and the settle of its claim
// changes nothing and says so.
func TestCancelLeased(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	setLimit(t, b.q, "one", qstore.TypeLimit{Running: 1})
	ids := enqueueTasks(t, b.q, task("one", "1"), task("one", "2"), []byte("plain"))
	items := mustClaim(t, b.q, 10, 2) // 1 and plain; 2 set aside
	mustCancel(t, b.q, ids[0], qstore.CancelResult{Canceled: 1, Running: 1})
	got, err := b.q.CanceledOf(ctx, []string{ids[0], ids[2]})
	if err != nil || !got[0] || got[1] {
		t.Fatalf("CanceledOf = %v, %v; want [true false]", got, err)
	}
	if next := mustClaim(t, b.q, 10, 1); next[0].ID != ids[1] {
		t.Fatalf("claimed %s after the cancel, want the set-aside %s", next[0].ID, ids[1])
	}
	s, err := b.q.Settle(ctx, qstore.Settlement{Item: items[0], Result: []byte("late")},
		qstore.Settlement{Item: items[1], Err: errors.New("boom")})
	if err != nil || s.Canceled != 1 || s.Retried != 1 || len(s.Lost) != 0 {
		t.Fatalf("Settle = %+v, %v; want 1 canceled, 1 retried", s, err)
	}
	if err := b.q.Ack(ctx, items[0], nil); !errors.Is(err, qstore.ErrCanceled) {
		t.Fatalf("Ack of a canceled claim = %v, want ErrCanceled", err)
	}
	wantWaitCanceled(t, b.q, ids[0])
}

// After an ack or a dead-lettering, Cancel changes nothing and says the
// item is finished; an unknown id is not found; an empty one invalid.
func TestCancelFinishedAndUnknown(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxAttempts: 1})
	ctx := testContext(t)
	ids := enqueueTasks(t, b.q, []byte("ok"), []byte("fails"))
	items := mustClaim(t, b.q, 2, 2)
	if _, err := b.q.Settle(ctx, qstore.Settlement{Item: items[0], Result: []byte("r")},
		qstore.Settlement{Item: items[1], Err: errors.New("boom")}); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if r, err := b.q.Cancel(ctx, id); !errors.Is(err, qstore.ErrFinished) || r.Canceled != 0 {
			t.Fatalf("Cancel(%s) finished = %+v, %v; want ErrFinished", id, r, err)
		}
	}
	if res, err := b.q.Wait(ctx, ids[0]); err != nil || string(res) != "r" {
		t.Fatalf("Wait after a late cancel = %q, %v; want the result", res, err)
	}
	if _, err := b.q.Cancel(ctx, "nosuchitem"); !errors.Is(err, qstore.ErrNotFound) {
		t.Fatalf("Cancel of an unknown id = %v, want ErrNotFound", err)
	}
	if _, err := b.q.Cancel(ctx, ""); !errors.Is(err, qstore.ErrInvalidArgument) {
		t.Fatalf("Cancel(\"\") = %v, want ErrInvalidArgument", err)
	}
}

// A waiter blocked on an item wakes at the cancel, not at its next read:
// WaitBlock is far longer than the test waits.
func TestCancelWakesWaiters(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{WaitBlock: time.Minute})
	id := enqueueTasks(t, b.q, []byte("x"))[0]
	done := make(chan error, 1)
	go func() {
		_, err := b.q.Wait(testContext(t), id)
		done <- err
	}()
	// Cancel once the waiter is marked (state.lua): then it blocks.
	testrig.Eventually(t, 10*time.Second, "the waiter marked", func() bool {
		marked, err := b.rdb.HExists(context.Background(), tagOf(b.q)+":waiting", id).Result()
		return err == nil && marked
	})
	mustCancel(t, b.q, id, qstore.CancelResult{Canceled: 1})
	select {
	case err := <-done:
		if !errors.Is(err, qstore.ErrCanceled) {
			t.Fatalf("Wait = %v, want ErrCanceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the waiter did not wake at the cancel")
	}
}

// A canceled item frees its unique key at once.
func TestCancelFreesUniqueKey(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	opts := qstore.EnqueueOptions{Unique: "k", UniqueFor: time.Hour}
	first := mustEnqueueWith(t, b.q, "a", opts, false)
	if dup := mustEnqueueWith(t, b.q, "b", opts, true); dup != first {
		t.Fatalf("duplicate got %s, want %s", dup, first)
	}
	mustCancel(t, b.q, first, qstore.CancelResult{Canceled: 1})
	if second := mustEnqueueWith(t, b.q, "c", opts, false); second == first {
		t.Fatal("the key still names the canceled item")
	}
}

// A chain's id cancels its current step, whichever step that is: a
// later step is never enqueued, and the chain reads canceled.
func TestCancelChainStopsItsLaterSteps(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	id := mustEnqueueWith(t, b.q, "s1", qstore.EnqueueOptions{Chain: qstore.ChainStep{Step: 1, Steps: 3}}, false)
	it := claimOne(t, b.q)
	if _, err := b.q.Settle(ctx, qstore.Settlement{Item: it, Result: []byte("r1"),
		FollowUp: &qstore.FollowUp{Payload: []byte("s2"), Chain: qstore.ChainStep{ID: id, Step: 2, Steps: 3}}}); err != nil {
		t.Fatal(err)
	}
	step2 := claimOne(t, b.q)
	mustCancel(t, b.q, id, qstore.CancelResult{Canceled: 1, Running: 1})
	// Step 2's handler ends with a next step: its ack changes nothing.
	s, err := b.q.Settle(ctx, qstore.Settlement{Item: step2, Result: []byte("r2"),
		FollowUp: &qstore.FollowUp{Payload: []byte("s3"), Chain: qstore.ChainStep{ID: id, Step: 3, Steps: 3}}})
	if err != nil || s.Canceled != 1 {
		t.Fatalf("Settle of the canceled step = %+v, %v", s, err)
	}
	wantCounts(t, b.q, qstore.Depth{})
	if c := wantChain(t, b.q, id, qstore.ChainCanceled, 2, 3); c.Current != step2.ID {
		t.Fatalf("chain's current step = %s, want %s", c.Current, step2.ID)
	}
	wantWaitCanceled(t, b.q, step2.ID)
}

// A join's id, or a child's, cancels the children not yet acked and the
// final item, which then never runs, though the last child's ack lands.
func TestCancelJoinNeverRunsItsFinalItem(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	id := mustEnqueueJoin(t, b.q, qstore.JoinSpec{Children: payloads("c", 3), Final: []byte("final")}, false)
	items := mustClaim(t, b.q, 2, 2)
	if _, err := b.q.Settle(ctx, qstore.Settlement{Item: items[0], Result: []byte("r")}); err != nil {
		t.Fatal(err)
	}
	// items[1] leased, the third pending, the final item waiting.
	mustCancel(t, b.q, items[1].ID, qstore.CancelResult{Canceled: 3, Running: 1})
	wantJoin(t, b.q, id, qstore.JoinCanceled, 1, 3)
	wantWaitCanceled(t, b.q, id)
	if s, err := b.q.Settle(ctx, qstore.Settlement{Item: items[1], Result: []byte("r")}); err != nil || s.Canceled != 1 {
		t.Fatalf("Settle of a canceled child = %+v, %v", s, err)
	}
	mustClaim(t, b.q, 10, 0)
	wantCounts(t, b.q, qstore.Depth{})
	mustCancel(t, b.q, id, qstore.CancelResult{})
}

// Under races, cancels against claims, acks and nacks to the dead letters
// from separate clients, two cancels of each item, every item ends in
// exactly one state: acked (its result kept) or dead, each cancel having
// found it finished; or canceled, by one cancel, the other finding it
// canceled, its ack or nack dropped. None is left anywhere.
func TestCancelRacesEndInOneState(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxAttempts: 1})
	ctx := testContext(t)
	const n, workers = 300, 4
	payloads := make([][]byte, n)
	for i := range payloads {
		payloads[i] = fmt.Appendf(nil, "p%d", i%2) // p1 fails
	}
	ids := enqueueTasks(t, b.q, payloads...)
	stores := make([]*qstore.Store, workers)
	for i := range stores {
		q, err := queue.New(b.srv.Client(t), "jobs", queue.Config{Prefix: b.q.Config().Prefix, MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = qstore.Of(q)
	}
	var (
		mu       sync.Mutex
		ended    = map[string]qstore.State{} // what the worker's settle left
		canceled = map[string]int{}          // cancels that canceled it
		late     = map[string]int{}          // cancels that found it finished
	)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { // a worker: claim, then ack or nack
			q := stores[w]
			for {
				c, err := q.ClaimDetailed(ctx, 5)
				if err != nil {
					t.Error(err)
					return
				}
				items := c.Items
				if len(items) == 0 && !c.More {
					return
				}
				out := make([]qstore.Settlement, len(items))
				for i, it := range items {
					out[i] = qstore.Settlement{Item: it, Result: []byte("r")}
					if string(it.Payload) == "p1" {
						out[i] = qstore.Settlement{Item: it, Err: errors.New("failed")}
					}
				}
				s, err := q.Settle(ctx, out...)
				if err != nil || len(s.Lost) != 0 || s.Acked+s.Dead+s.Canceled != len(items) {
					t.Errorf("Settle = %+v, %v", s, err)
					return
				}
				for _, it := range items {
					st, err := q.Item(ctx, it.ID, 0)
					if err != nil {
						t.Error(err)
					}
					mu.Lock()
					ended[it.ID] = st.State
					mu.Unlock()
				}
			}
		})
		wg.Go(func() { // a canceler, two per item across them
			q := stores[(w+1)%workers]
			// From the tail, as the workers claim from the head.
			for i := n - 1 - w%2; i >= 0; i -= 2 {
				r, err := q.Cancel(ctx, ids[i])
				mu.Lock()
				switch {
				case err == nil && r.Canceled == 1:
					canceled[ids[i]]++
				case errors.Is(err, qstore.ErrFinished):
					late[ids[i]]++
				case err != nil || r.Canceled != 0:
					t.Errorf("Cancel(%s) = %+v, %v", ids[i], r, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	mustClaim(t, b.q, 10, 0)
	wantCounts(t, b.q, qstore.Depth{Dead: mustDepth(t, b.q).Dead}) // nothing else left
	count := map[string]int{}
	for _, id := range ids {
		_, err := b.q.Wait(ctx, id)
		state := "canceled"
		switch {
		case err == nil:
			state = "acked"
		case errors.Is(err, qstore.ErrDead):
			state = "dead"
		case !errors.Is(err, qstore.ErrCanceled):
			t.Errorf("Wait(%s) = %v, want a result, ErrDead or ErrCanceled", id, err)
			continue
		}
		count[state]++
		if state == "canceled" {
			if canceled[id] != 1 || late[id] != 0 || ended[id] == qstore.StateDone || ended[id] == qstore.StateDead {
				t.Errorf("canceled %s: %d cancels did it, %d found it finished, its settle left it %v", id, canceled[id], late[id], ended[id])
			}
		} else if canceled[id] != 0 || late[id] != 2 {
			t.Errorf("%s %s: %d cancels did it, %d found it finished; want 0 and 2", state, id, canceled[id], late[id])
		}
	}
	t.Logf("%v of %d", count, n)
	if count["acked"]+count["dead"]+count["canceled"] != n || int64(count["dead"]) != mustDepth(t, b.q).Dead {
		t.Fatalf("%v of %d; Depth %+v", count, n, mustDepth(t, b.q))
	}
}

// A run of canceled items longer than a claim looks at says More, so that
// a drain claims again rather than taking the queue for empty.
func TestCancelRunOfTombstonesSaysMore(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	payloads := make([][]byte, 30)
	for i := range payloads {
		payloads[i] = fmt.Appendf(nil, "p%d", i)
	}
	ids := enqueueTasks(t, b.q, payloads...)
	for _, id := range ids[:25] { // the oldest, at the head
		mustCancel(t, b.q, id, qstore.CancelResult{Canceled: 1})
	}
	var got []qstore.Item
	for calls := 1; len(got) < 5; calls++ {
		c, err := b.q.ClaimDetailed(ctx, 5)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c.Items...)
		if len(got) < 5 && !c.More {
			t.Fatalf("claim %d: %d items and no More, with %d live items pending", calls, len(c.Items), 5-len(got))
		}
		if calls > 5 {
			t.Fatalf("%d claims for 25 tombstones", calls)
		}
	}
	for i, it := range got {
		if it.ID != ids[25+i] {
			t.Fatalf("claimed %s, want %s", it.ID, ids[25+i])
		}
	}
}
