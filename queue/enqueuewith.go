package queue

import (
	"context"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
)

// EnqueueOptions are the options of [Queue.EnqueueWith]. The zero value
// enqueues as [Queue.Enqueue] does. Fields out of their bounds fail the
// call with [ErrInvalidArgument] naming the field, before any Redis call.
type EnqueueOptions struct {
	// Delay holds the item back: it is due no sooner than Delay after the
	// enqueue, by Redis's clock (rounded up to the ms), and waits among the
	// delayed items, as a retry does, until a claim (or
	// [github.com/worksteal/worksteal/jobs.PromoteDue]) finds it due and
	// makes it pending. 0 makes it pending at once. At most a year (365
	// days); negative is an error.
	Delay time.Duration
	// MaxAttempts is how many claims this item gets, in place of
	// Config.MaxAttempts: a Nack, or an expired lease found by a claim
	// or [github.com/worksteal/worksteal/jobs.TidyStale], at that attempt
	// dead-letters it. The item keeps it through an operator's retry
	// ([github.com/worksteal/worksteal/inspect.Inspector.RetryDead]). 0
	// means Config.MaxAttempts; at most 1000.
	MaxAttempts int
	// Unique makes the enqueue a no-op while another item enqueued with
	// the same key is live (pending, delayed or leased): EnqueueWith then
	// returns that item's id and duplicate true, and drops this payload.
	// The key is held until its item is acked, dead-lettered or purged,
	// or until UniqueFor has passed, whichever comes first. Keys are
	// per queue, any bytes, 1 to 512 of them; "" means no key.
	Unique string
	// UniqueFor is the longest a unique key is held, counted by Redis's
	// clock from the enqueue (rounded up to the ms): past it, an enqueue
	// with the same key adds a new item even if the first is still live.
	// Required with Unique (and an error without it); at most a year.
	UniqueFor time.Duration
	// Priority puts the item in the lane of that priority, which
	// [Queue.SetPriorities] must have given a weight: claims take from
	// each lane in proportion to its weight while it has items. The item
	// keeps its priority through retries, releases, expired leases and
	// an operator's retry. "" (or "default") is the default lane. A name
	// of 1 to 128 bytes of [A-Za-z0-9._-]; one without a weight fails
	// the call with ErrInvalidArgument, adding nothing.
	Priority string
}

// EnqueueWith adds an item with options (a delay, its own attempt limit, a
// unique key) and returns its id. With a unique key held by a live item,
// it adds nothing and returns that item's id with duplicate true. It is
// one script call, so one round trip, atomic: concurrent enqueues with
// one key, from any number of processes, add one item. On a Redis
// Cluster the key's lock lives on the queue's hash tag, beside its items.
//
// The payload is checked as by [Queue.Enqueue]; an invalid payload or
// option fails the call before anything is written.
func (q *Queue) EnqueueWith(ctx context.Context, payload []byte, opts EnqueueOptions) (id string, duplicate bool, err error) {
	return q.st.EnqueueWith(ctx, payload, qstore.EnqueueOptions{
		Delay: opts.Delay, MaxAttempts: opts.MaxAttempts, Unique: opts.Unique, UniqueFor: opts.UniqueFor,
		Priority: opts.Priority,
	})
}
