package queue

import (
	"context"

	"github.com/worksteal/worksteal/internal/qstore"
)

// Settlement is what became of one claimed item, for [Queue.Settle].
type Settlement struct {
	Item Item
	// Result is stored by an ack (Err nil); nil stores an empty result.
	Result []byte
	// Err, when not nil, makes the settlement a nack; its text is the cause.
	Err error
}

// SettleResult counts what a [Queue.Settle] did.
type SettleResult struct {
	Acked   int // results stored
	Retried int // nacked, delayed for a retry (or snoozed)
	Dead    int // nacked at the last attempt, dead-lettered
	// Canceled counts the items canceled while their claim ran
	// ([Queue.Cancel]): their outcome is dropped, as they had ended.
	Canceled int
	// Lost lists the ids whose claim was no longer current (the lease
	// expired, and a claim or jobs.TidyStale took the item): nothing
	// changed.
	Lost []string
}

// Settle acks and nacks claimed items in one round trip per [BatchMax]
// settlements. An ack stores the result for Config.ResultRetention, drops
// the item's value and lease, and wakes its waiters. A nack at an attempt
// below Config.MaxAttempts (or the item's own,
// [EnqueueOptions.MaxAttempts]) delays the item by the backoff; at the
// last attempt it dead-letters the item with the cause and wakes its
// waiters. A cause that is, or wraps, an error made by package tasks'
// [github.com/worksteal/worksteal/tasks.DeadLetter], RetryAfter or Snooze
// does what that error's doc says instead (dead-letter now, another delay,
// a snooze that uses no attempt).
//
// An ack whose result is larger than Config.MaxPayload is turned into a
// nack with ErrPayloadTooLarge as the cause, so one item cannot fail a
// batch. Settling again an item that this very claim already acked counts
// it as acked again: a retried call is harmless.
func (q *Queue) Settle(ctx context.Context, settlements ...Settlement) (SettleResult, error) {
	st := make([]qstore.Settlement, len(settlements))
	for i, s := range settlements {
		st[i] = qstore.Settlement{Item: qstore.Item(s.Item), Result: s.Result, Err: s.Err}
	}
	r, err := q.st.Settle(ctx, st...)
	return SettleResult(r), err
}

// Ack marks a claimed item done with its result (see [Queue.Settle]). It
// returns ErrPayloadTooLarge, changing nothing, for a result above
// Config.MaxPayload, ErrLeaseLost if the claim is no longer current, and
// ErrCanceled if the item was canceled while claimed ([Queue.Cancel]).
func (q *Queue) Ack(ctx context.Context, it Item, result []byte) error {
	return q.st.Ack(ctx, qstore.Item(it), result)
}

// Nack reports a failed attempt: the item is retried after the backoff, or
// dead-lettered with cause at its last attempt (see [Queue.Settle]). It
// returns ErrLeaseLost if the claim is no longer current, ErrCanceled if
// the item was canceled while claimed.
func (q *Queue) Nack(ctx context.Context, it Item, cause error) error {
	return q.st.Nack(ctx, qstore.Item(it), cause)
}
