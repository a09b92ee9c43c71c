package queue

import (
	"context"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
)

// Item is a claimed item. Its Token names this one claim: Ack, Nack,
// Extend and Release act only while the token is still the item's current
// one, so a worker whose lease expired and was re-claimed changes nothing.
type Item struct {
	ID      string
	Payload []byte
	// Attempt counts the claims of this item so far, 1 on the first;
	// claims handed back with Release do not count.
	Attempt int
	// MaxAttempts is the item's limit: its own ([EnqueueOptions.MaxAttempts])
	// or else the queue's Config.MaxAttempts. A nack at Attempt >=
	// MaxAttempts dead-letters the item.
	MaxAttempts int
	// Deadline is when the lease ends, by Redis's clock.
	Deadline time.Time
	// Token identifies the claim: no two claims of one item share a token.
	// It is opaque ("attempt-number" today), never empty.
	Token string
	// Priority is the lane the item was claimed from: [DefaultPriority]
	// unless it was enqueued with another ([EnqueueOptions].Priority).
	Priority string
	// Trace is the trace context of the enqueue that made the item (a W3C
	// traceparent), which package tasks stores so that a task's run links
	// to its enqueue; "" when it has none. A fan-out's final item's is
	// followed by its children's runs' contexts, each after a space (after
	// a space even when the item has no context of its own).
	Trace string
}

// EnqueuedAt is when the item was enqueued, by the clock of the process
// that enqueued it, read from its id (no Redis call); retries keep it.
// Zero for an id that this package did not make.
func (it Item) EnqueuedAt() time.Time {
	t, _ := qstore.IDTime(it.ID)
	return t
}

// items converts the storage's items (the same fields) to Items.
func items(from []qstore.Item) []Item {
	out := make([]Item, len(from))
	for i, it := range from {
		out[i] = Item(it)
	}
	return out
}

// Claim leases up to n (at most [BatchMax]) items from the head of the
// queue, in one atomic step: each moves from pending into the leases with
// the deadline Redis time + Config.Lease, the time rounded up to the ms so
// that the lease never ends before the caller's clock, counting from when
// it called Claim, says it does. It returns fewer items, or none, when
// fewer are pending.
//
// Claim maintains the queue first, in the same step, so that whoever
// claims a queue keeps it moving: it moves up to n delayed items that are
// due (retries, delayed enqueues) to the tail of the queue, as
// [github.com/worksteal/worksteal/jobs.PromoteDue] does, and hands back
// up to n expired leases (crashed or stuck workers), to the tail of the
// queue or, at their last attempt, to the dead letters, as
// [github.com/worksteal/worksteal/jobs.TidyStale] does; what they bring
// back can be claimed by this same call. [Queue.ClaimDetailed] says how much they
// brought back and whether more may be waiting.
//
// Malformed entries met on the way do not fail the claim: an id without a
// stored value is dead-lettered with that cause, and an id that is also
// leased, delayed or dead (a duplicate) is dropped from pending, since the
// item lives on elsewhere. One Claim looks at 2n entries at most.
func (q *Queue) Claim(ctx context.Context, n int) ([]Item, error) {
	c, err := q.ClaimDetailed(ctx, n)
	return c.Items, err
}

// Claimed is what one [Queue.ClaimDetailed] did.
type Claimed struct {
	// Items are the items leased, in queue order; empty, not nil, when
	// none was pending.
	Items []Item
	// Promoted counts the delayed items that were due and went back to
	// the queue, before the claim.
	Promoted int
	// Recovered counts the expired leases handed back, before the claim:
	// to the queue, or to the dead letters at their last attempt.
	Recovered int
	// More says that Promoted or Recovered reached the claim's n, the
	// bound of each: more may be due or expired, for the next claim; or
	// that the claim dropped canceled items' ids ([Queue.Cancel]) and
	// leased fewer than n: more may be pending behind them.
	More bool
}

// ClaimDetailed is [Queue.Claim], which it does in the same one script
// call, and reports the maintenance done before the claim too: a worker
// that claims in a loop claims again soon while More is true, even if
// this call's Items were few.
func (q *Queue) ClaimDetailed(ctx context.Context, n int) (Claimed, error) {
	c, err := q.st.ClaimDetailed(ctx, n)
	if err != nil {
		return Claimed{}, err
	}
	return Claimed{Items: items(c.Items), Promoted: c.Promoted, Recovered: c.Recovered, More: c.More}, nil
}

// Extend moves the lease of a claimed item to Redis time + d, for work
// that takes longer than Config.Lease, and returns the new deadline. It
// returns ErrLeaseLost if the claim is no longer current.
func (q *Queue) Extend(ctx context.Context, it Item, d time.Duration) (time.Time, error) {
	return q.st.Extend(ctx, qstore.Item(it), d)
}

// Release hands claimed items back at once, to the head of the queue,
// without counting the attempt: for items a worker claimed but could not
// start (its time ran out). Items whose claim is no longer current are
// skipped; it returns how many were released.
func (q *Queue) Release(ctx context.Context, items ...Item) (int, error) {
	st := make([]qstore.Item, len(items))
	for i, it := range items {
		st[i] = qstore.Item(it)
	}
	return q.st.Release(ctx, st...)
}
