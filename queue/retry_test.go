package queue_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
)

// promoteWhenDue waits for the item's retry time and promotes it.
func promoteWhenDue(t *testing.T, b *bundle, id string) {
	t.Helper()
	ctx := testContext(t)
	due, err := b.rdb.ZScore(ctx, tagOf(b.q)+":delayed", id).Result()
	if err != nil {
		t.Fatalf("ZSCORE delayed %s: %v", id, err)
	}
	if n, err := qstore.Of(b.q).Promote(ctx, 10); n != 0 || err != nil {
		t.Fatalf("Promote before due = %d, %v; want 0", n, err)
	}
	untilRedisTime(t, b.rdb, time.UnixMilli(int64(due)))
	if n, err := qstore.Of(b.q).Promote(ctx, 10); n != 1 || err != nil {
		t.Fatalf("Promote when due = %d, %v; want 1", n, err)
	}
}

func TestNackRetriesThenDeadLettersThenRequeues(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxAttempts: 3, BackoffBase: 40 * time.Millisecond, BackoffMax: time.Second})
	ctx := testContext(t)
	id := mustEnqueue(t, b.q, "fragile")[0]
	for attempt := 1; attempt <= 3; attempt++ {
		it := mustClaim(t, b.q, 1, 1)[0]
		if it.ID != id || it.Attempt != attempt {
			t.Fatalf("claim = %s attempt %d, want %s attempt %d", it.ID, it.Attempt, id, attempt)
		}
		if err := b.q.Nack(ctx, it, errors.New("boom "+string(rune('0'+attempt)))); err != nil {
			t.Fatal(err)
		}
		if attempt < 3 {
			wantCounts(t, b.q, queue.Depth{Delayed: 1})
			promoteWhenDue(t, b, id)
		}
	}
	wantCounts(t, b.q, queue.Depth{Dead: 1})
	dead, err := testrig.DeadLetters(ctx, b.q, 10)
	if err != nil || len(dead) != 1 {
		t.Fatalf("Dead = %+v, %v", dead, err)
	}
	if d := dead[0]; d.ID != id || d.Cause != "boom 3" || d.Attempts != 3 || time.Since(d.At) > time.Minute {
		t.Fatalf("dead letter = %+v, want %s, cause boom 3, 3 attempts", d, id)
	}
	if v, err := b.q.Value(ctx, id); string(v) != "fragile" || err != nil {
		t.Fatalf("a dead letter's Value = %q, %v", v, err)
	}
	_, err = b.q.Wait(ctx, id)
	wantErr(t, err, queue.ErrDead, "Wait on a dead letter")
	if !strings.Contains(err.Error(), "boom 3") {
		t.Fatalf("Wait error %q lacks the cause", err)
	}

	if n, err := qstore.Of(b.q).RequeueDead(ctx, 10); n != 1 || err != nil {
		t.Fatalf("RequeueDead = %d, %v; want 1", n, err)
	}
	wantCounts(t, b.q, queue.Depth{Pending: 1})
	it := mustClaim(t, b.q, 1, 1)[0]
	if it.ID != id || it.Attempt != 1 || string(it.Payload) != "fragile" {
		t.Fatalf("requeued claim = %+v, want %s attempt 1", it, id)
	}
	if err := b.q.Ack(ctx, it, []byte("at last")); err != nil {
		t.Fatal(err)
	}
	if r, err := b.q.Wait(ctx, id); string(r) != "at last" || err != nil {
		t.Fatalf("Wait = %q, %v", r, err)
	}
}

func TestTidyDeadLettersAtTheLastAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxAttempts: 2, Lease: 10 * time.Millisecond})
	ctx := testContext(t)
	id := mustEnqueue(t, b.q, "stuck")[0]
	expire(t, b, mustClaim(t, b.q, 1, 1)[0])
	wantCounts(t, b.q, queue.Depth{Pending: 1})
	second := mustClaim(t, b.q, 1, 1)[0]
	if second.Attempt != 2 {
		t.Fatalf("attempt %d, want 2", second.Attempt)
	}
	expire(t, b, second)
	wantCounts(t, b.q, queue.Depth{Dead: 1})
	dead, err := testrig.DeadLetters(ctx, b.q, 1)
	if err != nil || len(dead) != 1 || dead[0].ID != id || dead[0].Cause != "lease expired at attempt 2 of 2" {
		t.Fatalf("Dead = %+v, %v", dead, err)
	}
}

func TestTidyAndPromoteAreBoundedByMax(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Lease: 5 * time.Millisecond, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	ctx := testContext(t)
	mustEnqueue(t, b.q, strings.Split("abcdefghij", "")...)
	items := mustClaim(t, b.q, 10, 10)
	untilRedisTime(t, b.rdb, items[9].Deadline.Add(time.Millisecond))
	for _, want := range []int{4, 4, 2, 0} {
		if n, err := qstore.Of(b.q).Tidy(ctx, 4); n != want || err != nil {
			t.Fatalf("Tidy(4) = %d, %v; want %d", n, err, want)
		}
	}
	items = mustClaim(t, b.q, 10, 10)
	outcomes := make([]queue.Settlement, len(items))
	for i, it := range items {
		outcomes[i] = queue.Settlement{Item: it, Err: errors.New("later")}
	}
	if s, err := b.q.Settle(ctx, outcomes...); s.Retried != 10 || err != nil {
		t.Fatalf("Settle = %+v, %v", s, err)
	}
	untilRedisTime(t, b.rdb, redisNow(t, b.rdb).Add(2*time.Millisecond))
	for _, want := range []int{3, 3, 3, 1, 0} {
		if n, err := qstore.Of(b.q).Promote(ctx, 3); n != want || err != nil {
			t.Fatalf("Promote(3) = %d, %v; want %d", n, err, want)
		}
	}
	wantCounts(t, b.q, queue.Depth{Pending: 10})
}

func TestPurgeDeadDeletesTheOldest(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxAttempts: 1})
	ctx := testContext(t)
	ids := mustEnqueue(t, b.q, "a", "b", "c")
	for _, it := range mustClaim(t, b.q, 3, 3) {
		if err := b.q.Nack(ctx, it, nil); err != nil {
			t.Fatal(err)
		}
		untilRedisTime(t, b.rdb, redisNow(t, b.rdb).Add(time.Millisecond)) // distinct death times
	}
	if n, err := qstore.Of(b.q).PurgeDead(ctx, 2); n != 2 || err != nil {
		t.Fatalf("PurgeDead = %d, %v; want 2", n, err)
	}
	for _, id := range ids[:2] {
		_, err := b.q.Value(ctx, id)
		wantErr(t, err, queue.ErrNotFound, "Value of a purged item")
	}
	dead, err := testrig.DeadLetters(ctx, b.q, 10)
	if err != nil || len(dead) != 1 || dead[0].ID != ids[2] || dead[0].Cause != "nacked without a cause" {
		t.Fatalf("Dead = %+v, %v; want only %s", dead, err, ids[2])
	}
	for _, h := range []string{"values", "attempts", "causes"} {
		if n := itemFields(t, b.rdb, tagOf(b.q)+":"+h); n != 1 {
			t.Fatalf("%s has %d item fields, want 1", h, n)
		}
	}
}

// An item acked after a failed attempt leaves nothing behind: its cause
// goes with it, also when a Release came in between (Settle deletes the
// causes of items acked past their first attempt only).
func TestAckAfterRetryDropsTheCause(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	ctx := testContext(t)
	tag := tagOf(b.q)
	mustEnqueue(t, b.q, "a", "b")
	for _, it := range mustClaim(t, b.q, 2, 2) {
		if err := b.q.Nack(ctx, it, errors.New("boom")); err != nil {
			t.Fatal(err)
		}
	}
	if n := itemFields(t, b.rdb, tag+":causes"); n != 2 {
		t.Fatalf("%d causes after the nacks, want 2", n)
	}
	untilRedisTime(t, b.rdb, redisNow(t, b.rdb).Add(2*time.Millisecond))
	if n, err := qstore.Of(b.q).Promote(ctx, 10); n != 2 || err != nil {
		t.Fatalf("Promote = %d, %v; want 2", n, err)
	}
	items := mustClaim(t, b.q, 2, 2)
	if n, err := b.q.Release(ctx, items[1]); n != 1 || err != nil {
		t.Fatalf("Release = %d, %v", n, err)
	}
	again := mustClaim(t, b.q, 1, 1)
	if items[0].Attempt != 2 || again[0].Attempt != 2 {
		t.Fatalf("attempts %d and %d, want 2 and 2", items[0].Attempt, again[0].Attempt)
	}
	s, err := b.q.Settle(ctx, queue.Settlement{Item: items[0]}, queue.Settlement{Item: again[0]})
	if err != nil || s.Acked != 2 {
		t.Fatalf("Settle = %+v, %v", s, err)
	}
	for _, h := range []string{"causes", "values", "attempts", "ready"} {
		if n := itemFields(t, b.rdb, tag+":"+h); n != 0 {
			t.Errorf("%s has %d item fields after the acks, want none", h, n)
		}
	}
}
