package queue_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/worksteal/worksteal/queue"
)

func TestEnqueueClaimAckInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Lease: 10 * time.Second})
	ctx := testContext(t)
	ids := mustEnqueue(t, b.q, "one", "two", "three")
	if id, err := b.q.Enqueue(ctx, []byte("four")); err != nil || len(id) != 26 {
		t.Fatalf("Enqueue = %q, %v; want a 26-byte id", id, err)
	} else {
		ids = append(ids, id)
	}
	wantCounts(t, b.q, queue.Depth{Pending: 4})
	if v, err := b.q.Value(ctx, ids[1]); string(v) != "two" || err != nil {
		t.Fatalf("Value = %q, %v; want two", v, err)
	}

	before := redisNow(t, b.rdb)
	items := mustClaim(t, b.q, 3, 3)
	after := redisNow(t, b.rdb)
	tokens := map[string]bool{}
	for i, it := range items {
		want := []string{"one", "two", "three"}[i]
		if it.ID != ids[i] || string(it.Payload) != want || it.Attempt != 1 {
			t.Fatalf("item %d = %+v, want id %s payload %s attempt 1", i, it, ids[i], want)
		}
		lo, hi := before.Add(10*time.Second-time.Millisecond), after.Add(10*time.Second+time.Millisecond)
		if it.Deadline.Before(lo) || it.Deadline.After(hi) {
			t.Fatalf("deadline %v not Redis time + lease (%v..%v)", it.Deadline, lo, hi)
		}
		if it.Token == "" {
			t.Fatalf("item %d has no token", i)
		}
		tokens[it.Token] = true
	}
	wantCounts(t, b.q, queue.Depth{Pending: 1, Leased: 3})

	s, err := b.q.Settle(ctx,
		queue.Settlement{Item: items[0], Result: []byte("r1")},
		queue.Settlement{Item: items[1]},
		queue.Settlement{Item: items[2], Err: errors.New("flaky")})
	if err != nil || s.Acked != 2 || s.Retried != 1 || s.Dead != 0 || len(s.Lost) != 0 {
		t.Fatalf("Settle = %+v, %v; want 2 acked, 1 retried", s, err)
	}
	if r, err := b.q.Result(ctx, ids[0]); string(r) != "r1" || err != nil {
		t.Fatalf("Result = %q, %v; want r1", r, err)
	}
	if r, err := b.q.Result(ctx, ids[1]); len(r) != 0 || err != nil {
		t.Fatalf("Result of an ack without result = %q, %v; want empty", r, err)
	}
	_, err = b.q.Result(ctx, ids[2])
	wantErr(t, err, queue.ErrNotFound, "Result of a retried item")
	_, err = b.q.Value(ctx, ids[0])
	wantErr(t, err, queue.ErrNotFound, "Value of an acked item")
	if v, err := b.q.Value(ctx, ids[2]); string(v) != "three" || err != nil {
		t.Fatalf("Value of a delayed item = %q, %v", v, err)
	}
	wantCounts(t, b.q, queue.Depth{Pending: 1, Delayed: 1})

	last := mustClaim(t, b.q, 10, 1)
	if last[0].ID != ids[3] || tokens[last[0].Token] {
		t.Fatalf("last claim = %+v, want %s with a new token", last[0], ids[3])
	}
	mustClaim(t, b.q, 10, 0)
}

func TestEnqueueBatchKeepsOrderAcrossScriptCalls(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	const n = 2*queue.BatchMax + 345
	payloads := make([]string, n)
	for i := range payloads {
		payloads[i] = fmt.Sprint(i)
	}
	ids := mustEnqueue(t, b.q, payloads...)
	seen := map[string]bool{}
	for start := 0; start < n; start += queue.BatchMax {
		items := mustClaim(t, b.q, queue.BatchMax, min(queue.BatchMax, n-start))
		for i, it := range items {
			if it.ID != ids[start+i] || string(it.Payload) != payloads[start+i] || seen[it.ID] {
				t.Fatalf("claim %d = %s %q, want %s %q", start+i, it.ID, it.Payload, ids[start+i], payloads[start+i])
			}
			seen[it.ID] = true
		}
	}
}

func TestPayloadLimits(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{MaxPayload: 8})
	ctx := testContext(t)
	_, err := b.q.Enqueue(ctx, nil)
	wantErr(t, err, queue.ErrEmptyPayload, "Enqueue(nil)")
	_, err = b.q.Enqueue(ctx, []byte{})
	wantErr(t, err, queue.ErrEmptyPayload, "Enqueue(empty)")
	_, err = b.q.Enqueue(ctx, []byte("123456789"))
	wantErr(t, err, queue.ErrPayloadTooLarge, "Enqueue(9 bytes)")
	if err == nil || !strings.Contains(err.Error(), "9 bytes is above MaxPayload 8") {
		t.Fatalf("error %q does not say why", err)
	}
	ids, err := b.q.EnqueueBatch(ctx, [][]byte{[]byte("ok"), []byte("much too long"), []byte("ok")})
	wantErr(t, err, queue.ErrPayloadTooLarge, "EnqueueBatch with one oversized payload")
	if ids != nil {
		t.Fatalf("EnqueueBatch returned ids %v for a rejected batch", ids)
	}
	wantCounts(t, b.q, queue.Depth{}) // nothing of the batch was written

	id, err := b.q.Enqueue(ctx, []byte("12345678"))
	if err != nil {
		t.Fatalf("Enqueue at exactly MaxPayload: %v", err)
	}
	mustEnqueue(t, b.q, "second")
	items := mustClaim(t, b.q, 2, 2)
	err = b.q.Ack(ctx, items[0], bytes.Repeat([]byte("x"), 9))
	wantErr(t, err, queue.ErrPayloadTooLarge, "Ack with an oversized result")
	wantCounts(t, b.q, queue.Depth{Leased: 2}) // the refused Ack changed nothing
	if err := b.q.Ack(ctx, items[0], []byte("fits")); err != nil {
		t.Fatalf("Ack after the refused one: %v", err)
	}
	// In a batch, an oversized result becomes a nack with the reason.
	s, err := b.q.Settle(ctx, queue.Settlement{Item: items[1], Result: bytes.Repeat([]byte("x"), 9)})
	if err != nil || s.Retried != 1 || s.Acked != 0 {
		t.Fatalf("Settle with an oversized result = %+v, %v; want it retried", s, err)
	}
	cause, err := b.rdb.HGet(ctx, tagOf(b.q)+":causes", items[1].ID).Result()
	if err != nil || !strings.Contains(cause, "payload too large: result of 9 bytes") {
		t.Fatalf("cause = %q, %v", cause, err)
	}
	if r, err := b.q.Result(ctx, id); string(r) != "fits" || err != nil {
		t.Fatalf("Result = %q, %v", r, err)
	}
}

func TestDepthCountsAndOldestPending(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Lease: time.Millisecond, MaxAttempts: 1, BackoffBase: time.Hour, BackoffMax: time.Hour})
	ctx := testContext(t)
	if s := mustDepth(t, b.q); s != (queue.Depth{}) {
		t.Fatalf("empty queue: %+v", s)
	}
	mustEnqueue(t, b.q, "a", "b", "c", "d", "e")
	start := redisNow(t, b.rdb)
	untilRedisTime(t, b.rdb, start.Add(30*time.Millisecond))
	items := mustClaim(t, b.q, 2, 2)
	untilRedisTime(t, b.rdb, items[0].Deadline.Add(time.Millisecond))
	s := mustDepth(t, b.q)
	// The next in line ("c") was enqueued before start; it waited at least 30ms.
	if s.OldestPending < 30*time.Millisecond || s.OldestPending > 10*time.Second {
		t.Fatalf("OldestPending = %v, want about the 30ms+ it waited", s.OldestPending)
	}
	s.OldestPending = 0
	if want := (queue.Depth{Pending: 3, Leased: 2, Expired: 2}); s != want {
		t.Fatalf("Depth = %+v, want %+v", s, want)
	}
	b2 := newQueue(t, b.rdb, "other", queue.Config{BackoffBase: time.Millisecond, BackoffMax: time.Millisecond, MaxAttempts: 2})
	mustEnqueue(t, b2, "x", "y")
	two := mustClaim(t, b2, 2, 2)
	if _, err := b2.Settle(ctx, queue.Settlement{Item: two[0], Err: errors.New("no")}, queue.Settlement{Item: two[1], Err: errors.New("no")}); err != nil {
		t.Fatal(err)
	}
	untilRedisTime(t, b.rdb, redisNow(t, b.rdb).Add(2*time.Millisecond))
	wantCounts(t, b2, queue.Depth{Delayed: 2, Due: 2})
	if err := b.q.Nack(ctx, items[0], errors.New("x")); err != nil { // MaxAttempts 1: dead
		t.Fatal(err)
	}
	wantCounts(t, b.q, queue.Depth{Pending: 3, Leased: 1, Expired: 1, Dead: 1})
}

// Every script takes a full batch: Lua's unpack and Redis's argument lists
// have room for BatchMax items.
func TestFullBatches(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	payloads := make([]string, queue.BatchMax)
	for i := range payloads {
		payloads[i] = "p" + fmt.Sprint(i)
	}
	mustEnqueue(t, b.q, payloads...)
	items := mustClaim(t, b.q, queue.BatchMax, queue.BatchMax)
	if n, err := b.q.Release(ctx, items...); n != queue.BatchMax || err != nil {
		t.Fatalf("Release = %d, %v", n, err)
	}
	items = mustClaim(t, b.q, queue.BatchMax, queue.BatchMax)
	outcomes := make([]queue.Settlement, len(items))
	for i, it := range items {
		if it.Attempt != 1 || string(it.Payload) != payloads[i] {
			t.Fatalf("item %d = %+v", i, it)
		}
		outcomes[i] = queue.Settlement{Item: it, Result: []byte("a:b:" + payloads[i])}
	}
	if s, err := b.q.Settle(ctx, outcomes...); s.Acked != queue.BatchMax || err != nil {
		t.Fatalf("Settle = %+v, %v", s, err)
	}
	// Results may hold the separator of the stored "token:result".
	if r, err := b.q.Result(ctx, items[7].ID); string(r) != "a:b:p7" || err != nil {
		t.Fatalf("Result = %q, %v", r, err)
	}
	if r, err := b.q.Wait(ctx, items[8].ID); string(r) != "a:b:p8" || err != nil {
		t.Fatalf("Wait = %q, %v", r, err)
	}
	wantCounts(t, b.q, queue.Depth{})
}

// Two outcomes for one claim in one call: the first counts, the second is
// refused, so an item cannot be both acked and delayed.
func TestSettleTwiceInOneCall(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	mustEnqueue(t, b.q, "x")
	it := mustClaim(t, b.q, 1, 1)[0]
	s, err := b.q.Settle(ctx, queue.Settlement{Item: it, Result: []byte("r")}, queue.Settlement{Item: it, Err: errors.New("no")})
	if err != nil || s.Acked != 1 || s.Retried != 0 || len(s.Lost) != 1 {
		t.Fatalf("Settle = %+v, %v; want 1 acked, 1 lost", s, err)
	}
	wantCounts(t, b.q, queue.Depth{})
}
