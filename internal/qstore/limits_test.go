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

// task is a payload that begins as package tasks's envelopes do: version
// 1, the type's length and the type; then a codec's name and arguments.
func task(typ, args string) []byte {
	return append([]byte{1, byte(len(typ))}, typ+"\x04json"+args...)
}

func enqueueTasks(t testing.TB, q *qstore.Store, payloads ...[]byte) []string {
	t.Helper()
	ids, err := q.EnqueueBatch(context.Background(), payloads)
	if err != nil {
		t.Fatalf("EnqueueBatch: %v", err)
	}
	return ids
}

func setLimit(t testing.TB, q *qstore.Store, typ string, l qstore.TypeLimit) {
	t.Helper()
	if err := q.SetTypeLimit(context.Background(), typ, l); err != nil {
		t.Fatalf("SetTypeLimit(%s, %+v): %v", typ, l, err)
	}
}

func idsOf(items []qstore.Item) string {
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = string(it.Payload[len(it.Payload)-2:])
	}
	return strings.Join(ids, " ")
}

// A type at its limit is set aside with no attempt used, the items of
// other types behind it are claimed, and its set-aside items come back,
// oldest first and before its newer ones, as its places free: by an ack,
// a nack, a release.
func TestTypeLimitSetsAsideAndKeepsOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{BackoffBase: time.Hour, BackoffMax: time.Hour})
	ctx := testContext(t)
	setLimit(t, b.q, "slow", qstore.TypeLimit{Running: 1})
	enqueueTasks(t, b.q, task("slow", "s1"), task("slow", "s2"), task("fast", "f1"), task("slow", "s3"), task("fast", "f2"))
	first := mustClaim(t, b.q, 10, 3)
	if got := idsOf(first); got != "s1 f1 f2" {
		t.Fatalf("first claim got %s, want s1 f1 f2", got)
	}
	wantCounts(t, b.q, qstore.Depth{Pending: 2, Parked: 2, Leased: 3})
	mustClaim(t, b.q, 10, 0) // s1 holds the one place
	enqueueTasks(t, b.q, task("slow", "s4"))

	if err := b.q.Ack(ctx, first[0], nil); err != nil {
		t.Fatal(err)
	}
	s2 := mustClaim(t, b.q, 10, 1)
	if got := idsOf(s2); got != "s2" || s2[0].Attempt != 1 {
		t.Fatalf("after the ack, claimed %s at attempt %d, want s2 at 1", got, s2[0].Attempt)
	}
	if err := b.q.Nack(ctx, s2[0], errors.New("boom")); err != nil {
		t.Fatal(err)
	}
	s3 := mustClaim(t, b.q, 10, 1)
	if got := idsOf(s3); got != "s3" {
		t.Fatalf("after the nack, claimed %s, want s3", got)
	}
	if n, err := b.q.Release(ctx, s3...); n != 1 || err != nil {
		t.Fatalf("Release = %d, %v", n, err)
	}
	// Released to the head of its type's set-aside items: s3 again, then
	// s4, one at a time.
	for _, want := range []string{"s3", "s4"} {
		it := mustClaim(t, b.q, 10, 1)
		if got := idsOf(it); got != want || it[0].Attempt != 1 {
			t.Fatalf("claimed %s at attempt %d, want %s at 1", got, it[0].Attempt, want)
		}
		if err := b.q.Ack(ctx, it[0], nil); err != nil {
			t.Fatal(err)
		}
	}
	wantCounts(t, b.q, qstore.Depth{Leased: 2, Delayed: 1})
	if n := itemFields(t, b.rdb, tagOf(b.q)+":holding"); n != 0 {
		t.Fatalf("holding has %d items with none of its type leased", n)
	}
}

// A crashed holder's place comes back with its lease, and a lease that
// is extended keeps its place.
func TestTypeLimitPlaceComesBackWithTheLease(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Lease: 300 * time.Millisecond})
	ctx := testContext(t)
	setLimit(t, b.q, "slow", qstore.TypeLimit{Running: 2})
	enqueueTasks(t, b.q, task("slow", "s1"), task("slow", "s2"), task("slow", "s3"), task("slow", "s4"))
	held := mustClaim(t, b.q, 10, 2) // never settled: their worker crashed
	if _, err := b.q.Extend(ctx, held[1], time.Hour); err != nil {
		t.Fatal(err)
	}
	untilRedisTime(t, b.rdb, held[0].Deadline)
	// s1's lease expired: it is handed back to pending's tail, and its
	// place goes to the oldest set-aside item, s3; s2 still holds one, so
	// s1 is set aside behind s4.
	got := mustClaim(t, b.q, 10, 1)
	if idsOf(got) != "s3" || got[0].Attempt != 1 {
		t.Fatalf("after the lease expired, claimed %s at attempt %d, want s3 at 1", idsOf(got), got[0].Attempt)
	}
	wantCounts(t, b.q, qstore.Depth{Pending: 2, Parked: 2, Leased: 2})
}

// Rate bounds the claims of a type in any window of Per, a sliding one:
// a claim is refused until the oldest start in the window leaves it. A
// release gives its start back.
func TestTypeLimitRateSlides(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	setLimit(t, b.q, "api", qstore.TypeLimit{Rate: 2, Per: 400 * time.Millisecond})
	enqueueTasks(t, b.q, task("api", "a1"), task("api", "a2"), task("api", "a3"))
	got := mustClaim(t, b.q, 1, 1)
	if n, err := b.q.Release(ctx, got...); n != 1 || err != nil {
		t.Fatalf("Release = %d, %v", n, err)
	}
	two := mustClaim(t, b.q, 10, 2) // the released start no longer counts
	start := two[0].Deadline.Add(-b.q.Config().Lease)
	mustClaim(t, b.q, 10, 0)
	untilRedisTime(t, b.rdb, start.Add(300*time.Millisecond))
	mustClaim(t, b.q, 10, 0) // still inside the window
	untilRedisTime(t, b.rdb, start.Add(400*time.Millisecond))
	if got := idsOf(mustClaim(t, b.q, 10, 1)); got != "a3" {
		t.Fatalf("after the window, claimed %s, want a3", got)
	}
}

// Lifting a limit brings the set-aside items back; limits read back as
// set, and bad ones are refused.
func TestTypeLimitsSetAndLifted(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	setLimit(t, b.q, "slow", qstore.TypeLimit{Running: 1})
	setLimit(t, b.q, "api", qstore.TypeLimit{Rate: 5, Per: time.Second})
	limits, err := b.q.TypeLimits(ctx)
	if err != nil || len(limits) != 2 || limits["slow"].Running != 1 || limits["api"] != (qstore.TypeLimit{Rate: 5, Per: time.Second}) {
		t.Fatalf("TypeLimits = %+v, %v", limits, err)
	}
	enqueueTasks(t, b.q, task("slow", "s1"), task("slow", "s2"), task("slow", "s3"))
	mustClaim(t, b.q, 10, 1)
	setLimit(t, b.q, "slow", qstore.TypeLimit{})
	if got := idsOf(mustClaim(t, b.q, 10, 2)); got != "s2 s3" {
		t.Fatalf("after the limit was lifted, claimed %s, want s2 s3", got)
	}
	wantCounts(t, b.q, qstore.Depth{Leased: 3})
	for _, bad := range []qstore.TypeLimit{{Running: -1}, {Rate: 1}, {Per: time.Second}, {Rate: 1, Per: 48 * time.Hour}, {Running: 1_000_000}} {
		if err := b.q.SetTypeLimit(ctx, "slow", bad); !errors.Is(err, queue.ErrInvalidArgument) {
			t.Errorf("SetTypeLimit(%+v) = %v, want ErrInvalidArgument", bad, err)
		}
	}
	if err := b.q.SetTypeLimit(ctx, "no:colons", qstore.TypeLimit{Running: 1}); !errors.Is(err, queue.ErrInvalidArgument) {
		t.Errorf("SetTypeLimit of a bad type = %v, want ErrInvalidArgument", err)
	}
}

// A claim looks at a bounded number of entries: behind a long run of
// set-aside items it says More, and the next claims get past them.
func TestTypeLimitBoundedAndMore(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	setLimit(t, b.q, "slow", qstore.TypeLimit{Running: 1})
	payloads := make([][]byte, 0, 31)
	for range 30 {
		payloads = append(payloads, task("slow", "sx"))
	}
	enqueueTasks(t, b.q, append(payloads, task("fast", "f1"))...)
	c, err := b.q.ClaimDetailed(testContext(t), 5) // looks at 20 entries: 1 leased, 19 set aside
	if err != nil || len(c.Items) != 1 || !c.More {
		t.Fatalf("ClaimDetailed(5) = %d items, More %v, %v; want 1, true", len(c.Items), c.More, err)
	}
	if got := idsOf(mustClaim(t, b.q, 5, 1)); got != "f1" {
		t.Fatalf("second claim got %s, want f1", got)
	}
	wantCounts(t, b.q, qstore.Depth{Pending: 29, Parked: 29, Leased: 2})
}

// The longest type, 128 bytes, takes two bytes of length in the
// envelope, and is limited as any other.
func TestTypeLimitLongestType(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	typ := strings.Repeat("t", 128)
	setLimit(t, b.q, typ, qstore.TypeLimit{Running: 1})
	long := func(args string) []byte { return append([]byte{1, 0x80, 0x01}, typ+"\x04json"+args...) }
	enqueueTasks(t, b.q, long("l1"), long("l2"), task("fast", "f1"))
	if got := idsOf(mustClaim(t, b.q, 10, 2)); got != "l1 f1" {
		t.Fatalf("claimed %s, want l1 f1", got)
	}
	wantCounts(t, b.q, qstore.Depth{Pending: 1, Parked: 1, Leased: 2})
}
