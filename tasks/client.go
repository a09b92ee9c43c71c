package tasks

import (
	"context"
	"errors"
	"fmt"

	"github.com/worksteal/worksteal/internal/names"
	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/queue"
)

// Client enqueues tasks on a queue and waits for their results, with the
// codec of its options. It is a small value, safe for concurrent use.
// [Enqueue] and [Call] take it as an argument rather than being methods
// because Go methods cannot have type parameters.
type Client struct {
	q     *queue.Queue
	st    *qstore.Store // q's storage: chains and fan-outs
	codec Codec
}

// NewClient returns a Client of q; see [WithCodec].
func NewClient(q *queue.Queue, opts ...Option) (*Client, error) {
	if q == nil {
		return nil, fmt.Errorf("%w: nil queue", ErrInvalidArgument)
	}
	o := newOptions(opts)
	if err := names.Check(o.codec.Name()); err != nil {
		return nil, fmt.Errorf("%w: codec name: %v", ErrInvalidArgument, err)
	}
	return &Client{q: q, st: qstore.Of(q), codec: o.codec}, nil
}

// Enqueue adds a task of type typ with args to the client's queue and
// returns its id (the queue item's, for [queue.Queue.Wait] and the
// others). Options delay the task ([Delay]), give it its own number of
// attempts ([Attempts]) or a unique key ([Unique]: a duplicate returns
// the first task's id and adds nothing); with or without them, Enqueue is
// one script call. A task larger than the queue's MaxPayload, envelope
// included, is refused with an error wrapping [queue.ErrPayloadTooLarge];
// an option out of its bounds with one wrapping [ErrInvalidArgument].
func Enqueue[A any](ctx context.Context, c *Client, typ string, args A, opts ...EnqueueOption) (string, error) {
	if c == nil {
		return "", fmt.Errorf("%w: nil Client", ErrInvalidArgument)
	}
	if err := names.Check(typ); err != nil {
		return "", fmt.Errorf("%w: task type: %v", ErrInvalidArgument, err)
	}
	qopts, err := queueOptions(typ, opts)
	if err != nil {
		return "", err
	}
	data, err := c.codec.Marshal(args)
	if err != nil {
		return "", fmt.Errorf("tasks: arguments of %s: %w", typ, err)
	}
	id, _, err := c.q.EnqueueWith(ctx, envelope{Type: typ, Codec: c.codec.Name(), Args: data}.encode(), qopts)
	if errors.Is(err, queue.ErrInvalidArgument) {
		return "", fmt.Errorf("%w: enqueue %s: %w", ErrInvalidArgument, typ, err)
	}
	if err != nil {
		return "", fmt.Errorf("tasks: enqueue %s: %w", typ, err)
	}
	return id, nil
}

// Call enqueues a task, as [Enqueue] does, and waits for its result with
// [queue.Queue.Wait], bounded by ctx. A task that ends in the dead letters
// returns an error wrapping [queue.ErrDead] whose text holds the cause
// (the handler's last error, or [ErrUnknownType] or [ErrDecode]'s text); a
// result that does not decode into R, one wrapping [ErrDecode]. When ctx
// ends first the task stays queued and may still run. opts are
// [Enqueue]'s: with [Unique], calls with one key while its task is live
// share that task, and each gets its result.
func Call[A, R any](ctx context.Context, c *Client, typ string, args A, opts ...EnqueueOption) (R, error) {
	var r R
	id, err := Enqueue(ctx, c, typ, args, opts...)
	if err != nil {
		return r, err
	}
	res, err := c.q.Wait(ctx, id)
	if err != nil {
		return r, fmt.Errorf("tasks: call %s: %w", typ, err)
	}
	if err := c.codec.Unmarshal(res, &r); err != nil {
		return r, fmt.Errorf("%w: result of %s (%s): %w", ErrDecode, typ, id, err)
	}
	return r, nil
}
