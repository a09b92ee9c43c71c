package tasks

import (
	"context"
	"errors"
	"fmt"

	"github.com/worksteal/worksteal/queue"
)

// Cancel cancels the task id, or the chain or fan-out it names, in one
// script call: a pending or delayed task (one waiting for a retry too)
// is removed and never runs; one that a drain has claimed but not yet
// started never starts once Cancel returned nil; a running one's handler
// context ends, with [queue.ErrCanceled] as its cause ([context.Cause]),
// within the bound that package jobs states (a poll of 100 ms and a round
// trip), on whichever process runs it, and whatever it returns then is
// dropped: it is neither retried nor dead-lettered. Cancel of a claimed
// or running task returns about 150 ms after its script ran (or, if ctx
// ends first, an error wrapping ctx's: the task is canceled but may yet
// start). Either way the task's waiters
// ([Task.Call], [queue.Queue.Wait], [WaitChain], [WaitFanOut]) return an
// error wrapping queue.ErrCanceled at once, and its [Unique] key is free.
//
// A chain's id cancels its current step, so that no later step runs
// ([ChainStatus] reads [StateCanceled]); a fan-out's id, or one of its
// children's, cancels the children that have not succeeded and the final
// step, which never runs ([FanOutStatus] reads StateCanceled).
//
// Cancel is idempotent. Redis orders a cancel and an ack of the same task
// (or its dead-lettering): whichever lands first wins, and the task ends
// in that one state. A cancel that lands after the ack (or the death)
// changes nothing and returns an error wrapping [queue.ErrFinished]; an
// ack after the cancel is dropped. An unknown id (or one past the queue's
// ResultRetention) returns one wrapping [queue.ErrNotFound]; a nil Client
// or an empty id, [ErrInvalidArgument].
func Cancel(ctx context.Context, c *Client, id string) error {
	if c == nil {
		return fmt.Errorf("%w: nil Client", ErrInvalidArgument)
	}
	if id == "" {
		return fmt.Errorf("%w: cancel: empty id", ErrInvalidArgument)
	}
	if err := c.q.Cancel(ctx, id); err != nil {
		if errors.Is(err, queue.ErrInvalidArgument) {
			return fmt.Errorf("%w: cancel: %w", ErrInvalidArgument, err)
		}
		return fmt.Errorf("tasks: cancel %s: %w", id, err)
	}
	return nil
}
