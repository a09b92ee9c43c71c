package queue

import "context"

// Wait blocks until the item is acked and returns its result: a client
// submits work with Enqueue and waits for the answer. It returns an error
// wrapping ErrDead (with the cause) if the item is dead-lettered,
// ErrNotFound if there is no such item (or its result is past its
// retention), or ctx's error. Of a fan-out's id (package tasks), it waits
// for the final step, and returns an error wrapping ErrDead with the
// cause of a child that is dead.
//
// Wait does not poll: it marks the item as waited for and blocks on its
// wake-up list (BLMOVE), which the item's Ack, or Nack to the dead letters,
// fills; at most Config.WaitBlock at a time, then it re-reads the item's
// state. Items nobody waits for cost their Ack no wake-up. Each Wait holds one
// connection of the client's pool while it blocks: size the pool
// (PoolSize) for the waiters you expect. A ctx deadline ends the blocking
// read itself when the client has ContextTimeoutEnabled; otherwise, and
// for a cancellation, Wait returns within Config.WaitBlock. Items that a
// claim (or jobs.TidyStale) dead-letters wake their waiters within
// Config.WaitBlock too, since those scripts find their ids only as they
// run.
func (q *Queue) Wait(ctx context.Context, id string) ([]byte, error) {
	return q.st.Wait(ctx, id)
}
