package qstore_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/queue"
)

// deadCollector keeps the dead letters a store's scripts report.
type deadCollector struct {
	mu   sync.Mutex
	got  []qstore.ScriptDead
	ctxs []context.Context
}

func collectDead(q *qstore.Store) *deadCollector {
	c := &deadCollector{}
	q.OnScriptDead(func(ctx context.Context, d qstore.ScriptDead) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.got, c.ctxs = append(c.got, d), append(c.ctxs, ctx)
	})
	return c
}

func (c *deadCollector) take() []qstore.ScriptDead {
	c.mu.Lock()
	defer c.mu.Unlock()
	got := c.got
	c.got = nil
	return got
}

type ctxKey struct{}

// A lease that expires at its last attempt is dead-lettered by the next
// claim's maintenance, or by Tidy, and the call that did it reports it
// once, with the item's value, attempt, limit and cause, in its own
// context; a lease that expires before its last attempt is not reported.
// A claim that finds a pending id without a value reports it too.
func TestScriptDeadReported(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Lease: 20 * time.Millisecond, MaxAttempts: 2})
	dead := collectDead(b.q)
	ctx := context.WithValue(testContext(t), ctxKey{}, "the caller's")
	ids := make([]string, 3)
	for i := range ids {
		var err error
		if ids[i], err = b.q.Enqueue(ctx, []byte("payload-"+string(rune('a'+i)))); err != nil {
			t.Fatal(err)
		}
	}
	// Item 0: claimed twice, both leases left to expire, found by claims.
	// Item 1: its own limit of one; found by Tidy.
	if err := b.rdb.HSet(ctx, tagOf(b.q)+":limits", ids[1], 1).Err(); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, b.q, 2, 2)
	time.Sleep(60 * time.Millisecond)
	if n, err := b.q.Tidy(ctx, 10); n != 2 || err != nil {
		t.Fatalf("Tidy = %d, %v; want 2 expired leases", n, err)
	}
	got := dead.take()
	if len(got) != 1 || got[0].ID != ids[1] || got[0].Attempt != 1 || got[0].MaxAttempts != 1 ||
		!strings.HasPrefix(string(got[0].Payload), "payload-") || !got[0].LeaseExpired() ||
		got[0].Cause != "lease expired at attempt 1 of 1" {
		t.Fatalf("Tidy reported %+v, want %s at attempt 1 of 1 alone", got, ids[1])
	}
	if dead.ctxs[0].Value(ctxKey{}) != "the caller's" {
		t.Error("Tidy's report did not get the caller's context")
	}
	// Item 0 again (its second attempt), and item 2 leased for the first time.
	claimed := mustClaim(t, b.q, 2, 2)
	if !slices.ContainsFunc(claimed, func(it qstore.Item) bool { return it.ID == ids[0] && it.Attempt == 2 }) {
		t.Fatalf("claimed %+v, want %s at attempt 2", claimed, ids[0])
	}
	time.Sleep(60 * time.Millisecond)
	// A pending id without a value, found by the same claim.
	if err := b.rdb.LPush(ctx, tagOf(b.q)+":pending", "no-value").Err(); err != nil {
		t.Fatal(err)
	}
	claimed = mustClaim(t, b.q, 5, 1) // item 2, handed back
	got = dead.take()
	slices.SortFunc(got, func(a, b qstore.ScriptDead) int { return strings.Compare(a.Cause, b.Cause) })
	if len(got) != 2 || claimed[0].ID != ids[2] {
		t.Fatalf("the claim reported %+v and claimed %+v; want %s dead and the id without a value, %s claimed", got, claimed, ids[0], ids[2])
	}
	if g := got[0]; g.ID != ids[0] || g.Attempt != 2 || g.MaxAttempts != 2 || g.Cause != "lease expired at attempt 2 of 2" || !g.LeaseExpired() {
		t.Errorf("expired lease reported as %+v", g)
	}
	if g := got[1]; g.ID != "no-value" || g.Payload != nil || g.LeaseExpired() || !strings.HasPrefix(g.Cause, "malformed") {
		t.Errorf("id without a value reported as %+v", g)
	}
	if d := mustDepth(t, b.q); d.Dead != 3 {
		t.Errorf("depth %+v, want 3 dead", d)
	}
	// Nothing more to report, by an idle claim either.
	if err := b.q.Ack(ctx, claimed[0], nil); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, b.q, 5, 0)
	if got := dead.take(); len(got) != 0 {
		t.Errorf("reported again: %+v", got)
	}
}

// The idle claim's reply (nothing pending) carries the dead letters of
// its maintenance too.
func TestScriptDeadReportedByAnIdleClaim(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{Lease: 20 * time.Millisecond, MaxAttempts: 1})
	dead := collectDead(b.q)
	ctx := testContext(t)
	id, err := b.q.Enqueue(ctx, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	mustClaim(t, b.q, 1, 1)
	time.Sleep(60 * time.Millisecond)
	c, err := b.q.ClaimDetailed(ctx, 1)
	if err != nil || len(c.Items) != 0 || c.Recovered != 1 {
		t.Fatalf("ClaimDetailed = %+v, %v; want nothing claimed, 1 recovered", c, err)
	}
	if got := dead.take(); len(got) != 1 || got[0].ID != id || string(got[0].Payload) != "x" {
		t.Fatalf("reported %+v, want %s", got, id)
	}
}
