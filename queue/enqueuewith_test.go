package queue_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
)

func mustEnqueueWith(t testing.TB, q *queue.Queue, payload string, opts queue.EnqueueOptions, wantDuplicate bool) string {
	t.Helper()
	id, dup, err := q.EnqueueWith(context.Background(), []byte(payload), opts)
	if err != nil || id == "" || dup != wantDuplicate {
		t.Fatalf("EnqueueWith(%q, %+v) = %q, duplicate %v, %v; want duplicate %v", payload, opts, id, dup, err, wantDuplicate)
	}
	return id
}

// dueOf is when a delayed item is due, by Redis's clock.
func dueOf(t testing.TB, b *bundle, id string) time.Time {
	t.Helper()
	due, err := b.rdb.ZScore(context.Background(), tagOf(b.q)+":delayed", id).Result()
	if err != nil {
		t.Fatalf("ZSCORE delayed %s: %v", id, err)
	}
	return time.UnixMilli(int64(due))
}

// promoteDue waits for a delayed item's due time and promotes it; unlike
// promoteWhenDue it does not ask Promote before, for retries due within
// a ms or two.
func promoteDue(t *testing.T, b *bundle, id string) {
	t.Helper()
	untilRedisTime(t, b.rdb, dueOf(t, b, id))
	if n, err := qstore.Of(b.q).Promote(testContext(t), 10); n != 1 || err != nil {
		t.Fatalf("Promote when due = %d, %v; want 1", n, err)
	}
}

// A delayed item waits among the delayed items, due no sooner than its
// delay by Redis's clock; it is not claimable before, nor promoted, and is
// claimable once promoted when due.
func TestEnqueueWithDelay(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	const delay = 300 * time.Millisecond
	before := redisNow(t, b.rdb)
	id := mustEnqueueWith(t, b.q, "later", queue.EnqueueOptions{Delay: delay}, false)
	after := redisNow(t, b.rdb)
	// Redis's TIME has µs, the due time ms: 1ms either side.
	if due := dueOf(t, b, id); due.Before(before.Add(delay-time.Millisecond)) || due.After(after.Add(delay+time.Millisecond)) {
		t.Fatalf("due %v after the enqueue, want %v", due.Sub(before), delay)
	}
	wantCounts(t, b.q, queue.Depth{Delayed: 1})
	mustClaim(t, b.q, 10, 0)
	promoteWhenDue(t, b, id) // Promote finds nothing before the due time, then the item
	items := mustClaim(t, b.q, 10, 1)
	if it := items[0]; it.ID != id || string(it.Payload) != "later" || it.Attempt != 1 {
		t.Fatalf("claimed %+v, want %s attempt 1", it, id)
	}
	if now := redisNow(t, b.rdb); now.Before(before.Add(delay)) {
		t.Fatalf("claimed at %v after the enqueue, before its delay %v", now.Sub(before), delay)
	}
	if err := b.q.Ack(ctx, items[0], []byte("done")); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, b.q, queue.Depth{})

	// A delay below 1ms still delays (rounded up); 0 does not. The µs item
	// may be due by the time Depth reads (Due): a ms passes quickly on a
	// loaded machine; it is delayed all the same, until Promote.
	mustEnqueueWith(t, b.q, "µs", queue.EnqueueOptions{Delay: time.Microsecond}, false)
	mustEnqueueWith(t, b.q, "now", queue.EnqueueOptions{}, false)
	if got := mustDepth(t, b.q); got.Pending != 1 || got.Delayed != 1 {
		t.Fatalf("Depth = %+v, want 1 pending and 1 delayed", got)
	}
}

// An item's own MaxAttempts replaces the queue's for its nacks and for
// its expired leases, above or below the queue's; its claims report it;
// it survives RequeueDead and goes with the ack or the purge.
func TestEnqueueWithMaxAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxAttempts: 3, Lease: 20 * time.Millisecond, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	ctx := testContext(t)
	limits := tagOf(b.q) + ":limits"

	// nackUntilDead nacks the item at each claim and says at which attempt it died.
	nackUntilDead := func(id string) int {
		t.Helper()
		for attempt := 1; attempt <= 10; attempt++ {
			it := mustClaim(t, b.q, 1, 1)[0]
			if it.ID != id || it.Attempt != attempt {
				t.Fatalf("claimed %s attempt %d, want %s attempt %d", it.ID, it.Attempt, id, attempt)
			}
			s, err := b.q.Settle(ctx, queue.Settlement{Item: it, Err: errors.New("no")})
			if err != nil {
				t.Fatal(err)
			}
			if dead := s.Dead == 1; dead != (attempt == it.MaxAttempts) {
				t.Fatalf("%s at attempt %d of MaxAttempts %d: dead is %v", id, attempt, it.MaxAttempts, dead)
			} else if dead {
				return attempt
			}
			promoteDue(t, b, id)
		}
		t.Fatalf("%s never died", id)
		return 0
	}
	one := mustEnqueueWith(t, b.q, "one", queue.EnqueueOptions{MaxAttempts: 1}, false)
	if got := nackUntilDead(one); got != 1 {
		t.Fatalf("MaxAttempts 1 died at attempt %d", got)
	}
	five := mustEnqueueWith(t, b.q, "five", queue.EnqueueOptions{MaxAttempts: 5}, false)
	if got := nackUntilDead(five); got != 5 {
		t.Fatalf("MaxAttempts 5 (queue 3) died at attempt %d", got)
	}
	purgeDead(t, b, limits, 2)
	plain := mustEnqueue(t, b.q, "plain")[0]
	if got := nackUntilDead(plain); got != 3 {
		t.Fatalf("no MaxAttempts (queue 3) died at attempt %d", got)
	}
	// Requeued, the item keeps its own limit.
	two := mustEnqueueWith(t, b.q, "two", queue.EnqueueOptions{MaxAttempts: 2}, false)
	if got := nackUntilDead(two); got != 2 {
		t.Fatalf("MaxAttempts 2 died at attempt %d", got)
	}
	if n, err := qstore.Of(b.q).RequeueDead(ctx, 10); n != 2 || err != nil { // plain and two
		t.Fatalf("RequeueDead = %d, %v", n, err)
	}
	for _, it := range mustClaim(t, b.q, 2, 2) {
		if it.ID == plain {
			if err := b.q.Ack(ctx, it, nil); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := b.q.Nack(ctx, it, errors.New("again")); err != nil {
			t.Fatal(err)
		}
	}
	promoteDue(t, b, two)
	if it := mustClaim(t, b.q, 1, 1)[0]; it.ID != two || it.Attempt != 2 {
		t.Fatalf("claimed %s attempt %d, want %s attempt 2", it.ID, it.Attempt, two)
	} else if s, err := b.q.Settle(ctx, queue.Settlement{Item: it, Err: errors.New("again")}); s.Dead != 1 || err != nil {
		t.Fatalf("requeued MaxAttempts 2 at attempt 2: Settle = %+v, %v; want dead", s, err)
	}

	// One claim of items with limits and without, and with a malformed
	// limit (the queue's, as the nack reads it): each gets its own.
	mixed := []string{
		mustEnqueueWith(t, b.q, "seven", queue.EnqueueOptions{MaxAttempts: 7}, false),
		mustEnqueue(t, b.q, "plain")[0],
		mustEnqueueWith(t, b.q, "bad", queue.EnqueueOptions{MaxAttempts: 2}, false),
	}
	if err := b.rdb.HSet(ctx, limits, mixed[2], "not a number").Err(); err != nil {
		t.Fatal(err)
	}
	for i, it := range mustClaim(t, b.q, 3, 3) {
		if want := []int{7, 3, 3}[i]; it.ID != mixed[i] || it.MaxAttempts != want {
			t.Errorf("claim %d: %s MaxAttempts %d, want %s %d", i, it.ID, it.MaxAttempts, mixed[i], want)
		}
		if err := b.q.Ack(ctx, it, nil); err != nil {
			t.Fatal(err)
		}
	}

	// An expired lease at the item's last attempt dead-letters it in Tidy.
	stuck := mustEnqueueWith(t, b.q, "stuck", queue.EnqueueOptions{MaxAttempts: 1}, false)
	expire(t, b, mustClaim(t, b.q, 1, 1)[0])
	dead, err := testrig.DeadLetters(ctx, b.q, 10)
	if err != nil {
		t.Fatal(err)
	}
	if last := dead[len(dead)-1]; last.ID != stuck || last.Cause != "lease expired at attempt 1 of 1" {
		t.Fatalf("last dead letter %+v, want %s, lease expired at attempt 1 of 1", last, stuck)
	}
	long := mustEnqueueWith(t, b.q, "long", queue.EnqueueOptions{MaxAttempts: 4}, false)
	for attempt := 1; attempt <= 3; attempt++ {
		expire(t, b, mustClaim(t, b.q, 1, 1)[0])
	}
	it := mustClaim(t, b.q, 1, 1)[0]
	if it.ID != long || it.Attempt != 4 {
		t.Fatalf("claimed %s attempt %d, want %s attempt 4 (queue MaxAttempts 3)", it.ID, it.Attempt, long)
	}
	if err := b.q.Ack(ctx, it, nil); err != nil {
		t.Fatal(err)
	}
	// Left: two and stuck, dead with their limits.
	wantCounts(t, b.q, queue.Depth{Dead: 2})
	if n := itemFields(t, b.rdb, limits); n != 2 {
		t.Fatalf("limits hold %d items, want 2 (the dead letters')", n)
	}
	purgeDead(t, b, limits, 2)
}

// A unique key returns the first item's id while it is pending, delayed or
// leased; a new item once it is acked, dead-lettered or purged, or once
// the key's lifetime has passed.
func TestEnqueueWithUnique(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxAttempts: 1})
	ctx := testContext(t)
	key := queue.EnqueueOptions{Unique: "report:42", UniqueFor: time.Hour}

	first := mustEnqueueWith(t, b.q, "a", key, false)
	if again := mustEnqueueWith(t, b.q, "b", key, true); again != first {
		t.Fatalf("pending: second enqueue = %s, want the first's id %s", again, first)
	}
	other := mustEnqueueWith(t, b.q, "c", queue.EnqueueOptions{Unique: "report:43", UniqueFor: time.Hour}, false)
	claimed := mustClaim(t, b.q, 10, 2)
	it := claimed[0]
	if it.ID != first || string(it.Payload) != "a" || claimed[1].ID != other {
		t.Fatalf("claimed %+v, want %s with the first payload, then %s", claimed, first, other)
	}
	if err := b.q.Ack(ctx, claimed[1], nil); err != nil {
		t.Fatal(err)
	}
	if again := mustEnqueueWith(t, b.q, "b", key, true); again != first {
		t.Fatalf("leased: second enqueue = %s, want %s", again, first)
	}
	if err := b.q.Ack(ctx, it, nil); err != nil {
		t.Fatal(err)
	}
	second := mustEnqueueWith(t, b.q, "d", key, false)
	if second == first || second == other {
		t.Fatalf("after the ack: id %s, want a new one", second)
	}

	// Dead-lettered: the key is free; the dead letter stays a dead letter.
	if it := mustClaim(t, b.q, 10, 1)[0]; it.ID != second {
		t.Fatalf("claimed %s, want %s", it.ID, second)
	} else if err := b.q.Nack(ctx, it, errors.New("dies")); err != nil {
		t.Fatal(err)
	}
	third := mustEnqueueWith(t, b.q, "e", queue.EnqueueOptions{Unique: key.Unique, UniqueFor: key.UniqueFor, Delay: time.Hour}, false)
	if third == second {
		t.Fatal("after the dead letter: the dead item's id")
	}
	if again := mustEnqueueWith(t, b.q, "f", key, true); again != third {
		t.Fatalf("delayed: second enqueue = %s, want %s", again, third)
	}
	wantCounts(t, b.q, queue.Depth{Delayed: 1, Dead: 1})

	// Purged: free too. (third is delayed for an hour; purge the dead
	// letter, then a fourth under a key held by a purged item.)
	k2 := queue.EnqueueOptions{Unique: "purged", UniqueFor: time.Hour}
	p := mustEnqueueWith(t, b.q, "p", k2, false)
	if err := b.q.Nack(ctx, mustClaim(t, b.q, 1, 1)[0], errors.New("dies")); err != nil {
		t.Fatal(err)
	}
	if n, err := qstore.Of(b.q).PurgeDead(ctx, 10); n != 2 || err != nil {
		t.Fatalf("PurgeDead = %d, %v", n, err)
	}
	if after := mustEnqueueWith(t, b.q, "p2", k2, false); after == p {
		t.Fatal("after the purge: the purged item's id")
	}

	// Expired: past UniqueFor a second item is added beside the live first.
	short := queue.EnqueueOptions{Unique: "short", UniqueFor: 50 * time.Millisecond}
	s1 := mustEnqueueWith(t, b.q, "s1", short, false)
	untilRedisTime(t, b.rdb, redisNow(t, b.rdb).Add(short.UniqueFor+2*time.Millisecond))
	// Redis expires a key by its own clock, on access: at or past the
	// lifetime, the lock is gone.
	s2 := mustEnqueueWith(t, b.q, "s2", short, false)
	if s2 == s1 {
		t.Fatal("past UniqueFor: the first's id")
	}
	if v, err := b.q.Value(ctx, s1); string(v) != "s1" || err != nil {
		t.Fatalf("the first item after its key expired: Value = %q, %v; want it kept", v, err)
	}
	wantCounts(t, b.q, queue.Depth{Pending: 3, Delayed: 1})
}

// Concurrent enqueues with one key add exactly one item, and all of them
// return its id.
func TestEnqueueWithUniqueConcurrently(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	enqueueAtOnce(t, 50, "enqueue", func(i int) (string, bool, error) {
		return b.q.EnqueueWith(context.Background(), []byte{byte(i) + 1}, queue.EnqueueOptions{Unique: "once", UniqueFor: time.Minute})
	})
	wantCounts(t, b.q, queue.Depth{Pending: 1})
}

// Bad options and payloads fail before any Redis call, naming the field,
// and write nothing.
func TestEnqueueWithRejectsBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxPayload: 16})
	ctx := testContext(t)
	const year = 365 * 24 * time.Hour
	for _, tc := range []struct {
		name    string
		payload string
		opts    queue.EnqueueOptions
		target  error
		says    string
	}{
		{"negative delay", "x", queue.EnqueueOptions{Delay: -time.Nanosecond}, queue.ErrInvalidArgument, "Delay"},
		{"most negative delay", "x", queue.EnqueueOptions{Delay: math.MinInt64}, queue.ErrInvalidArgument, "Delay"},
		{"absurd delay", "x", queue.EnqueueOptions{Delay: year + time.Nanosecond}, queue.ErrInvalidArgument, "Delay"},
		{"largest delay", "x", queue.EnqueueOptions{Delay: math.MaxInt64}, queue.ErrInvalidArgument, "Delay"},
		{"negative attempts", "x", queue.EnqueueOptions{MaxAttempts: -1}, queue.ErrInvalidArgument, "MaxAttempts"},
		{"absurd attempts", "x", queue.EnqueueOptions{MaxAttempts: 1001}, queue.ErrInvalidArgument, "MaxAttempts"},
		{"unique key too long", "x", queue.EnqueueOptions{Unique: strings.Repeat("k", 513), UniqueFor: time.Minute}, queue.ErrInvalidArgument, "Unique key of 513 bytes"},
		{"unique key without a lifetime", "x", queue.EnqueueOptions{Unique: "k"}, queue.ErrInvalidArgument, "UniqueFor"},
		{"unique key negative lifetime", "x", queue.EnqueueOptions{Unique: "k", UniqueFor: -time.Second}, queue.ErrInvalidArgument, "UniqueFor"},
		{"unique key absurd lifetime", "x", queue.EnqueueOptions{Unique: "k", UniqueFor: year + 1}, queue.ErrInvalidArgument, "UniqueFor"},
		{"lifetime without a key (empty key)", "x", queue.EnqueueOptions{UniqueFor: time.Minute}, queue.ErrInvalidArgument, "without a Unique key"},
		{"empty payload", "", queue.EnqueueOptions{}, queue.ErrEmptyPayload, "payload"},
		{"payload too large", strings.Repeat("p", 17), queue.EnqueueOptions{}, queue.ErrPayloadTooLarge, "MaxPayload 16"},
	} {
		id, dup, err := b.q.EnqueueWith(ctx, []byte(tc.payload), tc.opts)
		if id != "" || dup || !errors.Is(err, tc.target) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: EnqueueWith = %q, %v, %v; want %v saying %q", tc.name, id, dup, err, tc.target, tc.says)
		}
	}
	if keys, err := b.rdb.Keys(ctx, "*").Result(); len(keys) != 0 || err != nil {
		t.Fatalf("bad input wrote %v (%v)", keys, err)
	}
	// The bounds themselves are valid.
	mustEnqueueWith(t, b.q, "x", queue.EnqueueOptions{Delay: year, MaxAttempts: 1000, Unique: strings.Repeat("k", 512), UniqueFor: year}, false)
	mustEnqueueWith(t, b.q, "x", queue.EnqueueOptions{Unique: "\x00{}:*", UniqueFor: time.Nanosecond}, false)
	wantCounts(t, b.q, queue.Depth{Pending: 1, Delayed: 1})
}

// A unique, delayed enqueue with its own limit is one round trip: one
// script call, once the connection is up and the script loaded (the very
// first call also sends the script after EVALSHA's NOSCRIPT: the usual
// item's, a delayed one's and the one with every option, each with a
// unique key and without).
func TestEnqueueWithIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	b, rt := setupCounted(t, queue.Config{})
	ctx := testContext(t)
	for _, warm := range []queue.EnqueueOptions{{}, {Unique: "warm", UniqueFor: time.Minute},
		{MaxAttempts: 2}, {MaxAttempts: 2, Unique: "warm2", UniqueFor: time.Minute}, {Delay: time.Minute}} {
		if _, _, err := b.q.EnqueueWith(ctx, []byte("warm"), warm); err != nil {
			t.Fatal(err)
		}
	}
	for _, opts := range []queue.EnqueueOptions{
		{},
		{Delay: time.Minute},
		{MaxAttempts: 2},
		{Unique: "k", UniqueFor: time.Minute},
		{Unique: "k", UniqueFor: time.Minute}, // the duplicate
		{Delay: time.Minute, MaxAttempts: 9, Unique: "all", UniqueFor: time.Minute},
	} {
		before := rt.Load()
		if _, _, err := b.q.EnqueueWith(ctx, []byte("x"), opts); err != nil {
			t.Fatal(err)
		}
		if n := rt.Load() - before; n != 1 {
			t.Errorf("EnqueueWith(%+v): %d round trips, want 1", opts, n)
		}
	}
}
