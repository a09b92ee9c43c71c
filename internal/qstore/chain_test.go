package qstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/queue"
)

func claimOne(t *testing.T, q *qstore.Store) qstore.Item {
	t.Helper()
	items, err := q.Claim(context.Background(), 1)
	if err != nil || len(items) != 1 {
		t.Fatalf("Claim = %d items, %v; want 1", len(items), err)
	}
	return items[0]
}

func wantChain(t *testing.T, q *qstore.Store, id string, state qstore.ChainState, step, steps int) qstore.Chain {
	t.Helper()
	c, err := q.Chain(context.Background(), id)
	if err != nil || c.ID != id || c.State != state || c.Step != step || c.Steps != steps || c.Current == "" {
		t.Fatalf("Chain(%s) = %+v, %v; want %v at step %d of %d", id, c, err, state, step, steps)
	}
	return c
}

// An ack with a follow-up enqueues it in the same script and moves the
// chain on; a resent ack adds nothing twice; a lost claim adds nothing;
// the last step's ack ends the chain with its result.
func TestFollowUpMovesTheChainOn(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := context.Background()
	id, _, err := b.q.EnqueueWith(ctx, []byte("s1"), qstore.EnqueueOptions{Chain: qstore.ChainStep{Step: 1, Steps: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if c := wantChain(t, b.q, id, qstore.ChainRunning, 1, 3); c.Current != id {
		t.Fatalf("step 1 is %s, want the first item %s", c.Current, id)
	}

	it := claimOne(t, b.q)
	step2 := qstore.Settlement{Item: it, Result: []byte("r1"),
		FollowUp: &qstore.FollowUp{Payload: []byte("s2"), Chain: qstore.ChainStep{ID: id, Step: 2, Steps: 3}}}
	// A stale claim (another token) is lost and enqueues nothing.
	stale := step2
	stale.Item.Token = "9-9"
	if s, err := b.q.Settle(ctx, stale); err != nil || len(s.Lost) != 1 {
		t.Fatalf("Settle of a stale claim = %+v, %v; want lost", s, err)
	}
	if d, _ := b.q.Depth(ctx); d.Pending != 0 {
		t.Fatalf("a lost ack enqueued its follow-up: %+v", d)
	}
	for i := range 2 { // the second is a resend: nothing twice
		if s, err := b.q.Settle(ctx, step2); err != nil || s.Acked != 1 {
			t.Fatalf("Settle %d = %+v, %v; want acked", i, s, err)
		}
	}
	if d, _ := b.q.Depth(ctx); d.Pending != 1 || d.Leased != 0 {
		t.Fatalf("after the ack: %+v, want one pending follow-up", d)
	}
	c := wantChain(t, b.q, id, qstore.ChainRunning, 2, 3)
	if v, err := b.q.Value(ctx, c.Current); string(v) != "s2" || err != nil {
		t.Fatalf("step 2's value = %q, %v; want s2", v, err)
	}
	if r, err := b.q.Result(ctx, id); string(r) != "r1" || err != nil {
		t.Fatalf("step 1's result = %q, %v", r, err)
	}

	it = claimOne(t, b.q)
	if it.ID != c.Current {
		t.Fatalf("claimed %s, want step 2 %s", it.ID, c.Current)
	}
	if _, err := b.q.Settle(ctx, qstore.Settlement{Item: it, Result: []byte("r2"),
		FollowUp: &qstore.FollowUp{Payload: []byte("s3"), Chain: qstore.ChainStep{ID: id, Step: 3, Steps: 3}}}); err != nil {
		t.Fatal(err)
	}
	it = claimOne(t, b.q)
	if err := b.q.Ack(ctx, it, []byte("r3")); err != nil {
		t.Fatal(err)
	}
	c = wantChain(t, b.q, id, qstore.ChainDone, 3, 3)
	if string(c.Result) != "r3" || c.Current != it.ID {
		t.Fatalf("done chain = %+v, want result r3 of %s", c, it.ID)
	}
	if d, _ := b.q.Depth(ctx); d != (qstore.Depth{}) {
		t.Fatalf("after the chain: %+v, want an empty queue", d)
	}
}

// A step that dead-letters fails the chain with its cause; requeued, it
// runs on. A nack ignores its follow-up.
func TestChainFailsWithTheDeadStepsCause(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxAttempts: 1})
	ctx := context.Background()
	id, _, err := b.q.EnqueueWith(ctx, []byte("s1"), qstore.EnqueueOptions{Chain: qstore.ChainStep{Step: 1, Steps: 2}})
	if err != nil {
		t.Fatal(err)
	}
	it := claimOne(t, b.q)
	s, err := b.q.Settle(ctx, qstore.Settlement{Item: it, Err: errors.New("boom"),
		FollowUp: &qstore.FollowUp{Payload: []byte("s2"), Chain: qstore.ChainStep{ID: id, Step: 2, Steps: 2}}})
	if err != nil || s.Dead != 1 {
		t.Fatalf("Settle = %+v, %v; want dead", s, err)
	}
	c := wantChain(t, b.q, id, qstore.ChainFailed, 1, 2)
	if c.Cause != "boom" || c.Current != id {
		t.Fatalf("failed chain = %+v, want cause boom at %s", c, id)
	}
	if d, _ := b.q.Depth(ctx); d.Pending != 0 || d.Dead != 1 {
		t.Fatalf("a nack enqueued its follow-up: %+v", d)
	}
	if n, err := b.q.RequeueDead(ctx, 10); n != 1 || err != nil {
		t.Fatalf("RequeueDead = %d, %v", n, err)
	}
	wantChain(t, b.q, id, qstore.ChainRunning, 1, 2)
}

// A follow-up above MaxPayload turns the ack into a nack: nothing lost.
func TestFollowUpTooLargeIsANack(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxPayload: 8, MaxAttempts: 1})
	ctx := context.Background()
	id, _, err := b.q.EnqueueWith(ctx, []byte("s1"), qstore.EnqueueOptions{Chain: qstore.ChainStep{Step: 1, Steps: 2}})
	if err != nil {
		t.Fatal(err)
	}
	it := claimOne(t, b.q)
	s, err := b.q.Settle(ctx, qstore.Settlement{Item: it, Result: []byte("r"),
		FollowUp: &qstore.FollowUp{Payload: []byte("0123456789"), Chain: qstore.ChainStep{ID: id, Step: 2, Steps: 2}}})
	if err != nil || s.Dead != 1 {
		t.Fatalf("Settle = %+v, %v; want dead", s, err)
	}
	if c := wantChain(t, b.q, id, qstore.ChainFailed, 1, 2); !strings.Contains(c.Cause, "MaxPayload") {
		t.Fatalf("cause %q, want one naming MaxPayload", c.Cause)
	}
}

func TestChainBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := context.Background()
	for _, cs := range []qstore.ChainStep{
		{Steps: 0, Step: 0, ID: "x"}, {Step: 1}, {Step: 0, Steps: 2}, {Step: 3, Steps: 2},
		{Step: 1, Steps: 1001}, {ID: strings.Repeat("x", 513), Step: 1, Steps: 1},
	} {
		if _, _, err := b.q.EnqueueWith(ctx, []byte("p"), qstore.EnqueueOptions{Chain: cs}); !errors.Is(err, qstore.ErrInvalidArgument) {
			t.Errorf("EnqueueWith chain %+v: %v, want ErrInvalidArgument", cs, err)
		}
	}
	if _, err := b.q.Enqueue(ctx, []byte("p")); err != nil {
		t.Fatal(err)
	}
	it := claimOne(t, b.q)
	for _, th := range []*qstore.FollowUp{
		{Payload: nil}, {Payload: []byte("p"), Chain: qstore.ChainStep{Step: 1, Steps: 1}}, // no chain id
		{Payload: []byte("p"), Chain: qstore.ChainStep{ID: "c", Step: 2, Steps: 1}},
	} {
		if _, err := b.q.Settle(ctx, qstore.Settlement{Item: it, FollowUp: th}); !errors.Is(err, qstore.ErrInvalidArgument) && !errors.Is(err, qstore.ErrEmptyPayload) {
			t.Errorf("Settle with FollowUp %+v: %v, want an argument error", th, err)
		}
	}
	if d, _ := b.q.Depth(ctx); d.Leased != 1 || d.Pending != 0 {
		t.Fatalf("refused settles changed the queue: %+v", d)
	}
	for _, id := range []string{"", strings.Repeat("x", 513)} {
		if _, err := b.q.Chain(ctx, id); !errors.Is(err, qstore.ErrInvalidArgument) {
			t.Errorf("Chain(%d bytes): %v, want ErrInvalidArgument", len(id), err)
		}
	}
	if _, err := b.q.Chain(ctx, "nope"); !errors.Is(err, qstore.ErrNotFound) {
		t.Errorf("Chain(nope): %v, want ErrNotFound", err)
	}
}

// A batch of acks with follow-ups is settled in one round trip.
func TestSettleWithFollowUpIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	b, rt := setupCounted(t, queue.Config{})
	q := b.q
	ctx := context.Background()
	const n = 50
	ids := make([]string, n)
	for i := range ids {
		id, _, err := q.EnqueueWith(ctx, []byte("s1"), qstore.EnqueueOptions{Chain: qstore.ChainStep{Step: 1, Steps: 2}})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	items, err := q.Claim(ctx, n)
	if err != nil || len(items) != n {
		t.Fatalf("Claim = %d, %v", len(items), err)
	}
	out := make([]qstore.Settlement, n)
	for i, it := range items {
		// Items come in claim order; their chains are named by their ids.
		out[i] = qstore.Settlement{Item: it, Result: []byte("r"),
			FollowUp: &qstore.FollowUp{Payload: []byte("s2"), Chain: qstore.ChainStep{ID: it.ID, Step: 2, Steps: 2}}}
	}
	if _, err := q.Settle(ctx, out[:1]...); err != nil { // loads the script
		t.Fatal(err)
	}
	before := rt.Load()
	s, err := q.Settle(ctx, out[1:]...)
	if err != nil || s.Acked != n-1 {
		t.Fatalf("Settle = %+v, %v", s, err)
	}
	if got := rt.Load() - before; got != 1 {
		t.Errorf("Settle of %d acks with follow-ups: %d round trips, want 1", n-1, got)
	}
	for _, id := range ids {
		wantChain(t, q, id, qstore.ChainRunning, 2, 2)
	}
	if d, _ := q.Depth(ctx); d.Pending != n {
		t.Fatalf("Depth = %+v, want %d pending", d, n)
	}
}

// A follow-up inherits its item's own attempt limit, and the unique key
// the item holds: a second enqueue under the key returns the chain's id
// while any step is live, and takes the key once the last step is acked.
func TestFollowUpHandsOnLimitAndUniqueKey(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxAttempts: 5})
	ctx := context.Background()
	opts := qstore.EnqueueOptions{MaxAttempts: 2, Unique: "nightly", UniqueFor: time.Hour, Chain: qstore.ChainStep{Step: 1, Steps: 3}}
	id, dup, err := b.q.EnqueueWith(ctx, []byte("s1"), opts)
	if err != nil || dup {
		t.Fatalf("EnqueueWith = %s, %v, %v", id, dup, err)
	}
	againUnder := func(key, want string, wantDup bool) {
		t.Helper()
		got, dup, err := b.q.EnqueueWith(ctx, []byte("again"), qstore.EnqueueOptions{Unique: key, UniqueFor: time.Hour})
		if err != nil || dup != wantDup || (want != "" && got != want) {
			t.Fatalf("a second enqueue under %s = %s, duplicate %v, %v; want %s, %v", key, got, dup, err, want, wantDup)
		}
	}
	again := func(want string, wantDup bool) { t.Helper(); againUnder("nightly", want, wantDup) }
	again(id, true)
	for step := 1; step <= 3; step++ {
		it := claimOne(t, b.q)
		if it.MaxAttempts != 2 {
			t.Fatalf("step %d: MaxAttempts %d, want the first step's 2", step, it.MaxAttempts)
		}
		var then *qstore.FollowUp
		if step < 3 {
			then = &qstore.FollowUp{Payload: []byte("next"), Unique: "nightly", Chain: qstore.ChainStep{ID: id, Step: step + 1, Steps: 3}}
		}
		if s, err := b.q.Settle(ctx, qstore.Settlement{Item: it, Result: []byte("r"), FollowUp: then}); err != nil || s.Acked != 1 {
			t.Fatalf("step %d: Settle = %+v, %v", step, s, err)
		}
		if step < 3 {
			again(id, true)
		}
	}
	wantChain(t, b.q, id, qstore.ChainDone, 3, 3)
	again("", false) // the chain is over: the key is free
	if n := itemFields(t, b.rdb, tagOf(b.q)+":limits"); n != 0 {
		t.Fatalf("limits hold %d items, want 0 (no item of the chain left; the new one has none)", n)
	}

	// A FollowUp naming a key its item does not hold leaves the key alone.
	other, _, err := b.q.EnqueueWith(ctx, []byte("x"), qstore.EnqueueOptions{Unique: "other", UniqueFor: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range mustClaim(t, b.q, 2, 2) {
		var then *qstore.FollowUp
		if it.ID != other {
			then = &qstore.FollowUp{Payload: []byte("y"), Unique: "other"}
		}
		if _, err := b.q.Settle(ctx, qstore.Settlement{Item: it, FollowUp: then}); err != nil {
			t.Fatal(err)
		}
	}
	// other is acked: its key is free, not handed to the other item's follow-up.
	againUnder("other", "", false)

	long := strings.Repeat("k", 513)
	it := claimOne(t, b.q)
	if _, err := b.q.Settle(ctx, qstore.Settlement{Item: it, FollowUp: &qstore.FollowUp{Payload: []byte("z"), Unique: long}}); !errors.Is(err, qstore.ErrInvalidArgument) {
		t.Fatalf("FollowUp with a 513-byte unique key: %v, want ErrInvalidArgument", err)
	}
}
