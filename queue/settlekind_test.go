package queue_test

import (
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worksteal/worksteal/queue"
)

// A jitter out of [0, 1) once made a backoff negative, which Settle's
// script read as an ack: the nack's cause was stored as the item's result.
// Each nack here must delay the item, cause kept, by a backoff in
// [d/2, d], and store no result.
func TestNackWithOutOfRangeJitterIsRetried(t *testing.T) {
	t.Parallel()
	const d = time.Minute // BackoffBase = BackoffMax: every retry's d
	jitters := []float64{math.NaN(), -1, 1.5, math.Inf(1)}
	var calls atomic.Int64
	b := setup(t, withJitter(queue.Config{BackoffBase: d, BackoffMax: d, MaxAttempts: 3}, func() float64 {
		return jitters[int(calls.Add(1)-1)%len(jitters)]
	}))
	ctx := testContext(t)
	tag := tagOf(b.q)
	ids := mustEnqueue(t, b.q, "nan", "minus one", "one and a half", "inf")
	items := mustClaim(t, b.q, len(ids), len(ids))
	for i, it := range items {
		jitter := jitters[i]
		cause := "failed at jitter " + it.ID
		before := redisNow(t, b.rdb)
		s, err := b.q.Settle(ctx, queue.Settlement{Item: it, Err: errors.New(cause)})
		if err != nil || s.Retried != 1 || s.Acked != 0 || s.Dead != 0 || len(s.Lost) != 0 {
			t.Fatalf("jitter %v: Settle of a nack = %+v, %v; want 1 retried", jitter, s, err)
		}
		after := redisNow(t, b.rdb)
		if _, err := b.q.Result(ctx, it.ID); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("jitter %v: Result of a nacked item: error %v, want ErrNotFound", jitter, err)
		}
		if got, err := b.rdb.HGet(ctx, tag+":causes", it.ID).Result(); got != cause || err != nil {
			t.Fatalf("jitter %v: cause %q, %v; want %q", jitter, got, err, cause)
		}
		if v, err := b.q.Value(ctx, it.ID); string(v) != string(it.Payload) || err != nil {
			t.Fatalf("jitter %v: Value of a delayed item = %q, %v; want %q", jitter, v, err, it.Payload)
		}
		due, err := b.rdb.ZScore(ctx, tag+":delayed", it.ID).Result()
		if err != nil {
			t.Fatalf("jitter %v: the nacked item is not delayed: %v", jitter, err)
		}
		lo, hi := before.Add(d/2-time.Millisecond), after.Add(d+time.Millisecond)
		if dueAt := time.UnixMilli(int64(due)); dueAt.Before(lo) || dueAt.After(hi) {
			t.Fatalf("jitter %v: retry due %v after the nack, want within [%v, %v]", jitter, dueAt.Sub(before), d/2, d)
		}
	}
	if n := calls.Load(); n != int64(len(jitters)) {
		t.Fatalf("the jitter was drawn %d times, want %d", n, len(jitters))
	}
	wantCounts(t, b.q, queue.Depth{Delayed: int64(len(ids))})
	if n := itemFields(t, b.rdb, tag+":results"); n != 0 {
		t.Fatalf("%d results stored by nacks, want none", n)
	}
}
