package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

// The example service (make run) runs the queue on an embedded miniredis,
// whose Lua is gopher-lua: every script must work there too. Its clock is
// set by hand, so leases, delays and retention pass without waiting.
//
// It moved here from the queue package with the example's module, the one
// that requires miniredis; it uses the queue's public API and its
// documented key layout only.
func TestQueueScriptsRunOnMiniredis(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	now := time.UnixMilli(1_800_000_000_000)
	m.SetTime(now)
	advance := func(d time.Duration) { now = now.Add(d); m.SetTime(now) }
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	newQueue := func(name string, cfg queue.Config) *queue.Queue {
		t.Helper()
		cfg.Prefix = "mini"
		q, err := queue.New(rdb, name, cfg)
		if err != nil {
			t.Fatalf("queue.New(%q): %v", name, err)
		}
		return q
	}
	mustEnqueue := func(q *queue.Queue, payloads ...string) []string {
		t.Helper()
		bs := make([][]byte, len(payloads))
		for i, p := range payloads {
			bs[i] = []byte(p)
		}
		ids, err := q.EnqueueBatch(ctx, bs)
		if err != nil || len(ids) != len(payloads) {
			t.Fatalf("EnqueueBatch = %v, %v; want %d ids", ids, err, len(payloads))
		}
		return ids
	}
	mustClaim := func(q *queue.Queue, n, want int) []queue.Item {
		t.Helper()
		items, err := q.Claim(ctx, n)
		if err != nil || len(items) != want {
			t.Fatalf("Claim(%d) = %+v, %v; want %d items", n, items, err, want)
		}
		return items
	}
	wantCounts := func(q *queue.Queue, want queue.Depth) {
		t.Helper()
		got, err := q.Depth(ctx)
		if err != nil {
			t.Fatalf("Depth: %v", err)
		}
		got.OldestPending, want.OldestPending = 0, 0
		if got != want {
			t.Fatalf("Depth = %+v, want %+v", got, want)
		}
	}
	type waitResult struct {
		result []byte
		err    error
	}
	goWait := func(q *queue.Queue, id string) <-chan waitResult {
		ch := make(chan waitResult, 1)
		go func() {
			r, err := q.Wait(ctx, id)
			ch <- waitResult{r, err}
		}()
		return ch
	}
	receive := func(ch <-chan waitResult) waitResult {
		t.Helper()
		select {
		case r := <-ch:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("Wait did not return")
			return waitResult{}
		}
	}
	// The hash tag of a queue's keys, as the queue's package doc gives it.
	tagOf := func(q *queue.Queue) string { return "{" + q.Config().Prefix + ":q:" + q.Name() + "}" }
	// itemFields counts the fields of a queue hash that belong to items:
	// all but the field "" that keeps the hash in hashtable encoding.
	itemFields := func(key string) int {
		t.Helper()
		n, err := rdb.HLen(ctx, key).Result()
		if err != nil {
			t.Fatalf("HLEN %s: %v", key, err)
		}
		if pinned, err := rdb.HExists(ctx, key, "").Result(); err != nil {
			t.Fatalf("HEXISTS %s: %v", key, err)
		} else if pinned {
			n--
		}
		return int(n)
	}

	// BackoffMax bounds the retry delay (1s), whatever its jitter.
	q := newQueue("mini", queue.Config{
		Lease: time.Second, MaxAttempts: 2, BackoffBase: time.Second, BackoffMax: time.Second,
		ResultRetention: time.Minute,
	})

	ids := mustEnqueue(q, "zero", "one", "two")
	wantCounts(q, queue.Depth{Pending: 3})
	waited := goWait(q, ids[0])
	items := mustClaim(q, 3, 3)
	for i, it := range items {
		if it.ID != ids[i] || string(it.Payload) != []string{"zero", "one", "two"}[i] || it.Attempt != 1 ||
			!it.Deadline.Equal(now.Add(time.Second)) {
			t.Fatalf("item %d = %+v", i, it)
		}
	}
	wantCounts(q, queue.Depth{Leased: 3})

	// Ack wakes the waiter; Nack delays; an expired lease is tidied.
	if err := q.Ack(ctx, items[0], []byte("r0")); err != nil {
		t.Fatal(err)
	}
	if r := receive(waited); string(r.result) != "r0" || r.err != nil {
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
	wantCounts(q, queue.Depth{Leased: 1, Delayed: 1})
	advance(1500 * time.Millisecond) // past the lease and the backoff, at most BackoffMax
	wantCounts(q, queue.Depth{Leased: 1, Expired: 1, Delayed: 1, Due: 1})
	if n, err := qstore.Of(q).Promote(ctx, 10); n != 1 || err != nil {
		t.Fatalf("Promote = %d, %v; want 1", n, err)
	}
	if n, err := qstore.Of(q).Tidy(ctx, 10); n != 1 || err != nil {
		t.Fatalf("Tidy = %d, %v; want 1", n, err)
	}
	if err := q.Ack(ctx, items[2], nil); !errors.Is(err, queue.ErrLeaseLost) {
		t.Fatalf("stale Ack = %v, want ErrLeaseLost", err)
	}
	wantCounts(q, queue.Depth{Pending: 2})

	// Second attempts: extend and release one, nack the other to the dead
	// letters.
	again := mustClaim(q, 2, 2)
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
	waitedDead := goWait(q, ids[1])
	if err := q.Nack(ctx, one, errors.New("boom again")); err != nil {
		t.Fatal(err)
	}
	if r := receive(waitedDead); !errors.Is(r.err, queue.ErrDead) {
		t.Fatalf("Wait on a dead item = %q, %v; want ErrDead", r.result, r.err)
	}
	dead, err := testrig.DeadLetters(ctx, q, 10)
	if err != nil || len(dead) != 1 || dead[0].ID != ids[1] || dead[0].Cause != "boom again" || dead[0].Attempts != 2 {
		t.Fatalf("Dead = %+v, %v", dead, err)
	}
	if n, err := qstore.Of(q).RequeueDead(ctx, 10); n != 1 || err != nil {
		t.Fatalf("RequeueDead = %d, %v", n, err)
	}
	wantCounts(q, queue.Depth{Pending: 2})
	once := newQueue("mini-once", queue.Config{MaxAttempts: 1})
	doomed := mustEnqueue(once, "doomed")[0]
	if err := once.Nack(ctx, mustClaim(once, 1, 1)[0], nil); err != nil {
		t.Fatal(err)
	}
	if n, err := qstore.Of(once).PurgeDead(ctx, 10); n != 1 || err != nil {
		t.Fatalf("PurgeDead = %d, %v", n, err)
	}
	if _, err := once.Value(ctx, doomed); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("Value of a purged item: %v, want ErrNotFound", err)
	}
	last := mustClaim(q, 2, 2)
	if s, err := q.Settle(ctx, queue.Settlement{Item: last[0], Result: []byte("a")}, queue.Settlement{Item: last[1], Result: []byte("b")}); err != nil || s.Acked != 2 {
		t.Fatalf("Settle = %+v, %v", s, err)
	}
	wantCounts(q, queue.Depth{})

	// Past the retention the results are gone, and Tidy drops them.
	advance(time.Minute)
	if _, err := q.Result(ctx, ids[0]); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("Result past the retention: %v, want ErrNotFound", err)
	}
	if _, err := qstore.Of(q).Tidy(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.LLen(ctx, tagOf(q)+":expiring").Result(); n != 0 || err != nil {
		t.Fatalf("expiring has %d entries (%v) after Tidy, want none", n, err)
	}
	if n := itemFields(tagOf(q) + ":results"); n != 0 {
		t.Fatalf("%d results after Tidy, want none", n)
	}
}

// Priorities and task types' limits on miniredis: the claim's draw and
// its setting aside run in gopher-lua too.
func TestLimitsAndPrioritiesRunOnMiniredis(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	q, err := queue.New(rdb, "mini-limits", queue.Config{Prefix: "mini"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := tasks.NewClient(q)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.SetPriorities(ctx, map[string]int{"high": 2}); err != nil {
		t.Fatal(err)
	}
	slow, fast := tasks.Define[int, struct{}]("slow"), tasks.Define[int, struct{}]("fast")
	if err := slow.SetLimit(ctx, c, tasks.Limit{Running: 1}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := slow.Enqueue(ctx, c, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := fast.Enqueue(ctx, c, 1, tasks.Priority("high")); err != nil {
			t.Fatal(err)
		}
	}
	items, err := q.Claim(ctx, 10)
	if err != nil || len(items) != 3 {
		t.Fatalf("Claim = %d items, %v; want 2 fast ones and 1 slow one", len(items), err)
	}
	d, err := q.Depth(ctx)
	if err != nil || d.Pending != 1 || d.Parked != 1 || d.Leased != 3 {
		t.Fatalf("Depth = %+v, %v; want the second slow task set aside", d, err)
	}
	if err := q.Ack(ctx, items[0], nil); err != nil {
		t.Fatal(err)
	}
	for _, it := range items[1:] {
		if err := q.Ack(ctx, it, nil); err != nil {
			t.Fatal(err)
		}
	}
	if items, err := q.Claim(ctx, 10); err != nil || len(items) != 1 {
		t.Fatalf("Claim after the acks = %d items, %v; want the slow one set aside", len(items), err)
	}
}
