package queue_test

import (
	"strings"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
)

// A pending id without a value does not break Claim: it is dead-lettered
// with the reason and the claim goes on to the next.
func TestClaimDeadLettersIdsWithoutValue(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	tag := tagOf(b.q)
	ids := mustEnqueue(t, b.q, "a", "b", "c")
	if err := b.rdb.HDel(ctx, tag+":values", ids[1]).Err(); err != nil {
		t.Fatal(err)
	}
	if err := b.rdb.LPush(ctx, tag+":pending", "ghost").Err(); err != nil { // after c
		t.Fatal(err)
	}
	items := mustClaim(t, b.q, 3, 2)
	if items[0].ID != ids[0] || items[1].ID != ids[2] || string(items[1].Payload) != "c" {
		t.Fatalf("claimed %+v, want a and c", items)
	}
	mustClaim(t, b.q, 3, 0) // the ghost
	wantCounts(t, b.q, queue.Depth{Leased: 2, Dead: 2})
	dead, err := testrig.DeadLetters(ctx, b.q, 10)
	if err != nil || len(dead) != 2 {
		t.Fatalf("Dead = %+v, %v", dead, err)
	}
	got := map[string]string{}
	for _, d := range dead {
		got[d.ID] = d.Cause
	}
	for _, id := range []string{ids[1], "ghost"} {
		if !strings.Contains(got[id], "no stored value") {
			t.Fatalf("dead letter %s has cause %q, want the reason", id, got[id])
		}
	}
	_, err = b.q.Wait(ctx, "ghost")
	wantErr(t, err, queue.ErrDead, "Wait on a malformed id")
}

// One Claim looks at no more than 2n entries, however many are bad.
func TestClaimIsBoundedWhenEverythingIsMalformed(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	tag := tagOf(b.q)
	// Claim pops from the right: five ghosts first, then a real item.
	if err := b.rdb.RPush(ctx, tag+":pending", "g1", "g2", "g3", "g4", "g5").Err(); err != nil {
		t.Fatal(err)
	}
	id := mustEnqueue(t, b.q, "real")[0]
	mustClaim(t, b.q, 2, 0)
	wantCounts(t, b.q, queue.Depth{Pending: 2, Dead: 4})
	items := mustClaim(t, b.q, 2, 1)
	if items[0].ID != id {
		t.Fatalf("claimed %s, want the real item %s", items[0].ID, id)
	}
}

// An id found in pending while it is leased, delayed or dead elsewhere
// (pushed twice) is dropped: the item lives on where it is.
func TestClaimDropsDuplicates(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{})
	ctx := testContext(t)
	tag := tagOf(b.q)
	ids := mustEnqueue(t, b.q, "a", "b")
	first := mustClaim(t, b.q, 1, 1)[0]
	// a again behind b, and b twice in a row.
	if err := b.rdb.LPush(ctx, tag+":pending", ids[0], ids[1]).Err(); err != nil {
		t.Fatal(err)
	}
	items := mustClaim(t, b.q, 10, 1)
	if items[0].ID != ids[1] {
		t.Fatalf("claimed %+v, want b once", items)
	}
	wantCounts(t, b.q, queue.Depth{Leased: 2})
	if err := b.q.Ack(ctx, first, nil); err != nil {
		t.Fatalf("Ack of the first claim after its duplicate was dropped: %v", err)
	}
}

// A queue key of the wrong type fails the script before any item leaves its
// place (Redis does not roll back a failed script): nothing is lost.
func TestWrongKeyTypeFailsBeforeAnyWrite(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Lease: time.Millisecond})
	ctx := testContext(t)
	tag := tagOf(b.q)
	ids := mustEnqueue(t, b.q, "a", "b")
	if err := b.rdb.Set(ctx, tag+":attempts", "garbage", 0).Err(); err != nil {
		t.Fatal(err)
	}
	_, err := b.q.Claim(ctx, 2)
	if err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("Claim = %v, want a WRONGTYPE error", err)
	}
	if n, err := b.rdb.LLen(ctx, tag+":pending").Result(); n != 2 || err != nil {
		t.Fatalf("pending has %d ids (%v) after the failed claim, want 2", n, err)
	}
	// A garbage attempt count or claim counter is survived too.
	if err := b.rdb.Del(ctx, tag+":attempts").Err(); err != nil {
		t.Fatal(err)
	}
	if err := b.rdb.HSet(ctx, tag+":attempts", ids[0], "x").Err(); err != nil {
		t.Fatal(err)
	}
	// Claimed for an hour (a second handle on the queue): with the test's
	// 1ms lease, the failing claim below could hand it back before it
	// fails (Claim tidies first), and the pending count would depend on
	// the machine's speed.
	patient := newQueue(t, b.rdb, b.q.Name(), queue.Config{Prefix: b.q.Config().Prefix, Lease: time.Hour})
	items := mustClaim(t, patient, 1, 1)
	if items[0].Attempt != 1 {
		t.Fatalf("attempt %d after a garbage count, want 1", items[0].Attempt)
	}
	if err := b.rdb.Set(ctx, tag+":seq", "not a number", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.q.Claim(ctx, 1); err == nil {
		t.Fatal("Claim with a garbage counter succeeded")
	}
	if n, err := b.rdb.LLen(ctx, tag+":pending").Result(); n != 1 || err != nil {
		t.Fatalf("pending has %d ids (%v) after the failed claim, want 1", n, err)
	}
	// Tidy, Claim and Settle add an item to its new place before taking
	// it from the old: with pending broken, the expired lease stays a
	// lease.
	if err := b.rdb.Del(ctx, tag+":seq").Err(); err != nil {
		t.Fatal(err)
	}
	deadline, err := b.q.Extend(ctx, items[0], time.Millisecond)
	if err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if err := b.rdb.Rename(ctx, tag+":pending", tag+":pending-saved").Err(); err != nil {
		t.Fatal(err)
	}
	if err := b.rdb.Set(ctx, tag+":pending", "garbage", 0).Err(); err != nil {
		t.Fatal(err)
	}
	untilRedisTime(t, b.rdb, deadline.Add(time.Millisecond))
	if _, err := qstore.Of(b.q).Tidy(ctx, 10); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("Tidy = %v, want a WRONGTYPE error", err)
	}
	if _, err := b.q.Claim(ctx, 10); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("Claim = %v, want a WRONGTYPE error", err)
	}
	if n, err := b.rdb.ZCount(ctx, tag+":leases", "-inf", "(+inf").Result(); n != 1 || err != nil {
		t.Fatalf("%d leases (%v) after the failed Tidy, want 1", n, err)
	}
	if err := b.rdb.Rename(ctx, tag+":pending-saved", tag+":pending").Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := qstore.Of(b.q).Tidy(ctx, 10); n != 1 || err != nil {
		t.Fatalf("Tidy after the repair = %d, %v", n, err)
	}
	wantCounts(t, b.q, queue.Depth{Pending: 2})
}
