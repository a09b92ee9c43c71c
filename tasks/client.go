package tasks

import (
	"context"
	"errors"
	"fmt"

	"github.com/worksteal/worksteal/internal/names"
	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/taskenv"
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

// encode is the envelope of a task of type typ with args; arguments that
// the codec cannot encode are an invalid argument.
func (c *Client) encode(typ string, args any) ([]byte, error) {
	data, err := c.codec.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("%w: arguments of %s: %w", ErrInvalidArgument, typ, err)
	}
	return taskenv.Envelope{Type: typ, Codec: c.codec.Name(), Args: data}.Encode(), nil
}

// Enqueue adds a task of type typ with args to the client's queue and
// returns its id (the queue item's, for [queue.Queue.Wait] and the
// others). Options delay the task ([Delay]), give it its own number of
// attempts ([Attempts]) or a unique key ([Unique]: a duplicate returns
// the first task's id and adds nothing); with or without them, Enqueue is
// one script call. [Task.Enqueue] is Enqueue with the type and the
// argument type of a [Task].
//
// A nil Client, an invalid type, arguments that the codec cannot encode
// or an option out of its bounds fail the call with an error wrapping
// [ErrInvalidArgument]; a task larger than the queue's MaxPayload,
// envelope included, with one wrapping [queue.ErrPayloadTooLarge]. Either
// way nothing is added.
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
	payload, err := c.encode(typ, args)
	if err != nil {
		return "", err
	}
	id, _, err := c.q.EnqueueWith(ctx, payload, qopts)
	if errors.Is(err, queue.ErrInvalidArgument) {
		return "", fmt.Errorf("%w: enqueue %s: %w", ErrInvalidArgument, typ, err)
	}
	if err != nil {
		return "", fmt.Errorf("tasks: enqueue %s: %w", typ, err)
	}
	return id, nil
}

// EnqueueMany adds a task of type typ for each of args, in their order,
// and returns their ids, in the same order. It writes up to 1,000 tasks
// (and 4 MiB) in one script call, one round trip, where Enqueue takes one
// per task; a longer list takes one call per 1,000. [Task.EnqueueMany] is
// EnqueueMany with the types of a [Task]. No args: no ids, no call.
//
// Of the enqueue options, [Delay] and [Attempts] apply to every task (the
// tasks of one call are due at once); [Unique] does not apply, since a key
// stands for one task: EnqueueMany with it fails with [ErrInvalidArgument].
// Enqueue tasks that must be unique one by one.
//
// Every task is encoded and checked before the first call: a nil Client,
// an invalid type, arguments that do not encode or an option out of its
// bounds fail with an error wrapping [ErrInvalidArgument], a task above
// the queue's MaxPayload with one wrapping [queue.ErrPayloadTooLarge],
// and nothing is added. Each call is atomic; if one fails, ids holds the
// tasks of the calls before it, and the rest may or may not have been
// added.
func EnqueueMany[A any](ctx context.Context, c *Client, typ string, args []A, opts ...EnqueueOption) (ids []string, err error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil Client", ErrInvalidArgument)
	}
	if err := names.Check(typ); err != nil {
		return nil, fmt.Errorf("%w: task type: %v", ErrInvalidArgument, err)
	}
	var o enqueueOptions
	applyOptions(&o, opts)
	if o.uniqueSet {
		return nil, fmt.Errorf("%w: enqueue many %s: Unique applies to one task, not to many", ErrInvalidArgument, typ)
	}
	if len(args) == 0 {
		return nil, nil
	}
	payloads := make([][]byte, len(args))
	for i, a := range args {
		data, err := c.codec.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("%w: enqueue many %s: arguments of task %d of %d: %w", ErrInvalidArgument, typ, i+1, len(args), err)
		}
		payloads[i] = taskenv.Envelope{Type: typ, Codec: c.codec.Name(), Args: data}.Encode()
	}
	ids, err = c.st.EnqueueBatchWith(ctx, payloads, storeOptions(o.EnqueueOptions))
	if errors.Is(err, queue.ErrInvalidArgument) {
		return nil, fmt.Errorf("%w: enqueue many %s: %w", ErrInvalidArgument, typ, err)
	}
	if err != nil {
		return ids, fmt.Errorf("tasks: enqueue many %s: %w", typ, err)
	}
	return ids, nil
}

// Call enqueues a task, as [Enqueue] does, and waits for its result with
// [queue.Queue.Wait], bounded by ctx. A task that ends in the dead letters
// returns an error wrapping [queue.ErrDead] whose text holds the cause
// (the handler's last error, or [ErrUnknownType] or [ErrDecode]'s text); a
// result that does not decode into R, one wrapping [ErrDecode]. When ctx
// ends first the task stays queued and may still run. opts are
// [Enqueue]'s: with [Unique], calls with one key while its task is live
// share that task, and each gets its result. [Task.Call] is Call with the
// type, A and R of a [Task], so that R is the handler's.
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
