package qstore_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/queue"
)

func batchPayloads(n int) [][]byte {
	p := make([][]byte, n)
	for i := range p {
		p[i] = fmt.Appendf(nil, "item %d", i)
	}
	return p
}

// A batch with options gives every item the delay and the attempt limit,
// in one script call per BatchMax items: delayed items are all due at
// once, at the delay after Redis's clock; claimed, each carries its own
// limit and its payload.
func TestEnqueueBatchWithOptions(t *testing.T) {
	t.Parallel()
	b, rt := setupCounted(t, queue.Config{MaxAttempts: 9})
	ctx := testContext(t)

	// A first call loads the script and dials.
	if _, err := b.q.EnqueueBatchWith(ctx, batchPayloads(1), qstore.EnqueueOptions{Delay: time.Hour, MaxAttempts: 2}); err != nil {
		t.Fatal(err)
	}
	t0, err := b.rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	before := rt.Load()
	delayed, err := b.q.EnqueueBatchWith(ctx, batchPayloads(qstore.BatchMax+1), qstore.EnqueueOptions{Delay: time.Hour, MaxAttempts: 2})
	if err != nil || len(delayed) != qstore.BatchMax+1 {
		t.Fatalf("EnqueueBatchWith(delay) = %d ids, %v; want %d", len(delayed), err, qstore.BatchMax+1)
	}
	if n := rt.Load() - before; n != 2 {
		t.Fatalf("%d items took %d round trips, want 2 (one per %d)", qstore.BatchMax+1, n, qstore.BatchMax)
	}
	t1, err := b.rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	tag := "{" + b.q.Config().Prefix + ":q:jobs}"
	scores, err := b.rdb.ZRangeWithScores(ctx, tag+":delayed", 0, -1).Result()
	if err != nil || len(scores) != len(delayed)+1 {
		t.Fatalf("delayed holds %d, %v; want %d", len(scores), err, len(delayed)+1)
	}
	for _, z := range scores[1:] { // scores[0], the first call's, may be the earliest
		due := time.UnixMilli(int64(z.Score))
		if due.Before(t0.Add(time.Hour)) || due.After(t1.Add(time.Hour+time.Millisecond)) {
			t.Fatalf("%v is due at %v, want an hour after the call, between %v and %v", z.Member, due, t0, t1)
		}
	}
	limits, err := b.rdb.HMGet(ctx, tag+":limits", delayed...).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range limits {
		if l != "2" {
			t.Fatalf("limit of %s = %v, want 2", delayed[i], l)
		}
	}

	now1, err := b.q.EnqueueBatchWith(ctx, batchPayloads(3), qstore.EnqueueOptions{MaxAttempts: 1})
	if err != nil || len(now1) != 3 {
		t.Fatalf("EnqueueBatchWith(attempts) = %v, %v", now1, err)
	}
	if d, err := b.q.Depth(ctx); err != nil || d.Pending != 3 || d.Delayed != int64(len(delayed)+1) {
		t.Fatalf("Depth = %+v, %v; want 3 pending, %d delayed", d, err, len(delayed)+1)
	}
	items, err := b.q.Claim(ctx, 10)
	if err != nil || len(items) != 3 {
		t.Fatalf("Claim = %d items, %v; want 3", len(items), err)
	}
	for i, it := range items {
		if it.ID != now1[i] || string(it.Payload) != fmt.Sprintf("item %d", i) || it.MaxAttempts != 1 {
			t.Fatalf("item %d = %s %q max %d; want %s %q max 1", i, it.ID, it.Payload, it.MaxAttempts, now1[i], fmt.Sprintf("item %d", i))
		}
	}
	// Without options, the queue's limit.
	plain, err := b.q.EnqueueBatchWith(ctx, batchPayloads(1), qstore.EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if items, err := b.q.Claim(ctx, 1); err != nil || len(items) != 1 || items[0].ID != plain[0] || items[0].MaxAttempts != 9 {
		t.Fatalf("Claim = %+v, %v; want %s with the queue's 9 attempts", items, err, plain[0])
	}
}

// Options a batch cannot take, or out of their bounds, fail the call
// before anything is written.
func TestEnqueueBatchWithRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxPayload: 16})
	ctx := testContext(t)
	for _, tc := range []struct {
		what     string
		payloads [][]byte
		opts     qstore.EnqueueOptions
		want     error
	}{
		{"a unique key", batchPayloads(2), qstore.EnqueueOptions{Unique: "u", UniqueFor: time.Minute}, qstore.ErrInvalidArgument},
		{"a chain", batchPayloads(2), qstore.EnqueueOptions{Chain: qstore.ChainStep{Step: 1, Steps: 2}}, qstore.ErrInvalidArgument},
		{"a negative delay", batchPayloads(2), qstore.EnqueueOptions{Delay: -time.Second}, qstore.ErrInvalidArgument},
		{"too many attempts", batchPayloads(2), qstore.EnqueueOptions{MaxAttempts: 1001}, qstore.ErrInvalidArgument},
		{"an empty payload", [][]byte{[]byte("a"), nil}, qstore.EnqueueOptions{Delay: time.Second}, qstore.ErrEmptyPayload},
		{"a large payload", [][]byte{make([]byte, 17)}, qstore.EnqueueOptions{MaxAttempts: 2}, qstore.ErrPayloadTooLarge},
	} {
		if ids, err := b.q.EnqueueBatchWith(ctx, tc.payloads, tc.opts); !errors.Is(err, tc.want) || ids != nil {
			t.Errorf("%s: %v, %v; want no ids and %v", tc.what, ids, err, tc.want)
		}
	}
	if d, err := b.q.Depth(ctx); err != nil || d != (qstore.Depth{}) {
		t.Fatalf("Depth = %+v, %v; want nothing written", d, err)
	}
}
