package qstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

var stateScript = newScript("state")

// States of an item, as state.lua reports them.
const (
	stateUnknown  = 0
	stateDone     = 1
	stateDead     = 2
	stateLive     = 3
	stateCanceled = 4
)

// Wait is queue.Queue.Wait. Of a join's id ([Store.EnqueueJoin]), it
// waits for the final item, and returns an error wrapping [ErrDead] with
// the cause of a child that is dead (state.lua). Of a canceled item (and
// a canceled join), it returns an error wrapping [ErrCanceled].
func (q *Store) Wait(ctx context.Context, id string) ([]byte, error) {
	if id == "" {
		return nil, fmt.Errorf("%w: empty id", ErrInvalidArgument)
	}
	keys := []string{q.k.results, q.k.values, q.k.dead, q.k.causes, q.k.waiting, q.k.join(id), q.k.canceled}
	wake := q.k.notify(id)
	for {
		reply, err := stateScript.Run(ctx, q.rdb, keys, id).Slice()
		if err != nil {
			return nil, q.wrap("wait", ctxErr(ctx, err))
		}
		state, detail := int64(-1), ""
		if len(reply) == 2 {
			state, _ = reply[0].(int64)
			detail, _ = reply[1].(string)
		}
		switch state {
		case stateDone:
			return []byte(detail), nil
		case stateDead:
			return nil, q.wrap("wait", fmt.Errorf("%w: %s: %s", ErrDead, id, detail))
		case stateCanceled:
			return nil, q.wrap("wait", fmt.Errorf("%w: %s", ErrCanceled, id))
		case stateUnknown:
			return nil, q.wrap("wait", fmt.Errorf("%w: no item or result %s", ErrNotFound, id))
		case stateLive:
		default:
			return nil, q.wrap("wait", fmt.Errorf("%w: %v", errUnexpectedScript, reply))
		}
		if err := ctx.Err(); err != nil {
			return nil, q.wrap("wait", err)
		}
		// Rotating the list (same source and destination) keeps its one
		// element, so every waiter of the item wakes, not just the first.
		err = q.rdb.BLMove(ctx, wake, wake, "RIGHT", "LEFT", q.block(ctx)).Err()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, q.wrap("wait", ctxErr(ctx, err))
		}
	}
}

// block is the next blocking read's timeout: WaitBlock, or less when ctx
// ends sooner; whole seconds, at least 1s.
func (q *Store) block(ctx context.Context) time.Duration {
	d := q.cfg.WaitBlock
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl)+time.Second-1)
	}
	return max(d.Truncate(time.Second), time.Second)
}

// ctxErr prefers ctx's error: a read cut short by the ctx deadline shows
// as an i/o timeout, sometimes just before ctx reports it.
func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return err
}
