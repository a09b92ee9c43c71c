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
// [Task.Enqueue], [Task.Call] and the others take it as an argument, as
// Go methods cannot have type parameters.
type Client struct {
	q     *queue.Queue
	st    *qstore.Store // q's storage: chains and fan-outs
	codec Codec
	tracing
}

// NewClient returns a Client of q; see [WithCodec] and
// [WithTracerProvider].
func NewClient(q *queue.Queue, opts ...Option) (*Client, error) {
	if q == nil {
		return nil, fmt.Errorf("%w: nil queue", ErrInvalidArgument)
	}
	o := newOptions(opts)
	if err := names.Check(o.codec.Name()); err != nil {
		return nil, fmt.Errorf("%w: codec name: %v", ErrInvalidArgument, err)
	}
	return &Client{q: q, st: qstore.Of(q), codec: o.codec, tracing: newTracing(o.tracerProvider)}, nil
}

// encode is the envelope of the task with args; arguments that c's codec
// cannot encode are an invalid argument.
func (t Task[A, R]) encode(c *Client, args A) ([]byte, error) {
	data, err := marshal(c.codec, t.raw, args)
	if err != nil {
		return nil, fmt.Errorf("%w: arguments of %s: %w", ErrInvalidArgument, t.typ, err)
	}
	return taskenv.Envelope{Type: t.typ, Codec: c.codec.Name(), Args: data}.Encode(), nil
}

// Enqueue adds the task with args to c's queue and returns its id (the
// queue item's, for [queue.Queue.Wait] and the others). Options delay the
// task ([Delay]), give it its own number of attempts ([Attempts]) or a
// unique key ([Unique]: a duplicate returns the first task's id and adds
// nothing); with or without them, Enqueue is one script call.
//
// A nil Client, an invalid type, arguments that the codec cannot encode
// or an option out of its bounds fail the call with an error wrapping
// [ErrInvalidArgument]; a task larger than the queue's MaxPayload,
// envelope included, with one wrapping [queue.ErrPayloadTooLarge]. Either
// way nothing is added.
func (t Task[A, R]) Enqueue(ctx context.Context, c *Client, args A, opts ...EnqueueOption) (string, error) {
	if c == nil {
		return "", fmt.Errorf("%w: nil Client", ErrInvalidArgument)
	}
	if err := names.Check(t.typ); err != nil {
		return "", fmt.Errorf("%w: task type: %v", ErrInvalidArgument, err)
	}
	qopts, err := queueOptions(t.typ, opts)
	if err != nil {
		return "", err
	}
	payload, err := t.encode(c, args)
	if err != nil {
		return "", err
	}
	ctx, sent := c.send(ctx, t.typ, 1, 0)
	so := storeOptions(qopts)
	so.Trace = sent.trace
	id, _, err := c.st.EnqueueWith(ctx, payload, so)
	sent.end(id, err)
	if errors.Is(err, queue.ErrInvalidArgument) {
		return "", fmt.Errorf("%w: enqueue %s: %w", ErrInvalidArgument, t.typ, err)
	}
	if err != nil {
		return "", fmt.Errorf("tasks: enqueue %s: %w", t.typ, err)
	}
	return id, nil
}

// EnqueueMany adds a task for each of args, in their order, to c's queue
// and returns their ids, in the same order. It writes up to 1,000 tasks
// (and 4 MiB) in one script call, one round trip, where Enqueue takes one
// per task; a longer list takes one call per 1,000. No args: no ids, no
// call.
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
func (t Task[A, R]) EnqueueMany(ctx context.Context, c *Client, args []A, opts ...EnqueueOption) (ids []string, err error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil Client", ErrInvalidArgument)
	}
	if err := names.Check(t.typ); err != nil {
		return nil, fmt.Errorf("%w: task type: %v", ErrInvalidArgument, err)
	}
	var o enqueueOptions
	applyOptions(&o, opts)
	if o.uniqueSet {
		return nil, fmt.Errorf("%w: enqueue many %s: Unique applies to one task, not to many", ErrInvalidArgument, t.typ)
	}
	if len(args) == 0 {
		return nil, nil
	}
	payloads := make([][]byte, len(args))
	for i, a := range args {
		data, err := marshal(c.codec, t.raw, a)
		if err != nil {
			return nil, fmt.Errorf("%w: enqueue many %s: arguments of task %d of %d: %w", ErrInvalidArgument, t.typ, i+1, len(args), err)
		}
		payloads[i] = taskenv.Envelope{Type: t.typ, Codec: c.codec.Name(), Args: data}.Encode()
	}
	ctx, sent := c.send(ctx, t.typ, len(payloads), 0)
	so := storeOptions(o.EnqueueOptions)
	so.Trace = sent.trace
	ids, err = c.st.EnqueueBatchWith(ctx, payloads, so)
	sent.end("", err)
	if errors.Is(err, queue.ErrInvalidArgument) {
		return nil, fmt.Errorf("%w: enqueue many %s: %w", ErrInvalidArgument, t.typ, err)
	}
	if err != nil {
		return ids, fmt.Errorf("tasks: enqueue many %s: %w", t.typ, err)
	}
	return ids, nil
}

// Call enqueues the task, as [Task.Enqueue] does, and waits for its
// result with [queue.Queue.Wait], bounded by ctx. A task that ends in the
// dead letters returns an error wrapping [queue.ErrDead] whose text holds
// the cause (the handler's last error, or [ErrUnknownType] or
// [ErrDecode]'s text); a result that does not decode into R, one wrapping
// [ErrDecode]. When ctx ends first the task stays queued and may still
// run. opts are Enqueue's: with [Unique], calls with one key while its
// task is live share that task, and each gets its result.
func (t Task[A, R]) Call(ctx context.Context, c *Client, args A, opts ...EnqueueOption) (R, error) {
	var r R
	id, err := t.Enqueue(ctx, c, args, opts...)
	if err != nil {
		return r, err
	}
	res, err := c.q.Wait(ctx, id)
	if err != nil {
		return r, fmt.Errorf("tasks: call %s: %w", t.typ, err)
	}
	if err := unmarshal(c.codec, t.raw, res, &r); err != nil {
		return r, fmt.Errorf("%w: result of %s (%s): %w", ErrDecode, t.typ, id, err)
	}
	return r, nil
}
