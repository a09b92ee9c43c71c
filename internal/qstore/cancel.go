package qstore

import (
	"context"
	"errors"
	"fmt"
	"time"
)

var cancelScript = newScript("cancel")

// Errors of a cancel, which package queue exports.
var (
	// ErrCanceled is what a canceled item's waiters get, and the cause of
	// a canceled running handler's context.
	ErrCanceled = errors.New("queue: canceled")
	// ErrFinished: the item was acked or dead-lettered before the cancel.
	ErrFinished = errors.New("queue: item already finished")
)

// StartFence is how long a drain may start a claimed item after it sent
// the latest read that found the item not canceled (its claim, or a read
// of [Store.CanceledOf]); past it, the drain reads again before it starts
// one. A Cancel that ends a lease (or meets a cancel of less than
// StartFence ago) returns only once StartFence has passed since its
// script ran, and a little more for clocks that run at slightly
// different rates: by then every start that did not see the cancel has
// been decided, so once Cancel returns nil the item never starts. It is
// more than the drain's poll and a round trip, so that a batch that polls
// anyway seldom needs a read of its own.
const StartFence = 150 * time.Millisecond

// fenceWait is how long Cancel waits for a fence of ms milliseconds of
// Redis's clock: 2 % more, far above the drift of NTP-disciplined
// clocks (0.05 % at most), and a millisecond for the rounding to ms.
func fenceWait(ms int64) time.Duration {
	d := time.Duration(ms) * time.Millisecond
	return d + d/50 + time.Millisecond
}

// CancelResult says what [Store.Cancel] did.
type CancelResult struct {
	// Canceled counts the items this call canceled: 0 when they were
	// canceled before, up to a join's children and its final item.
	Canceled int
	// Running counts those of them that were leased: their handlers'
	// contexts end when a drain running them next polls (see
	// [Store.CanceledOf]).
	Running int
}

// Cancel ends the item id for good in one script call, wherever it is:
// pending (in a priority's lane, or set aside by its type's limit),
// delayed or waiting for a retry, or leased; a chain's id cancels its
// current step, so that no later step is enqueued; a join's id, or one of
// its children's, cancels its children that have not finished and its
// final item. A canceled item is never claimed again, its waiters get
// [ErrCanceled], its unique key is free, and a settle of a claim of it
// changes nothing (Settle counts it Canceled). A drain that holds a claim
// of it and has not started it never does once Cancel returned nil: a
// Cancel that ends a lease waits [StartFence] before it returns (with an
// error wrapping ctx's if ctx ends first: the item is canceled, but may
// yet start). Cancel is idempotent: a second call returns a zero
// CancelResult and no error (after what is left of the first's wait). It
// returns an
// error wrapping [ErrFinished] when the item (a chain's current step, a
// join's final item) was acked or is dead, and one wrapping
// [ErrNotFound] when the queue holds nothing of it.
func (q *Store) Cancel(ctx context.Context, id string) (CancelResult, error) {
	if id == "" {
		return CancelResult{}, fmt.Errorf("%w: empty id", ErrInvalidArgument)
	}
	reply, err := cancelScript.Run(ctx, q.rdb, q.k.cancelKeys, id, q.cfg.ResultRetention.Milliseconds(),
		notifyTTL.Milliseconds(), StartFence.Milliseconds()).Int64Slice()
	if err != nil {
		return CancelResult{}, q.wrap("cancel", err)
	}
	if len(reply) != 4 {
		return CancelResult{}, q.wrap("cancel", fmt.Errorf("%w: %d values", errUnexpectedScript, len(reply)))
	}
	r := CancelResult{Canceled: int(reply[1]), Running: int(reply[2])}
	switch reply[0] {
	case 1, 2, 3:
		if reply[3] > 0 {
			return r, q.waitFence(ctx, id, reply[3])
		}
		return r, nil
	case 4:
		return r, q.wrap("cancel", fmt.Errorf("%w: %s was acked", ErrFinished, id))
	case 5:
		return r, q.wrap("cancel", fmt.Errorf("%w: %s is dead", ErrFinished, id))
	}
	return r, q.wrap("cancel", fmt.Errorf("%w: no item %s", ErrNotFound, id))
}

// waitFence waits out the start fence of id's cancel (see StartFence).
func (q *Store) waitFence(ctx context.Context, id string, ms int64) error {
	t := time.NewTimer(fenceWait(ms))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return q.wrap("cancel", fmt.Errorf("%s is canceled, but a drain holding it may yet start it: %w", id, ctx.Err()))
	}
}

// CanceledOf returns which of ids (at most BatchMax) are canceled, in
// one read: a drain asks it of the items it runs or has claimed to run.
func (q *Store) CanceledOf(ctx context.Context, ids []string) ([]bool, error) {
	if err := checkCount("canceled ids", len(ids)); err != nil {
		return nil, err
	}
	scores, err := q.rdb.ZMScore(ctx, q.k.canceled, ids...).Result()
	if err != nil {
		return nil, q.wrap("canceled", err)
	}
	out := make([]bool, len(ids))
	for i, s := range scores {
		out[i] = s != 0
	}
	return out, nil
}
