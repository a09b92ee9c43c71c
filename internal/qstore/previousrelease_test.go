package qstore_test

import (
	"errors"
	"testing"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/queue"
)

// The previous release's by-id retry and run-now pushed an item of a
// priority to the default lane, its lanes field kept. While a deploy
// rolls, this release reads such an item as before: claimed once from
// where it is, back to its own lane on a retry, forgotten by the lanes
// hash on its ack.
func TestItemLeftInTheDefaultLaneByThePreviousRelease(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{BackoffBase: 1, BackoffMax: 1})
	ctx := testContext(t)
	if err := b.q.SetPriorities(ctx, map[string]int{"critical": 100}); err != nil {
		t.Fatal(err)
	}
	id := mustEnqueueWith(t, b.q, "c", qstore.EnqueueOptions{Priority: "critical"}, false)
	tag := tagOf(b.q)
	// What the previous release's admin_requeue.lua and admin_promote.lua
	// left: the id in pending, its priority still in the lanes hash.
	if err := b.rdb.LMove(ctx, tag+":pending:critical", tag+":pending", "RIGHT", "LEFT").Err(); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, b.q, qstore.Depth{Pending: 1})
	it := mustClaim(t, b.q, 10, 1)[0]
	if it.ID != id {
		t.Fatalf("claimed %s, want %s", it.ID, id)
	}
	if err := b.q.Nack(ctx, it, errors.New("again")); err != nil {
		t.Fatal(err)
	}
	promoteDue(t, b, id)
	if n, err := b.rdb.LLen(ctx, tag+":pending:critical").Result(); n != 1 || err != nil {
		t.Fatalf("critical lane holds %d (%v) after the retry, want 1", n, err)
	}
	it = mustClaim(t, b.q, 10, 1)[0]
	if err := b.q.Ack(ctx, it, nil); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, b.q, qstore.Depth{})
	if n := itemFields(t, b.rdb, tag+":lanes"); n != 0 {
		t.Fatalf("lanes holds %d items after the ack, want 0", n)
	}
}
