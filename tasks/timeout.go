package tasks

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// ErrTimeout is the cause of a handler's context that its type's
// [Timeout] ended, and what the error of that attempt wraps.
var ErrTimeout = errors.New("tasks: handler timed out")

// Timeout bounds each attempt of the type's handler to d: its context
// ends at d with [ErrTimeout] as its cause ([context.Cause]), and the
// attempt fails with an error wrapping ErrTimeout (and the handler's own,
// if it returned one), whatever the handler returns after it. The queue
// retries it, or dead-letters it at its last attempt, as any failure.
//
// d is at most the queue's Lease: [Task.Handle] refuses a longer one on
// a Mux whose job works a queue of a shorter lease, and [Mux.Job] refuses
// a queue whose lease is shorter than a registered type's timeout, both
// with [ErrInvalidArgument]. (A lease is not extended to fit: it is what
// bounds how soon a crashed worker's tasks come back, and a handler's
// context ends before it anyway, a margin before the lease, for the
// settle. A type that needs longer needs a queue with a longer Lease.)
// The earlier of the two ends the context.
//
// A handler that ignores its context keeps its place in the slice until
// it returns, as a hung slice keeps its job: [TypeStats].Overdue counts
// those running past their timeout now, and TimedOut the attempts that
// their timeout failed. d of 0 sets no timeout; a negative d fails
// Handle with ErrInvalidArgument.
func Timeout(d time.Duration) HandleOption {
	return handleOptionFunc(func(c *handleConfig) { c.timeout = d })
}

// checkTimeout says whether a type's timeout fits lease (0: no queue yet).
func checkTimeout(typ string, cfg handleConfig, lease time.Duration) error {
	switch {
	case cfg.timeout < 0:
		return fmt.Errorf("%w: Timeout %v of %s is negative", ErrInvalidArgument, cfg.timeout, typ)
	case lease > 0 && cfg.timeout > lease:
		return fmt.Errorf("%w: Timeout %v of %s is longer than the queue's Lease %v", ErrInvalidArgument, cfg.timeout, typ, lease)
	}
	return nil
}

// withTimeout is the Mux's own middleware of a type with a timeout d,
// inside the users' (see [Mux.Use]); c counts the type's attempts.
func withTimeout(d time.Duration, c *typeCounts, next Handler) Handler {
	return func(ctx context.Context, typ string, args []byte) ([]byte, error) {
		tctx, cancel := context.WithTimeoutCause(ctx, d, ErrTimeout)
		defer cancel()
		// Overdue counts the attempt from its timeout to its return:
		// 0 running, 1 counted, 2 returned. Counted first and taken
		// back if it returned meanwhile, so that it never reads below 0.
		var state atomic.Int32
		stop := context.AfterFunc(tctx, func() {
			if context.Cause(tctx) == ErrTimeout {
				c.overdue.Add(1)
				if !state.CompareAndSwap(0, 1) {
					c.overdue.Add(-1)
				}
			}
		})
		result, err := next(tctx, typ, args)
		stop()
		if state.Swap(2) == 1 {
			c.overdue.Add(-1)
		}
		if context.Cause(tctx) != ErrTimeout {
			return result, err
		}
		c.timedOut.Add(1)
		if err == nil || errors.Is(err, ErrTimeout) {
			return nil, fmt.Errorf("%w after %v", ErrTimeout, d)
		}
		return nil, fmt.Errorf("%w after %v: %w", ErrTimeout, d, err)
	}
}
