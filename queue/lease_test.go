package queue_test

import (
	"errors"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/queue"
)

// expire waits until the item's lease is past and Tidy has handed it back.
func expire(t *testing.T, b *bundle, it queue.Item) {
	t.Helper()
	untilRedisTime(t, b.rdb, it.Deadline.Add(time.Millisecond))
	if n, err := qstore.Of(b.q).Tidy(testContext(t), 10); n != 1 || err != nil {
		t.Fatalf("Tidy = %d, %v; want 1", n, err)
	}
}

func TestStaleAckAfterReclaimIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Lease: 20 * time.Millisecond})
	ctx := testContext(t)
	id := mustEnqueue(t, b.q, "work")[0]
	stale := mustClaim(t, b.q, 1, 1)[0]
	expire(t, b, stale)
	wantCounts(t, b.q, queue.Depth{Pending: 1})
	// Even before anyone re-claims it, the old claim is no longer current.
	wantErr(t, b.q.Ack(ctx, stale, []byte("old")), queue.ErrLeaseLost, "Ack after Tidy")

	// The fresh claim is made with an hour's lease (a second handle on the
	// same queue): with the test's 20ms one it could expire before the
	// checks of it below on a loaded machine, and show up as Expired.
	patient := newQueue(t, b.rdb, b.q.Name(), queue.Config{Prefix: b.q.Config().Prefix, Lease: time.Hour})
	fresh := mustClaim(t, patient, 1, 1)[0]
	if fresh.ID != id || fresh.Token == stale.Token || fresh.Attempt != 2 {
		t.Fatalf("re-claim = %+v, want %s at attempt 2 with a new token", fresh, id)
	}
	freshDeadline, err := b.rdb.ZScore(ctx, tagOf(b.q)+":leases", id).Result()
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, b.q.Ack(ctx, stale, []byte("old")), queue.ErrLeaseLost, "stale Ack")
	wantErr(t, b.q.Nack(ctx, stale, errors.New("old")), queue.ErrLeaseLost, "stale Nack")
	_, err = b.q.Extend(ctx, stale, time.Hour)
	wantErr(t, err, queue.ErrLeaseLost, "stale Extend")
	if n, err := b.q.Release(ctx, stale); n != 0 || err != nil {
		t.Fatalf("stale Release = %d, %v; want 0", n, err)
	}
	s, err := b.q.Settle(ctx, queue.Settlement{Item: stale, Result: []byte("old")})
	if err != nil || s.Acked != 0 || len(s.Lost) != 1 || s.Lost[0] != id {
		t.Fatalf("stale Settle = %+v, %v; want it lost", s, err)
	}

	// The fresh claim is untouched: same lease, same token, value kept.
	wantCounts(t, b.q, queue.Depth{Leased: 1})
	if d, err := b.rdb.ZScore(ctx, tagOf(b.q)+":leases", id).Result(); d != freshDeadline || err != nil {
		t.Fatalf("lease deadline %v (%v), want %v", d, err, freshDeadline)
	}
	if v, err := b.q.Value(ctx, id); string(v) != "work" || err != nil {
		t.Fatalf("Value = %q, %v", v, err)
	}
	_, err = b.q.Result(ctx, id)
	wantErr(t, err, queue.ErrNotFound, "Result before the fresh Ack")

	if err := b.q.Ack(ctx, fresh, []byte("new")); err != nil {
		t.Fatalf("fresh Ack: %v", err)
	}
	// A retried Ack of the same claim is harmless; a stale one stays refused.
	if err := b.q.Ack(ctx, fresh, []byte("new")); err != nil {
		t.Fatalf("repeated fresh Ack: %v", err)
	}
	wantErr(t, b.q.Ack(ctx, stale, []byte("old")), queue.ErrLeaseLost, "stale Ack after the fresh one")
	if r, err := b.q.Result(ctx, id); string(r) != "new" || err != nil {
		t.Fatalf("Result = %q, %v; want new", r, err)
	}
	wantCounts(t, b.q, queue.Depth{})
}

func TestExtendKeepsTheLease(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Lease: 30 * time.Millisecond})
	ctx := testContext(t)
	mustClaim(t, b.q, 1, 0) // an empty queue claims nothing
	mustEnqueue(t, b.q, "long job")
	item := mustClaim(t, b.q, 1, 1)[0]
	before := redisNow(t, b.rdb)
	deadline, err := b.q.Extend(ctx, item, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if d := deadline.Sub(before); d < time.Minute-time.Second || d > time.Minute+time.Second {
		t.Fatalf("Extend deadline %v after now, want about 1m", d)
	}
	untilRedisTime(t, b.rdb, item.Deadline.Add(time.Millisecond))
	if n, err := qstore.Of(b.q).Tidy(ctx, 10); n != 0 || err != nil {
		t.Fatalf("Tidy of an extended lease = %d, %v; want 0", n, err)
	}
	wantCounts(t, b.q, queue.Depth{Leased: 1})
	_, err = b.q.Extend(ctx, item, 0)
	wantErr(t, err, queue.ErrInvalidArgument, "Extend by 0")
	if err := b.q.Ack(ctx, item, nil); err != nil {
		t.Fatalf("Ack after Extend: %v", err)
	}
}

func TestReleaseHandsBackWithoutCountingTheAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	ids := mustEnqueue(t, b.q, "a", "b", "c", "d")
	items := mustClaim(t, b.q, 3, 3)
	if err := b.q.Ack(ctx, items[0], nil); err != nil {
		t.Fatal(err)
	}
	// items[0] is acked, so only two of the three are released.
	if n, err := b.q.Release(ctx, items...); n != 2 || err != nil {
		t.Fatalf("Release = %d, %v; want 2", n, err)
	}
	wantCounts(t, b.q, queue.Depth{Pending: 3})
	again := mustClaim(t, b.q, 3, 3)
	for i, want := range []string{ids[1], ids[2], ids[3]} {
		if again[i].ID != want || again[i].Attempt != 1 {
			t.Fatalf("claim %d after Release = %s attempt %d, want %s attempt 1", i, again[i].ID, again[i].Attempt, want)
		}
	}
	if again[0].Token == items[1].Token {
		t.Fatal("a released item was re-claimed with its old token")
	}
	if n, err := b.q.Release(ctx); n != 0 || err != nil {
		t.Fatalf("Release() = %d, %v", n, err)
	}
	_, err := b.q.Release(ctx, queue.Item{ID: "x"})
	wantErr(t, err, queue.ErrInvalidArgument, "Release of an unclaimed item")
}
