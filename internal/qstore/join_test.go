package qstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/queue"
)

func payloads(prefix string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, "%s%d", prefix, i+1)
	}
	return out
}

func wantJoin(t *testing.T, q *qstore.Store, id string, state qstore.JoinState, done, children int) qstore.Join {
	t.Helper()
	j, err := q.Join(context.Background(), id)
	if err != nil || j.ID != id || j.State != state || j.Done != done || j.Children != children {
		t.Fatalf("Join(%s) = %+v, %v; want %v with %d of %d children done", id, j, err, state, done, children)
	}
	return j
}

// The final item runs once, after every child is acked: resent and lost
// acks count nothing; the final item's waiter gets its result; the final
// item reads the children's results.
func TestJoinRunsTheFinalItemOnceAfterItsChildren(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			b := setup(t, queue.Config{})
			ctx := testContext(t)
			id, _, err := b.q.EnqueueJoin(ctx, qstore.JoinSpec{Children: payloads("c", n), Final: []byte("final")})
			if err != nil {
				t.Fatal(err)
			}
			wantCounts(t, b.q, qstore.Depth{Pending: int64(n)})
			wantJoin(t, b.q, id, qstore.JoinRunning, 0, n)
			if v, err := b.q.Value(ctx, id); string(v) != "final" || err != nil {
				t.Fatalf("Value of the final item = %q, %v", v, err)
			}
			waited := make(chan error, 1)
			go func() {
				r, err := b.q.Wait(ctx, id)
				if err == nil && string(r) != "F" {
					err = fmt.Errorf("result %q, want F", r)
				}
				waited <- err
			}()

			items := mustClaim(t, b.q, n, n)
			var last qstore.Settlement
			for i, it := range items {
				if it.ID != fmt.Sprintf("%s.%d", id, i+1) || string(it.Payload) != fmt.Sprintf("c%d", i+1) {
					t.Fatalf("child %d is %s %q", i+1, it.ID, it.Payload)
				}
				o := qstore.Settlement{Item: it, Result: fmt.Appendf(nil, "r%d", i+1)}
				if i == n-1 {
					last = o
					break
				}
				for range 2 { // the second is a resend: it counts nothing
					if s, err := b.q.Settle(ctx, o); err != nil || s.Acked != 1 {
						t.Fatalf("Settle = %+v, %v", s, err)
					}
				}
			}
			wantCounts(t, b.q, qstore.Depth{Leased: 1})
			wantJoin(t, b.q, id, qstore.JoinRunning, n-1, n)
			stale := last
			stale.Item.Token = "9-9"
			if s, err := b.q.Settle(ctx, stale); err != nil || len(s.Lost) != 1 {
				t.Fatalf("Settle of a stale claim = %+v, %v; want lost", s, err)
			}
			wantCounts(t, b.q, qstore.Depth{Leased: 1})
			for range 2 {
				if s, err := b.q.Settle(ctx, last); err != nil || s.Acked != 1 {
					t.Fatalf("last Settle = %+v, %v", s, err)
				}
			}
			wantCounts(t, b.q, qstore.Depth{Pending: 1})
			wantJoin(t, b.q, id, qstore.JoinRunning, n, n)

			final := claimOne(t, b.q)
			if final.ID != id || string(final.Payload) != "final" {
				t.Fatalf("claimed %s %q, want the final item %s", final.ID, final.Payload, id)
			}
			results, err := b.q.JoinResults(ctx, id)
			if err != nil || len(results) != n {
				t.Fatalf("JoinResults = %d, %v", len(results), err)
			}
			for i, r := range results {
				if string(r) != fmt.Sprintf("r%d", i+1) {
					t.Fatalf("result %d = %q", i+1, r)
				}
			}
			if err := b.q.Ack(ctx, final, []byte("F")); err != nil {
				t.Fatal(err)
			}
			if err := <-waited; err != nil {
				t.Fatalf("Wait of the join: %v", err)
			}
			if j := wantJoin(t, b.q, id, qstore.JoinDone, n, n); string(j.Result) != "F" {
				t.Fatalf("Join result %q", j.Result)
			}
			wantCounts(t, b.q, qstore.Depth{})
		})
	}
}

// Workers acking children concurrently, in batches, enqueue the final
// item once.
func TestJoinConcurrentAcksEnqueueTheFinalItemOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	const joins, children = 5, 100
	ids := make(map[string]bool)
	for range joins {
		id, _, err := b.q.EnqueueJoin(ctx, qstore.JoinSpec{Children: payloads("c", children), Final: []byte("final")})
		if err != nil {
			t.Fatal(err)
		}
		ids[id] = true
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		finals = map[string]int{}
	)
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for {
				items, err := b.q.Claim(ctx, 1+w%7)
				if err != nil {
					errs <- err
					return
				}
				if len(items) == 0 {
					return
				}
				out := make([]qstore.Settlement, len(items))
				for i, it := range items {
					if ids[it.ID] {
						// A final item is pending only once its children are all acked.
						if j, err := b.q.Join(ctx, it.ID); err != nil || j.Done != children {
							errs <- fmt.Errorf("final item %s claimed at %+v, %v", it.ID, j, err)
							return
						}
						mu.Lock()
						finals[it.ID]++
						mu.Unlock()
					}
					out[i] = qstore.Settlement{Item: it, Result: []byte("r")}
				}
				if s, err := b.q.Settle(ctx, out...); err != nil || s.Acked != len(out) {
					errs <- fmt.Errorf("settle: %+v, %v", s, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	wantCounts(t, b.q, qstore.Depth{})
	for id := range ids {
		if finals[id] != 1 {
			t.Errorf("final item %s ran %d times, want once", id, finals[id])
		}
		wantJoin(t, b.q, id, qstore.JoinDone, children, children)
	}
}

// A dead child fails the join: the final item does not run, its waiter
// gets the child's cause at once; requeued, the child lets the join run
// on.
func TestJoinDeadChildFailsTheJoin(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxAttempts: 1})
	ctx := testContext(t)
	id, _, err := b.q.EnqueueJoin(ctx, qstore.JoinSpec{Children: payloads("c", 3), Final: []byte("final")})
	if err != nil {
		t.Fatal(err)
	}
	items := mustClaim(t, b.q, 3, 3)
	waited := make(chan error, 1)
	go func() { _, err := b.q.Wait(ctx, id); waited <- err }()
	if _, err := b.q.Settle(ctx, qstore.Settlement{Item: items[0]}, qstore.Settlement{Item: items[2]}); err != nil {
		t.Fatal(err)
	}
	// The waiter is blocked on the final item's wake-up list (or about to
	// be): the nack to the dead letters wakes it, well within WaitBlock.
	start := time.Now()
	if s, err := b.q.Settle(ctx, qstore.Settlement{Item: items[1], Err: errors.New("child broke")}); err != nil || s.Dead != 1 {
		t.Fatalf("Settle = %+v, %v", s, err)
	}
	err = <-waited
	if !errors.Is(err, qstore.ErrDead) || !strings.Contains(err.Error(), "child broke") || !strings.Contains(err.Error(), id+".2") {
		t.Fatalf("Wait of the join = %v, want ErrDead with the child's cause", err)
	}
	t.Logf("the waiter returned %v after the nack", time.Since(start))
	j := wantJoin(t, b.q, id, qstore.JoinFailed, 2, 3)
	if j.Dead != 1 || j.DeadChild != id+".2" || !strings.Contains(j.Cause, "child broke") {
		t.Fatalf("Join = %+v", j)
	}
	wantCounts(t, b.q, qstore.Depth{Dead: 1})

	if n, err := b.q.RequeueDead(ctx, 10); n != 1 || err != nil {
		t.Fatalf("RequeueDead = %d, %v", n, err)
	}
	wantJoin(t, b.q, id, qstore.JoinRunning, 2, 3)
	if err := b.q.Ack(ctx, claimOne(t, b.q), []byte("r2")); err != nil {
		t.Fatal(err)
	}
	final := claimOne(t, b.q)
	if final.ID != id {
		t.Fatalf("claimed %s, want the final item", final.ID)
	}
	if err := b.q.Ack(ctx, final, []byte("F")); err != nil {
		t.Fatal(err)
	}
	if r, err := b.q.Wait(ctx, id); string(r) != "F" || err != nil {
		t.Fatalf("Wait = %q, %v", r, err)
	}
}

// Bad input fails the call with a clear error, and writes nothing.
func TestEnqueueJoinInvalid(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxPayload: 1024})
	ctx := testContext(t)
	one := [][]byte{[]byte("c")}
	for _, c := range []struct {
		name string
		j    qstore.JoinSpec
		want error
		text string
	}{
		{"no children", qstore.JoinSpec{Final: []byte("f")}, qstore.ErrInvalidArgument, "0 children"},
		{"too many", qstore.JoinSpec{Children: payloads("c", 1001), Final: []byte("f")}, qstore.ErrInvalidArgument, "1001 children"},
		{"no final", qstore.JoinSpec{Children: one}, qstore.ErrEmptyPayload, "final"},
		{"empty child", qstore.JoinSpec{Children: [][]byte{[]byte("a"), nil}, Final: []byte("f")}, qstore.ErrEmptyPayload, "child 2"},
		{"large child", qstore.JoinSpec{Children: [][]byte{make([]byte, 1025)}, Final: []byte("f")}, qstore.ErrPayloadTooLarge, "child 1"},
		{"large final", qstore.JoinSpec{Children: one, Final: make([]byte, 1025)}, qstore.ErrPayloadTooLarge, "final"},
		{"id with a dot", qstore.JoinSpec{ID: "a.b", Children: one, Final: []byte("f")}, qstore.ErrInvalidArgument, "join id"},
		{"long id", qstore.JoinSpec{ID: strings.Repeat("a", 65), Children: one, Final: []byte("f")}, qstore.ErrInvalidArgument, "join id"},
	} {
		id, dup, err := b.q.EnqueueJoin(ctx, c.j)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) || id != "" || dup {
			t.Errorf("%s: EnqueueJoin = %q, %v, %v; want %v naming %q", c.name, id, dup, err, c.want, c.text)
		}
	}
	wantCounts(t, b.q, qstore.Depth{})
	for _, id := range []string{"", "a.b", strings.Repeat("a", 65)} {
		if _, err := b.q.Join(ctx, id); !errors.Is(err, qstore.ErrInvalidArgument) {
			t.Errorf("Join(%q) = %v, want ErrInvalidArgument", id, err)
		}
	}
	if _, err := b.q.Join(ctx, "nosuchjoin"); !errors.Is(err, qstore.ErrNotFound) {
		t.Errorf("Join of an unknown join = %v, want ErrNotFound", err)
	}
	if _, err := b.q.JoinResults(ctx, "nosuchjoin"); !errors.Is(err, qstore.ErrNotFound) {
		t.Errorf("JoinResults of an unknown join = %v, want ErrNotFound", err)
	}
}

// A join enqueued again with its id adds nothing twice.
func TestEnqueueJoinWithAnIDIsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	for range 2 {
		id, dup, err := b.q.EnqueueJoin(ctx, qstore.JoinSpec{ID: "parent-1", Children: payloads("c", 2), Final: []byte("f")})
		if err != nil || id != "parent-1" || dup {
			t.Fatalf("EnqueueJoin = %q, %v, %v; want parent-1, no duplicate", id, dup, err)
		}
	}
	wantCounts(t, b.q, qstore.Depth{Pending: 2})
}

// Enqueueing a join is one round trip; settling a batch of children of
// several joins, the last of which end their joins, is one too.
func TestJoinRoundTrips(t *testing.T) {
	t.Parallel()
	b, rt := setupCounted(t, queue.Config{})
	q := b.q
	ctx := testContext(t)
	if _, _, err := q.EnqueueJoin(ctx, qstore.JoinSpec{Children: payloads("w", 1), Final: []byte("f")}); err != nil { // loads the script
		t.Fatal(err)
	}
	if err := q.Ack(ctx, claimOne(t, q), nil); err != nil { // loads settle's
		t.Fatal(err)
	}
	_ = claimOne(t, q) // the warm-up's final item, left leased
	const joins, children = 10, 100
	before := rt.Load()
	for range joins {
		if _, _, err := q.EnqueueJoin(ctx, qstore.JoinSpec{Children: payloads("c", children), Final: []byte("f")}); err != nil {
			t.Fatal(err)
		}
	}
	if got := rt.Load() - before; got != joins {
		t.Errorf("%d EnqueueJoin of %d children: %d round trips, want %d", joins, children, got, joins)
	}
	items := mustClaim(t, q, qstore.BatchMax, joins*children)
	out := make([]qstore.Settlement, len(items))
	for i, it := range items {
		out[i] = qstore.Settlement{Item: it, Result: []byte("r")}
	}
	before = rt.Load()
	if s, err := q.Settle(ctx, out...); err != nil || s.Acked != len(out) {
		t.Fatalf("Settle = %+v, %v", s, err)
	}
	if got := rt.Load() - before; got != 1 {
		t.Errorf("Settle of %d children: %d round trips, want 1", len(out), got)
	}
	wantCounts(t, q, qstore.Depth{Pending: joins, Leased: 1})
}
