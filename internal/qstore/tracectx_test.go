package qstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/queue"
)

const (
	traceA = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	traceB = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-00"
)

// wantTraceKey checks whether item id's trace context is kept (the field
// "tp" of its key), and that a kept one expires within keep (traces.lua:
// 7 days past its due time).
func wantTraceKey(t *testing.T, rdb *redis.Client, q *qstore.Store, id, want string, keep time.Duration) {
	t.Helper()
	ctx := context.Background()
	key := tagOf(q) + ":trace:" + id
	got, err := rdb.HGet(ctx, key, "tp").Result()
	if errors.Is(err, redis.Nil) {
		got, err = "", nil
	}
	if got != want || err != nil {
		t.Fatalf("trace context of %s = %q, %v; want %q", id, got, err, want)
	}
	if want == "" {
		return
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl <= keep-time.Minute || ttl > keep {
		t.Fatalf("trace context of %s expires in %v, want about %v", id, ttl, keep)
	}
}

const traceKeep = 7 * 24 * time.Hour

// An item's trace context goes with every claim of it, retries too, and
// never into its payload; its ack deletes it, and a follow-up enqueued by
// that ack gets its own.
func TestTraceContextFollowsTheItem(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	ctx := testContext(t)
	id := mustEnqueueWith(t, b.q, "p", qstore.EnqueueOptions{Trace: traceA}, false)
	plain := mustEnqueueWith(t, b.q, "q", qstore.EnqueueOptions{}, false)
	wantTraceKey(t, b.rdb, b.q, id, traceA, traceKeep)
	items := mustClaim(t, b.q, 10, 2)
	byID := map[string]qstore.Item{items[0].ID: items[0], items[1].ID: items[1]}
	if it := byID[id]; it.Trace != traceA || string(it.Payload) != "p" {
		t.Fatalf("claimed %+v, want trace %q and payload p", it, traceA)
	}
	if it := byID[plain]; it.Trace != "" {
		t.Fatalf("claimed %+v, enqueued without a trace context", it)
	}
	if err := b.q.Nack(ctx, byID[id], errors.New("again")); err != nil {
		t.Fatal(err)
	}
	promoteDue(t, b, id)
	again := mustClaim(t, b.q, 10, 1)[0]
	if again.Trace != traceA || again.Attempt != 2 {
		t.Fatalf("retry claimed as %+v, want trace %q at attempt 2", again, traceA)
	}
	s, err := b.q.Settle(ctx,
		qstore.Settlement{Item: again, FollowUp: &qstore.FollowUp{Payload: []byte("next"), Trace: traceB}},
		qstore.Settlement{Item: byID[plain]})
	if err != nil || s.Acked != 2 {
		t.Fatalf("Settle = %+v, %v; want 2 acked", s, err)
	}
	wantTraceKey(t, b.rdb, b.q, id, "", 0)
	next := mustClaim(t, b.q, 10, 1)[0]
	if next.Trace != traceB || string(next.Payload) != "next" {
		t.Fatalf("follow-up claimed as %+v, want trace %q", next, traceB)
	}
	if err := b.q.Ack(ctx, next, nil); err != nil {
		t.Fatal(err)
	}
	wantTraceKey(t, b.rdb, b.q, next.ID, "", 0)
	if n := b.rdb.Exists(ctx, tagOf(b.q)+":traced").Val(); n != 1 {
		t.Fatalf("the traced marker is gone while trace contexts may live")
	}
}

// A batch's items share its trace context, kept 7 days past their due
// time; purging them as dead letters, or canceling one, deletes it.
func TestTraceContextGoesWithPurgeAndCancel(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxAttempts: 1})
	ctx := testContext(t)
	ids, err := b.q.EnqueueBatchWith(ctx, [][]byte{[]byte("a"), []byte("b")}, qstore.EnqueueOptions{Trace: traceA})
	if err != nil {
		t.Fatal(err)
	}
	delayed, err := b.q.EnqueueBatchWith(ctx, [][]byte{[]byte("c")}, qstore.EnqueueOptions{Trace: traceB, Delay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		wantTraceKey(t, b.rdb, b.q, id, traceA, traceKeep)
	}
	wantTraceKey(t, b.rdb, b.q, delayed[0], traceB, traceKeep+time.Hour)
	mustCancel(t, b.q, delayed[0], qstore.CancelResult{Canceled: 1})
	wantTraceKey(t, b.rdb, b.q, delayed[0], "", 0)
	for _, it := range mustClaim(t, b.q, 10, 2) {
		if it.Trace != traceA {
			t.Fatalf("claimed %+v, want trace %q", it, traceA)
		}
		if err := b.q.Nack(ctx, it, errors.New("dead")); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		wantTraceKey(t, b.rdb, b.q, id, traceA, traceKeep) // a dead letter keeps it, for a retry
	}
	if n, err := b.q.PurgeDead(ctx, 10); n != 2 || err != nil {
		t.Fatalf("PurgeDead = %d, %v; want 2", n, err)
	}
	for _, id := range ids {
		wantTraceKey(t, b.rdb, b.q, id, "", 0)
	}
}

// A queue never traced keeps no trace key, and a trace context out of
// bounds fails the enqueue before anything is written.
func TestTraceContextOnlyWhereGiven(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	mustEnqueueWith(t, b.q, "p", qstore.EnqueueOptions{}, false)
	if err := b.q.Ack(ctx, mustClaim(t, b.q, 1, 1)[0], nil); err != nil {
		t.Fatal(err)
	}
	if keys := b.rdb.Keys(ctx, tagOf(b.q)+":trace*").Val(); len(keys) != 0 {
		t.Fatalf("an untraced queue keeps %v", keys)
	}
	long := strings.Repeat("0", 257)
	if _, _, err := b.q.EnqueueWith(ctx, []byte("p"), qstore.EnqueueOptions{Trace: long}); !errors.Is(err, qstore.ErrInvalidArgument) {
		t.Fatalf("EnqueueWith with a trace of 257 bytes: %v, want ErrInvalidArgument", err)
	}
	if _, err := b.q.EnqueueBatchWith(ctx, [][]byte{[]byte("p")}, qstore.EnqueueOptions{Trace: long}); !errors.Is(err, qstore.ErrInvalidArgument) {
		t.Fatalf("EnqueueBatchWith with a trace of 257 bytes: %v, want ErrInvalidArgument", err)
	}
	wantCounts(t, b.q, qstore.Depth{})
}

// Claims of a queue with priorities (claimtyped.lua) return trace
// contexts too.
func TestTraceContextWithPriorities(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	if err := b.q.SetPriorities(ctx, map[string]int{"high": 3}); err != nil {
		t.Fatal(err)
	}
	high := mustEnqueueWith(t, b.q, "h", qstore.EnqueueOptions{Priority: "high", Trace: traceA}, false)
	low := mustEnqueueWith(t, b.q, "l", qstore.EnqueueOptions{Trace: traceB}, false)
	for _, it := range mustClaim(t, b.q, 10, 2) {
		want := map[string]string{high: traceA, low: traceB}[it.ID]
		if it.Trace != want {
			t.Fatalf("claimed %+v, want trace %q", it, want)
		}
	}
}

// A join's children and its final item carry its trace context.
func TestTraceContextOfAJoin(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	id := mustEnqueueJoin(t, b.q, qstore.JoinSpec{Final: []byte("f"), Children: payloads("c", 2),
		Options: qstore.EnqueueOptions{Trace: traceA, Unique: "u", UniqueFor: time.Minute}}, false)
	for _, it := range mustClaim(t, b.q, 10, 2) {
		if it.Trace != traceA {
			t.Fatalf("claimed %+v, want trace %q", it, traceA)
		}
		if err := b.q.Ack(ctx, it, nil); err != nil {
			t.Fatal(err)
		}
	}
	final := mustClaim(t, b.q, 10, 1)[0]
	if final.ID != id || final.Trace != traceA {
		t.Fatalf("claimed %+v, want the final item %s with trace %q", final, id, traceA)
	}
	if err := b.q.Ack(ctx, final, nil); err != nil {
		t.Fatal(err)
	}
	if keys := b.rdb.Keys(ctx, tagOf(b.q)+":trace:*").Val(); len(keys) != 0 {
		t.Fatalf("after every ack, %v are kept", keys)
	}
}
