package qstore_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/queue"
)

// settleOne settles one claimed item with err and returns what Settle did.
func settleOne(t *testing.T, q *qstore.Store, it qstore.Item, err error) qstore.SettleResult {
	t.Helper()
	s, serr := q.Settle(testContext(t), qstore.Settlement{Item: it, Err: err})
	if serr != nil {
		t.Fatalf("Settle(%s, %v): %v", it.ID, err, serr)
	}
	return s
}

func deadLetters(t *testing.T, q *qstore.Store) []qstore.ItemInfo {
	t.Helper()
	dead, _, err := q.List(testContext(t), qstore.StateDead, 0, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	return dead
}

// A verdict is found through wrapping; DeadNow dead-letters at the first
// of ten attempts, with the whole text as the cause.
func TestVerdictDeadNow(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxAttempts: 10})
	id := mustEnqueueWith(t, b.q, "x", qstore.EnqueueOptions{}, false)
	it := mustClaim(t, b.q, 1, 1)[0]
	err := fmt.Errorf("charging: %w", qstore.NewVerdict(qstore.DeadNow, 0, errors.New("card declined")))
	if s := settleOne(t, b.q, it, err); s.Dead != 1 {
		t.Fatalf("Settle = %+v, want 1 dead", s)
	}
	dead := deadLetters(t, b.q)
	if len(dead) != 1 || dead[0].ID != id || dead[0].Attempts != 1 || dead[0].Cause != "charging: card declined" {
		t.Fatalf("dead letters %+v, want %s at attempt 1, cause %q", dead, id, "charging: card declined")
	}
}

// RetryIn's delay replaces the backoff (1 h here), and uses the attempt:
// at the last one it dead-letters.
func TestVerdictRetryIn(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxAttempts: 2, BackoffBase: time.Hour, BackoffMax: time.Hour})
	id := mustEnqueueWith(t, b.q, "x", qstore.EnqueueOptions{}, false)
	it := mustClaim(t, b.q, 1, 1)[0]
	// The settle's clock is TIME rounded down to the ms.
	before := redisNow(t, b.rdb).Truncate(time.Millisecond)
	if s := settleOne(t, b.q, it, qstore.NewVerdict(qstore.RetryIn, 300*time.Millisecond, errors.New("busy"))); s.Retried != 1 {
		t.Fatalf("Settle = %+v, want 1 retried", s)
	}
	after := redisNow(t, b.rdb)
	if due := dueOf(t, b, id); due.Before(before.Add(300*time.Millisecond)) || due.After(after.Add(300*time.Millisecond)) {
		t.Fatalf("due %v, want 300ms after the settle, in [%v, %v]", due, before, after)
	}
	promoteDue(t, b, id)
	it = mustClaim(t, b.q, 1, 1)[0]
	if it.Attempt != 2 {
		t.Fatalf("attempt %d after a RetryIn, want 2", it.Attempt)
	}
	if s := settleOne(t, b.q, it, qstore.NewVerdict(qstore.RetryIn, 0, errors.New("busy"))); s.Dead != 1 {
		t.Fatalf("Settle at the last attempt = %+v, want 1 dead", s)
	}
}

// A snooze uses no attempt, even at the last one, and is counted in the
// snoozes hash; past SnoozeMax it is a failed attempt with a cause that
// says so. The count goes with the ack.
func TestVerdictSnoozeUpToItsMost(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxAttempts: 2, BackoffBase: time.Hour, BackoffMax: time.Hour})
	ctx := testContext(t)
	id := mustEnqueueWith(t, b.q, "x", qstore.EnqueueOptions{}, false)
	snoozes := tagOf(b.q) + ":snoozes"
	it := mustClaim(t, b.q, 1, 1)[0]
	if s := settleOne(t, b.q, it, qstore.NewVerdict(qstore.RetryIn, 0, errors.New("first"))); s.Retried != 1 {
		t.Fatalf("Settle = %+v", s)
	}
	for i := 1; i <= qstore.SnoozeMax; i++ {
		promoteAll(t, b)
		it = mustClaim(t, b.q, 1, 1)[0]
		if it.Attempt != 2 {
			t.Fatalf("snooze %d: attempt %d, want 2", i, it.Attempt)
		}
		if s := settleOne(t, b.q, it, fmt.Errorf("wrapped: %w", qstore.NewVerdict(qstore.Snooze, 0, errors.New("later")))); s.Retried != 1 {
			t.Fatalf("snooze %d: Settle = %+v, want 1 delayed", i, s)
		}
		if n, err := b.rdb.HGet(ctx, snoozes, id).Int(); n != i || err != nil {
			t.Fatalf("snooze %d: snoozes holds %d, %v", i, n, err)
		}
	}
	if ttl := b.rdb.PTTL(ctx, snoozes).Val(); ttl < 6*24*time.Hour || ttl > 8*24*time.Hour {
		t.Fatalf("snoozes expires in %v, want about a week", ttl)
	}
	promoteAll(t, b)
	it = mustClaim(t, b.q, 1, 1)[0]
	// One snooze past the most: a failed attempt, the last, so dead.
	if s := settleOne(t, b.q, it, qstore.NewVerdict(qstore.Snooze, 0, errors.New("later"))); s.Dead != 1 {
		t.Fatalf("the snooze past the most: Settle = %+v, want 1 dead", s)
	}
	dead := deadLetters(t, b.q)
	want := fmt.Sprintf("later (snoozed %d times, the most an item may: this snooze is a failed attempt)", qstore.SnoozeMax)
	if len(dead) != 1 || dead[0].Attempts != 2 || dead[0].Cause != want {
		t.Fatalf("dead letters %+v, want attempt 2, cause %q", dead, want)
	}
	if n := itemFields(t, b.rdb, snoozes); n != 0 {
		t.Fatalf("snoozes holds %d items after the dead letter, want 0", n)
	}
	// Requeued, it may snooze again, and its ack forgets the count.
	if n, err := b.q.RequeueDead(ctx, 1); n != 1 || err != nil {
		t.Fatalf("RequeueDead = %d, %v", n, err)
	}
	it = mustClaim(t, b.q, 1, 1)[0]
	if s := settleOne(t, b.q, it, qstore.NewVerdict(qstore.Snooze, 0, nil)); s.Retried != 1 {
		t.Fatalf("Settle = %+v", s)
	}
	promoteAll(t, b)
	it = mustClaim(t, b.q, 1, 1)[0]
	if it.Attempt != 1 {
		t.Fatalf("after a requeue and a snooze: attempt %d, want 1", it.Attempt)
	}
	if err := b.q.Ack(ctx, it, nil); err != nil {
		t.Fatal(err)
	}
	if n := itemFields(t, b.rdb, snoozes); n != 0 {
		t.Fatalf("snoozes holds %d items after the ack, want 0", n)
	}
	wantCounts(t, b.q, qstore.Depth{})
}

// promoteAll waits for every delayed item to be due and promotes them.
func promoteAll(t *testing.T, b *bundle) {
	t.Helper()
	ctx := testContext(t)
	last, err := b.rdb.ZRangeWithScores(ctx, tagOf(b.q)+":delayed", -1, -1).Result()
	if err != nil || len(last) != 1 {
		t.Fatalf("delayed: %v, %v; want one", last, err)
	}
	untilRedisTime(t, b.rdb, time.UnixMilli(int64(last[0].Score)))
	if _, err := b.q.Promote(ctx, 100); err != nil {
		t.Fatal(err)
	}
}

// A fan-out's child dead-lettered now fails the join at once, waking its
// waiters; a snoozed one leaves it waiting.
func TestVerdictOfAJoinsChild(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxAttempts: 5})
	ctx := testContext(t)
	join := mustEnqueueJoin(t, b.q, qstore.JoinSpec{Children: payloads("c", 2), Final: []byte("final")}, false)
	items := mustClaim(t, b.q, 2, 2)
	s, err := b.q.Settle(ctx,
		qstore.Settlement{Item: items[0], Err: qstore.NewVerdict(qstore.Snooze, time.Hour, nil)},
		qstore.Settlement{Item: items[1], Err: qstore.NewVerdict(qstore.DeadNow, 0, errors.New("bad child"))})
	if err != nil || s.Retried != 1 || s.Dead != 1 {
		t.Fatalf("Settle = %+v, %v; want 1 snoozed, 1 dead", s, err)
	}
	j := wantJoin(t, b.q, join, qstore.JoinFailed, 0, 2)
	if !strings.Contains(j.Cause, "bad child") {
		t.Fatalf("join %+v: cause %q, want the child's", j, j.Cause)
	}
}

// A verdict's delay is brought into [0, VerdictDelayMax] when it is made,
// and a year's delay is kept by the settle; an unknown steer is RetryIn.
func TestVerdictDelayInBounds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, want time.Duration
	}{{-time.Hour, 0}, {0, 0}, {time.Second, time.Second}, {1 << 62, qstore.VerdictDelayMax}} {
		v := qstore.VerdictOf(qstore.NewVerdict(qstore.Snooze, c.in, nil))
		if v == nil || v.Delay() != c.want || v.Steer() != qstore.Snooze {
			t.Errorf("NewVerdict(Snooze, %v): %+v, want a delay of %v", c.in, v, c.want)
		}
	}
	if v := qstore.VerdictOf(qstore.NewVerdict(0, time.Second, nil)); v == nil || v.Steer() != qstore.RetryIn || v.Error() != "a retry asked for by the handler" {
		t.Errorf("NewVerdict(0, ...): %+v, want RetryIn with its own text", v)
	}
	b := setup(t, queue.Config{MaxAttempts: 3})
	id := mustEnqueueWith(t, b.q, "x", qstore.EnqueueOptions{}, false)
	it := mustClaim(t, b.q, 1, 1)[0]
	// The settle's clock is TIME rounded down to the ms.
	before := redisNow(t, b.rdb).Truncate(time.Millisecond)
	settleOne(t, b.q, it, qstore.NewVerdict(qstore.RetryIn, 1<<62, errors.New("much later")))
	if due := dueOf(t, b, id); due.Sub(before) < qstore.VerdictDelayMax || due.Sub(before) > qstore.VerdictDelayMax+time.Minute {
		t.Fatalf("due %v after the settle, want %v", due.Sub(before), qstore.VerdictDelayMax)
	}
}
