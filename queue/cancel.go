package queue

import "context"

// Cancel ends the item id for good, in one script call, wherever it is:
// pending, delayed (or waiting for a retry) or leased. A canceled item
// is never claimed again; one that a [github.com/worksteal/worksteal/jobs.Drain]
// has claimed but not started never starts once Cancel returned nil
// (Cancel of a leased item returns about 150 ms after its script ran, or
// an error wrapping ctx's error if ctx ends first: the drain may start a
// claimed item that long after a read that did not see the cancel); its
// waiters ([Queue.Wait]) return an error
// wrapping [ErrCanceled] at once, and a unique key it holds is free. A
// leased item's lease ends at once: a settle of that claim changes
// nothing ([SettleResult].Canceled counts it), and a [github.com/worksteal/worksteal/jobs.Drain]
// running it cancels its handler's context, with ErrCanceled as cause,
// when it next polls (see package jobs). Of a fan-out's id, or one of
// its children's, it cancels the children that have not finished and
// the final step; of a chain's id, its current step (package tasks).
//
// Cancel is idempotent: canceling a canceled item returns nil. Redis
// runs Cancel, Claim and Settle one after the other, so an item ends in
// exactly one state: whichever of a cancel and an ack (or a Nack to the
// dead letters) reaches Redis first wins. After an ack or a
// dead-lettering Cancel changes nothing and returns an error wrapping
// [ErrFinished]; after a cancel the ack is dropped. It returns one
// wrapping [ErrNotFound] if the queue holds nothing of id (never was,
// purged, or its result or cancel is past ResultRetention).
func (q *Queue) Cancel(ctx context.Context, id string) error {
	_, err := q.st.Cancel(ctx, id)
	return err
}
