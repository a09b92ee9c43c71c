package queue

import (
	"context"
	"time"
)

// Tidy hands back up to max (at most [BatchMax]) expired leases, the
// longest expired first: to the tail of the queue, or to the dead letters
// if the item had its last attempt. It returns how many it handled; n ==
// max means more may be waiting. The last attempt is Config.MaxAttempts,
// or the item's own ([EnqueueOptions.MaxAttempts]). Every [Queue.Claim]
// does this first, up to its n: Tidy is for a queue nobody claims from
// for a while.
func (q *Queue) Tidy(ctx context.Context, max int) (n int, err error) {
	return q.st.Tidy(ctx, max)
}

// Promote moves up to max (at most [BatchMax]) delayed items whose time
// has come (retries, and items enqueued with [EnqueueOptions.Delay]) to
// the tail of the queue, the earliest due first. It returns how many it
// moved; n == max means more may be due. Every [Queue.Claim] does this
// first, up to its n: Promote is for a queue nobody claims from for a
// while.
func (q *Queue) Promote(ctx context.Context, max int) (n int, err error) {
	return q.st.Promote(ctx, max)
}

// RequeueDead moves up to max (at most [BatchMax]) dead letters, the
// oldest first, back to the tail of the queue with a fresh count of
// attempts (an item keeps its own [EnqueueOptions.MaxAttempts]). It
// returns how many it moved.
func (q *Queue) RequeueDead(ctx context.Context, max int) (n int, err error) {
	return q.st.RequeueDead(ctx, max)
}

// PurgeDead deletes up to max (at most [BatchMax]) dead letters, the
// oldest first, with their values. It returns how many it deleted.
func (q *Queue) PurgeDead(ctx context.Context, max int) (n int, err error) {
	return q.st.PurgeDead(ctx, max)
}

// DeadItem is a dead letter, as listed by [Queue.Dead].
type DeadItem struct {
	ID       string
	Attempts int       // claims it had
	Cause    string    // why it died: the last Nack's cause, or Tidy's or Claim's note
	Died     time.Time // by Redis's clock
}

// Dead lists up to max (at most [BatchMax]) dead letters, the oldest first,
// without changing them. Their payloads are still there for [Queue.Value].
func (q *Queue) Dead(ctx context.Context, max int) ([]DeadItem, error) {
	d, err := q.st.Dead(ctx, max)
	if err != nil {
		return nil, err
	}
	out := make([]DeadItem, len(d))
	for i, it := range d {
		out[i] = DeadItem(it)
	}
	return out, nil
}
