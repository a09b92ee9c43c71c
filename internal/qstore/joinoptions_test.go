package qstore_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/queue"
)

func mustEnqueueJoin(t testing.TB, q *qstore.Store, j qstore.JoinSpec, wantDuplicate bool) string {
	t.Helper()
	id, dup, err := q.EnqueueJoin(context.Background(), j)
	if err != nil || id == "" || dup != wantDuplicate {
		t.Fatalf("EnqueueJoin(%d children, %+v) = %q, duplicate %v, %v; want duplicate %v", len(j.Children), j.Options, id, dup, err, wantDuplicate)
	}
	return id
}

// nackOnce nacks a claimed item and says whether that dead-lettered it.
func nackOnce(t *testing.T, q *qstore.Store, it qstore.Item) bool {
	t.Helper()
	s, err := q.Settle(testContext(t), qstore.Settlement{Item: it, Err: errors.New("no")})
	if err != nil || s.Dead+s.Retried != 1 {
		t.Fatalf("Nack of %s = %+v, %v", it.ID, s, err)
	}
	return s.Dead == 1
}

// A join's MaxAttempts is every child's and the final item's own limit:
// claims report it, a child and the final item die at it (not at the
// queue's), a requeued child keeps it; a join without it has the queue's.
func TestJoinMaxAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxAttempts: 5, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	ctx := testContext(t)
	limits := tagOf(b.q) + ":limits"
	id := mustEnqueueJoin(t, b.q, qstore.JoinSpec{Children: payloads("c", 3), Final: []byte("f"), Options: qstore.EnqueueOptions{MaxAttempts: 2}}, false)
	plain := mustEnqueueJoin(t, b.q, qstore.JoinSpec{Children: payloads("p", 1), Final: []byte("pf")}, false)
	if n := itemFields(t, b.rdb, limits); n != 4 {
		t.Fatalf("limits hold %d items, want 4 (3 children and the final item)", n)
	}
	items := mustClaim(t, b.q, 10, 4)
	for _, it := range items {
		want := 2
		if it.ID == plain+".1" {
			want = 5
		}
		if it.MaxAttempts != want {
			t.Errorf("claimed %s with MaxAttempts %d, want %d", it.ID, it.MaxAttempts, want)
		}
	}
	byID := map[string]qstore.Item{}
	for _, it := range items {
		byID[it.ID] = it
	}
	for _, c := range []string{id + ".1", id + ".3", plain + ".1"} {
		if err := b.q.Ack(ctx, byID[c], nil); err != nil {
			t.Fatal(err)
		}
	}
	if it := claimOne(t, b.q); it.ID != plain || it.MaxAttempts != 5 {
		t.Fatalf("claimed %s with MaxAttempts %d, want the plain join's final item with 5", it.ID, it.MaxAttempts)
	} else if err := b.q.Ack(ctx, it, nil); err != nil {
		t.Fatal(err)
	}
	// Child 2 dies at its second attempt, the join's limit, not the queue's 5th.
	if nackOnce(t, b.q, byID[id+".2"]) {
		t.Fatal("child 2 died at attempt 1 of 2")
	}
	promoteDue(t, b, id+".2")
	if it := claimOne(t, b.q); it.ID != id+".2" || it.Attempt != 2 || it.MaxAttempts != 2 {
		t.Fatalf("claimed %s attempt %d of %d, want %s.2 attempt 2 of 2", it.ID, it.Attempt, it.MaxAttempts, id)
	} else if !nackOnce(t, b.q, it) {
		t.Fatal("child 2 survived its join's last attempt")
	}
	wantJoin(t, b.q, id, qstore.JoinFailed, 2, 3)

	// Requeued, it keeps the limit; its ack enqueues the final item, which
	// has the join's limit too.
	if n, err := b.q.RequeueDead(ctx, 10); n != 1 || err != nil {
		t.Fatalf("RequeueDead = %d, %v", n, err)
	}
	// RequeueDead resets the count, not the limit.
	if it := claimOne(t, b.q); it.ID != id+".2" || it.Attempt != 1 || it.MaxAttempts != 2 {
		t.Fatalf("claimed %s attempt %d of %d, want the requeued %s.2 attempt 1 of 2", it.ID, it.Attempt, it.MaxAttempts, id)
	} else if err := b.q.Ack(ctx, it, nil); err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt <= 2; attempt++ {
		it := claimOne(t, b.q)
		if it.ID != id || it.Attempt != attempt || it.MaxAttempts != 2 {
			t.Fatalf("claimed %s attempt %d of %d, want the final item %s attempt %d of 2", it.ID, it.Attempt, it.MaxAttempts, id, attempt)
		}
		if dead := nackOnce(t, b.q, it); dead != (attempt == 2) {
			t.Fatalf("the final item at attempt %d of 2: dead %v", attempt, dead)
		}
		if attempt == 1 {
			promoteDue(t, b, id)
		}
	}
	if _, err := b.q.Wait(ctx, id); !errors.Is(err, qstore.ErrDead) {
		t.Fatalf("Wait of the join = %v, want ErrDead", err)
	}
	wantCounts(t, b.q, qstore.Depth{Dead: 1})
	if n := itemFields(t, b.rdb, limits); n != 1 {
		t.Fatalf("limits hold %d items, want 1 (the dead final item's)", n)
	}
	purgeDead(t, b, limits, 1)
}

// A join's Delay holds its children among the delayed items, due no
// sooner than the delay by Redis's clock: not claimable before, claimable
// once promoted; the final item still waits for them.
func TestJoinDelay(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	const delay = time.Second
	before := redisNow(t, b.rdb)
	id := mustEnqueueJoin(t, b.q, qstore.JoinSpec{Children: payloads("c", 3), Final: []byte("f"), Options: qstore.EnqueueOptions{Delay: delay}}, false)
	after := redisNow(t, b.rdb)
	due := dueOf(t, b, id+".1")
	// Redis's TIME has µs, the due time ms: 1ms either side.
	if due.Before(before.Add(delay-time.Millisecond)) || due.After(after.Add(delay+time.Millisecond)) {
		t.Fatalf("due %v after the enqueue, want %v", due.Sub(before), delay)
	}
	for _, c := range []string{id + ".2", id + ".3"} {
		if d := dueOf(t, b, c); !d.Equal(due) {
			t.Fatalf("child %s due at %v, child 1 at %v", c, d, due)
		}
	}
	// Not wantCounts: Due may count them on a machine that stalls for the delay.
	if d := mustDepth(t, b.q); d.Pending != 0 || d.Leased != 0 || d.Delayed != 3 {
		t.Fatalf("Depth = %+v, want 3 delayed, nothing pending", d)
	}
	wantJoin(t, b.q, id, qstore.JoinRunning, 0, 3)
	mustClaim(t, b.q, 10, 0)
	n, err := b.q.Promote(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	// Promote read Redis's clock before this: if that is still before the
	// due time, Promote must have found nothing.
	if now := redisNow(t, b.rdb); now.Before(due) && n != 0 {
		t.Fatalf("Promote at %v before the due time promoted %d", due.Sub(now), n)
	}
	untilRedisTime(t, b.rdb, due)
	if m, err := b.q.Promote(ctx, 10); n+m != 3 || err != nil {
		t.Fatalf("Promote when due = %d (and %d before), %v; want 3 in all", m, n, err)
	}
	items := mustClaim(t, b.q, 10, 3)
	for i, it := range items {
		if it.ID != fmt.Sprintf("%s.%d", id, i+1) || it.Attempt != 1 {
			t.Fatalf("claimed %s attempt %d, want child %d attempt 1", it.ID, it.Attempt, i+1)
		}
	}
	if err := b.q.Ack(ctx, items[0], []byte("r1")); err != nil {
		t.Fatal(err)
	}
	if err := b.q.Ack(ctx, items[1], []byte("r2")); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, b.q, qstore.Depth{Leased: 1}) // the final item waits for child 3
	if err := b.q.Ack(ctx, items[2], []byte("r3")); err != nil {
		t.Fatal(err)
	}
	final := claimOne(t, b.q)
	if final.ID != id || string(final.Payload) != "f" {
		t.Fatalf("claimed %s %q, want the final item", final.ID, final.Payload)
	}
	if err := b.q.Ack(ctx, final, []byte("F")); err != nil {
		t.Fatal(err)
	}
	if r, err := b.q.Wait(ctx, id); string(r) != "F" || err != nil {
		t.Fatalf("Wait = %q, %v", r, err)
	}
	wantCounts(t, b.q, qstore.Depth{})
}

// A join's unique key: while it is held, EnqueueJoin (and EnqueueWith)
// under it adds nothing and returns the join's id; the key is freed when
// the final item is acked or dead-lettered, or when UniqueFor has passed;
// a join failed by a dead child holds it.
func TestJoinUnique(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxAttempts: 1})
	ctx := testContext(t)
	key := qstore.EnqueueOptions{Unique: "report", UniqueFor: time.Hour}
	join := func(prefix string, opts qstore.EnqueueOptions, dup bool) string {
		t.Helper()
		return mustEnqueueJoin(t, b.q, qstore.JoinSpec{Children: payloads(prefix, 2), Final: []byte(prefix), Options: opts}, dup)
	}

	first := join("a", key, false)
	if again := join("b", key, true); again != first {
		t.Fatalf("pending: second EnqueueJoin = %s, want the first's id %s", again, first)
	}
	if again := mustEnqueueJoin(t, b.q, qstore.JoinSpec{ID: "named", Children: payloads("n", 1), Final: []byte("n"), Options: key}, true); again != first {
		t.Fatalf("with an id: EnqueueJoin = %s, want %s", again, first)
	}
	if _, err := b.q.Join(ctx, "named"); !errors.Is(err, qstore.ErrNotFound) {
		t.Fatalf("Join of the duplicate's id = %v, want ErrNotFound", err)
	}
	if again := mustEnqueueWith(t, b.q, "item", key, true); again != first {
		t.Fatalf("EnqueueWith under the join's key = %s, want %s", again, first)
	}
	wantCounts(t, b.q, qstore.Depth{Pending: 2})
	for _, it := range mustClaim(t, b.q, 10, 2) {
		if err := b.q.Ack(ctx, it, nil); err != nil {
			t.Fatal(err)
		}
	}
	if again := join("b", key, true); again != first {
		t.Fatalf("final item pending: EnqueueJoin = %s, want %s", again, first)
	}
	final := claimOne(t, b.q)
	if again := join("b", key, true); again != first || final.ID != first {
		t.Fatalf("final item %s leased: EnqueueJoin = %s, want %s", final.ID, again, first)
	}
	if err := b.q.Ack(ctx, final, nil); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, b.q, qstore.Depth{})

	// Acked: free. This one's final item dies: free again.
	second := join("c", key, false)
	if second == first {
		t.Fatal("after the final item's ack: the first's id")
	}
	for _, it := range mustClaim(t, b.q, 10, 2) {
		if err := b.q.Ack(ctx, it, nil); err != nil {
			t.Fatal(err)
		}
	}
	if !nackOnce(t, b.q, claimOne(t, b.q)) {
		t.Fatal("the final item survived its last attempt")
	}
	third := join("d", key, false)
	if third == second {
		t.Fatal("after the final item's death: the second's id")
	}

	// A dead child fails the join, whose final item still waits: held.
	items := mustClaim(t, b.q, 10, 2)
	if err := b.q.Ack(ctx, items[0], nil); err != nil {
		t.Fatal(err)
	}
	if !nackOnce(t, b.q, items[1]) {
		t.Fatal("the child survived its last attempt")
	}
	wantJoin(t, b.q, third, qstore.JoinFailed, 1, 2)
	if again := join("e", key, true); again != third {
		t.Fatalf("failed join: EnqueueJoin = %s, want %s (held until UniqueFor)", again, third)
	}
	wantCounts(t, b.q, qstore.Depth{Dead: 2})

	// Past UniqueFor a second join is added beside the live first.
	short := qstore.EnqueueOptions{Unique: "short", UniqueFor: 50 * time.Millisecond}
	s1 := join("s", short, false)
	untilRedisTime(t, b.rdb, redisNow(t, b.rdb).Add(short.UniqueFor+2*time.Millisecond))
	if s2 := join("t", short, false); s2 == s1 {
		t.Fatal("past UniqueFor: the first's id")
	}
	wantCounts(t, b.q, qstore.Depth{Pending: 4, Dead: 2})
}

// Concurrent EnqueueJoin calls under one key add one join, and all of
// them return its id.
func TestJoinUniqueConcurrently(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	const children = 3
	id := enqueueAtOnce(t, 20, "EnqueueJoin", func(i int) (string, bool, error) {
		return b.q.EnqueueJoin(context.Background(), qstore.JoinSpec{
			Children: payloads(fmt.Sprint(i), children), Final: []byte("f"),
			Options: qstore.EnqueueOptions{Unique: "once", UniqueFor: time.Minute, MaxAttempts: 2},
		})
	})
	wantCounts(t, b.q, qstore.Depth{Pending: children})
	wantJoin(t, b.q, id, qstore.JoinRunning, 0, children)
}

// Bad options fail the call, naming the field, and write nothing.
func TestEnqueueJoinRejectsBadOptions(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	const year = 365 * 24 * time.Hour
	for _, c := range []struct {
		name string
		opts qstore.EnqueueOptions
		says string
	}{
		{"negative delay", qstore.EnqueueOptions{Delay: -time.Nanosecond}, "Delay"},
		{"most negative delay", qstore.EnqueueOptions{Delay: math.MinInt64}, "Delay"},
		{"absurd delay", qstore.EnqueueOptions{Delay: year + time.Nanosecond}, "Delay"},
		{"negative attempts", qstore.EnqueueOptions{MaxAttempts: -1}, "MaxAttempts"},
		{"absurd attempts", qstore.EnqueueOptions{MaxAttempts: 1001}, "MaxAttempts"},
		{"unique key too long", qstore.EnqueueOptions{Unique: strings.Repeat("k", 513), UniqueFor: time.Minute}, "Unique key of 513 bytes"},
		{"unique key without a lifetime", qstore.EnqueueOptions{Unique: "k"}, "UniqueFor"},
		{"unique key absurd lifetime", qstore.EnqueueOptions{Unique: "k", UniqueFor: year + 1}, "UniqueFor"},
		{"lifetime without a key", qstore.EnqueueOptions{UniqueFor: time.Minute}, "without a Unique key"},
		{"a chain", qstore.EnqueueOptions{Chain: qstore.ChainStep{Step: 1, Steps: 2}}, "Options.Chain"},
		{"a chain with an id", qstore.EnqueueOptions{Chain: qstore.ChainStep{ID: "c", Step: 1, Steps: 1}}, "Options.Chain"},
	} {
		id, dup, err := b.q.EnqueueJoin(ctx, qstore.JoinSpec{Children: payloads("c", 2), Final: []byte("f"), Options: c.opts})
		if id != "" || dup || !errors.Is(err, qstore.ErrInvalidArgument) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: EnqueueJoin = %q, %v, %v; want ErrInvalidArgument saying %q", c.name, id, dup, err, c.says)
		}
	}
	if keys, err := b.rdb.Keys(ctx, "*").Result(); len(keys) != 0 || err != nil {
		t.Fatalf("bad options wrote %v (%v)", keys, err)
	}
	// The bounds themselves are valid.
	mustEnqueueJoin(t, b.q, qstore.JoinSpec{Children: payloads("c", 2), Final: []byte("f"), Options: qstore.EnqueueOptions{
		Delay: year, MaxAttempts: 1000, Unique: strings.Repeat("k", 512), UniqueFor: year,
	}}, false)
	wantCounts(t, b.q, qstore.Depth{Delayed: 2})
}

// A key of the wrong type, among those an option writes, fails the call
// with nothing written (each is checked before the first write).
func TestEnqueueJoinOptionsWrongKeyTypeWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	tag := tagOf(b.q)
	for _, c := range []struct {
		key  string
		opts qstore.EnqueueOptions
	}{
		{tag + ":unique:bad", qstore.EnqueueOptions{Unique: "bad", UniqueFor: time.Minute}},
		{tag + ":delayed", qstore.EnqueueOptions{Delay: time.Minute}},
		{tag + ":limits", qstore.EnqueueOptions{MaxAttempts: 2}},
	} {
		if err := b.rdb.Set(ctx, c.key, "garbage", 0).Err(); err != nil {
			t.Fatal(err)
		}
		_, _, err := b.q.EnqueueJoin(ctx, qstore.JoinSpec{ID: "j", Children: payloads("c", 2), Final: []byte("f"), Options: c.opts})
		if err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
			t.Fatalf("EnqueueJoin with %s malformed = %v, want WRONGTYPE", c.key, err)
		}
		if keys, err := b.rdb.Keys(ctx, "*").Result(); len(keys) != 1 || keys[0] != c.key || err != nil {
			t.Fatalf("a failed EnqueueJoin left %v (%v), want only %s", keys, err, c.key)
		}
		if err := b.rdb.Del(ctx, c.key).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// A join with every option enqueued again with its id adds nothing twice
// and is no duplicate of itself.
func TestEnqueueJoinWithOptionsAndAnIDIsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	opts := qstore.EnqueueOptions{Delay: time.Hour, MaxAttempts: 3, Unique: "u", UniqueFor: time.Hour}
	for range 3 {
		if id := mustEnqueueJoin(t, b.q, qstore.JoinSpec{ID: "parent-2", Children: payloads("c", 2), Final: []byte("f"), Options: opts}, false); id != "parent-2" {
			t.Fatalf("EnqueueJoin = %s, want parent-2", id)
		}
	}
	wantCounts(t, b.q, qstore.Depth{Delayed: 2})
	wantJoin(t, b.q, "parent-2", qstore.JoinRunning, 0, 2)
	if n := itemFields(t, b.rdb, tagOf(b.q)+":limits"); n != 3 {
		t.Fatalf("limits hold %d items, want 3", n)
	}
}

// A join with options is one round trip, and so is a duplicate.
func TestEnqueueJoinWithOptionsIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	b, rt := setupCounted(t, queue.Config{})
	q := b.q
	ctx := testContext(t)
	if _, _, err := q.EnqueueJoin(ctx, qstore.JoinSpec{Children: payloads("w", 1), Final: []byte("f")}); err != nil { // loads the script
		t.Fatal(err)
	}
	for _, opts := range []qstore.EnqueueOptions{
		{},
		{Delay: time.Minute},
		{MaxAttempts: 2},
		{Unique: "k", UniqueFor: time.Minute},
		{Unique: "k", UniqueFor: time.Minute}, // the duplicate
		{Delay: time.Minute, MaxAttempts: 9, Unique: "all", UniqueFor: time.Minute},
	} {
		before := rt.Load()
		if _, _, err := q.EnqueueJoin(ctx, qstore.JoinSpec{Children: payloads("c", 100), Final: []byte("f"), Options: opts}); err != nil {
			t.Fatal(err)
		}
		if n := rt.Load() - before; n != 1 {
			t.Errorf("EnqueueJoin(%+v): %d round trips, want 1", opts, n)
		}
	}
}
