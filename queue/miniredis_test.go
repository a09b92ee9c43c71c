package queue_test

import (
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/queue"
)

// The example service (make run) runs the queue on an embedded miniredis,
// whose Lua is gopher-lua: every script must work there too. Its clock is
// set by hand, so leases, delays and retention pass without waiting.
func TestScriptsRunOnMiniredis(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	now := time.UnixMilli(1_800_000_000_000)
	m.SetTime(now)
	advance := func(d time.Duration) { now = now.Add(d); m.SetTime(now) }
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	q := newQueue(t, rdb, "mini", withJitter(queue.Config{
		Lease: time.Second, MaxAttempts: 2, BackoffBase: time.Second, BackoffMax: time.Second,
		ResultRetention: time.Minute,
	}, func() float64 { return 0 }))
	ctx := testContext(t)

	ids := mustEnqueue(t, q, "zero", "one", "two")
	wantCounts(t, q, queue.Stats{Pending: 3})
	waited := goWait(ctx, q, ids[0])
	items := mustClaim(t, q, 3, 3)
	for i, it := range items {
		if it.ID != ids[i] || string(it.Payload) != []string{"zero", "one", "two"}[i] || it.Attempt != 1 ||
			!it.Deadline.Equal(now.Add(time.Second)) {
			t.Fatalf("item %d = %+v", i, it)
		}
	}
	wantCounts(t, q, queue.Stats{Leased: 3})

	// Ack wakes the waiter; Nack delays; an expired lease is tidied.
	if err := q.Ack(ctx, items[0], []byte("r0")); err != nil {
		t.Fatal(err)
	}
	if r := receive(t, waited); string(r.result) != "r0" || r.err != nil {
		t.Fatalf("Wait = %q, %v; want r0", r.result, r.err)
	}
	if r, err := q.Result(ctx, ids[0]); string(r) != "r0" || err != nil {
		t.Fatalf("Result = %q, %v; want r0", r, err)
	}
	if err := q.Ack(ctx, items[0], []byte("r0")); err != nil {
		t.Fatalf("resent Ack: %v", err)
	}
	if err := q.Nack(ctx, items[1], errors.New("boom")); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, q, queue.Stats{Leased: 1, Delayed: 1})
	advance(1500 * time.Millisecond) // past the lease and the 0.5s backoff
	wantCounts(t, q, queue.Stats{Leased: 1, Expired: 1, Delayed: 1, Due: 1})
	if n, err := q.Promote(ctx, 10); n != 1 || err != nil {
		t.Fatalf("Promote = %d, %v; want 1", n, err)
	}
	if n, err := q.Tidy(ctx, 10); n != 1 || err != nil {
		t.Fatalf("Tidy = %d, %v; want 1", n, err)
	}
	if err := q.Ack(ctx, items[2], nil); !errors.Is(err, queue.ErrLeaseLost) {
		t.Fatalf("stale Ack = %v, want ErrLeaseLost", err)
	}
	wantCounts(t, q, queue.Stats{Pending: 2})

	// Second attempts: extend and release one, nack the other to the dead
	// letters.
	again := mustClaim(t, q, 2, 2)
	byID := map[string]queue.Item{again[0].ID: again[0], again[1].ID: again[1]}
	one, two := byID[ids[1]], byID[ids[2]]
	if one.Attempt != 2 || two.Attempt != 2 || two.Token == items[2].Token {
		t.Fatalf("second claims %+v, want attempt 2 and new tokens", again)
	}
	if d, err := q.Extend(ctx, two, time.Minute); err != nil || !d.Equal(now.Add(time.Minute)) {
		t.Fatalf("Extend = %v, %v", d, err)
	}
	if n, err := q.Release(ctx, two); n != 1 || err != nil {
		t.Fatalf("Release = %d, %v", n, err)
	}
	waitedDead := goWait(ctx, q, ids[1])
	if err := q.Nack(ctx, one, errors.New("boom again")); err != nil {
		t.Fatal(err)
	}
	if r := receive(t, waitedDead); !errors.Is(r.err, queue.ErrDead) {
		t.Fatalf("Wait on a dead item = %q, %v; want ErrDead", r.result, r.err)
	}
	dead, err := q.Dead(ctx, 10)
	if err != nil || len(dead) != 1 || dead[0].ID != ids[1] || dead[0].Cause != "boom again" || dead[0].Attempts != 2 {
		t.Fatalf("Dead = %+v, %v", dead, err)
	}
	if n, err := q.RequeueDead(ctx, 10); n != 1 || err != nil {
		t.Fatalf("RequeueDead = %d, %v", n, err)
	}
	wantCounts(t, q, queue.Stats{Pending: 2})
	once := newQueue(t, rdb, "mini-once", queue.Config{MaxAttempts: 1})
	doomed := mustEnqueue(t, once, "doomed")[0]
	if err := once.Nack(ctx, mustClaim(t, once, 1, 1)[0], nil); err != nil {
		t.Fatal(err)
	}
	if n, err := once.PurgeDead(ctx, 10); n != 1 || err != nil {
		t.Fatalf("PurgeDead = %d, %v", n, err)
	}
	if _, err := once.Value(ctx, doomed); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("Value of a purged item: %v, want ErrNotFound", err)
	}
	last := mustClaim(t, q, 2, 2)
	if s, err := q.Settle(ctx, queue.Settlement{Item: last[0], Result: []byte("a")}, queue.Settlement{Item: last[1], Result: []byte("b")}); err != nil || s.Acked != 2 {
		t.Fatalf("Settle = %+v, %v", s, err)
	}
	wantCounts(t, q, queue.Stats{})

	// Past the retention the results are gone, and Tidy drops them.
	advance(time.Minute)
	if _, err := q.Result(ctx, ids[0]); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("Result past the retention: %v, want ErrNotFound", err)
	}
	if _, err := q.Tidy(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.LLen(ctx, tagOf(q)+":expiring").Result(); n != 0 || err != nil {
		t.Fatalf("expiring has %d entries (%v) after Tidy, want none", n, err)
	}
	if n := itemFields(t, rdb, tagOf(q)+":results"); n != 0 {
		t.Fatalf("%d results after Tidy, want none", n)
	}
}
