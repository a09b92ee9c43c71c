package tasks

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/worksteal/worksteal/internal/names"
	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/taskenv"
	"github.com/worksteal/worksteal/queue"
)

// fanOutChildrenMax bounds a fan-out's children: the storage's join's.
const fanOutChildrenMax = qstore.JoinChildrenMax

// EnqueueFanOut adds a fan-out to the client's queue in one script call,
// one round trip: the children, each a task that runs as any does, and
// the final step, which runs once, after every child succeeded. Each
// child's success counts the fan-out down in the script call that stores
// it, and the last one enqueues the final step there, so the final step
// neither runs twice nor is lost. Its handler reads the children's
// results with [ChildResults]. It returns the fan-out's id, which is the
// final step's task id:
// [WaitFanOut] waits for its result, [FanOutStatus] reads its progress.
//
// A child that dies fails the fan-out: the final step does not run, and
// WaitFanOut returns an error wrapping [queue.ErrDead] with the child's
// cause, as [Task.Call] of that child would. Retried
// ([github.com/worksteal/worksteal/inspect.Inspector.RetryDead]), the
// child lets the fan-out run on.
//
// Called in a task's handler, with that handler's ctx, EnqueueFanOut
// names the fan-out after the task and the call's rank in the handler, so
// a retried handler that makes the same calls adds each fan-out once.
//
// The options apply to the fan-out, in the same script call: [Delay]
// delays its children (the final step waits for them in any case),
// [Attempts] gives every child and the final step that many attempts,
// and [Unique] holds its key, per the final step's type, from the
// enqueue until the final step succeeds or dies (or ttl passes): an
// enqueue under the key meanwhile adds nothing and returns this
// fan-out's id, and CallFanOut waits for it. A fan-out failed by a dead
// child holds its key until ttl passes, as its final step still waits.
//
// A fan-out has 1 to 1000 children; no children, a step of an invalid
// type, a [Task.Pipe] (use ChildResults), arguments that do not encode or an
// invalid option fail the call with [ErrInvalidArgument], adding
// nothing; a task above the queue's MaxPayload, or all of them above 16
// MiB, with an error wrapping [queue.ErrPayloadTooLarge].
func EnqueueFanOut(ctx context.Context, c *Client, children []Step, final Step, opts ...EnqueueOption) (string, error) {
	if c == nil {
		return "", fmt.Errorf("%w: nil Client", ErrInvalidArgument)
	}
	if len(children) == 0 || len(children) > fanOutChildrenMax {
		return "", fmt.Errorf("%w: a fan-out of %d children, not in [1, %d]", ErrInvalidArgument, len(children), fanOutChildrenMax)
	}
	j := qstore.JoinSpec{Children: make([][]byte, len(children))}
	var err error
	if j.Final, err = fanOutTask(c, final, "final step"); err != nil {
		return "", err
	}
	for i, s := range children {
		if j.Children[i], err = fanOutTask(c, s, "child "+strconv.Itoa(i+1)); err != nil {
			return "", err
		}
	}
	o, err := queueOptions(final.Type, opts)
	if err != nil {
		return "", err
	}
	if o.Priority != "" {
		return "", fmt.Errorf("%w: enqueue fan-out: a fan-out waits in the default lane, Priority %q does not apply", ErrInvalidArgument, o.Priority)
	}
	j.Options = storeOptions(o)
	if t := runningFrom(ctx); t != nil {
		j.ID = fanOutID(t.id, t.fanOuts.Add(1))
	}
	ctx, sent := c.send(ctx, final.Type, len(children)+1, 0)
	j.Options.Trace = sent.trace
	id, _, err := c.st.EnqueueJoin(ctx, j)
	sent.end(id, err)
	if errors.Is(err, queue.ErrInvalidArgument) || errors.Is(err, queue.ErrEmptyPayload) {
		return "", fmt.Errorf("%w: enqueue fan-out: %w", ErrInvalidArgument, err)
	}
	if err != nil {
		return "", fmt.Errorf("tasks: enqueue fan-out to %s: %w", final.Type, err)
	}
	return id, nil
}

// fanOutTask is the envelope of one of a fan-out's tasks.
func fanOutTask(c *Client, s Step, what string) ([]byte, error) {
	if err := names.Check(s.Type); err != nil {
		return nil, fmt.Errorf("%w: fan-out's %s: task type: %v", ErrInvalidArgument, what, err)
	}
	if s.pipe {
		return nil, fmt.Errorf("%w: fan-out's %s (%s) is piped; its handler reads the children's results with ChildResults", ErrInvalidArgument, what, s.Type)
	}
	data, err := marshal(c.codec, s.raw, s.Args)
	if err != nil {
		return nil, fmt.Errorf("%w: fan-out's %s: arguments of %s: %w", ErrInvalidArgument, what, s.Type, err)
	}
	return taskenv.Envelope{Type: s.Type, Codec: c.codec.Name(), Args: data}.Encode(), nil
}

// fanOutEncoding writes fan-out ids as newID's are: 26 bytes of base32.
var fanOutEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// fanOutID names the n-th fan-out of the task parent's handler.
func fanOutID(parent string, n int64) string {
	sum := sha256.Sum256([]byte("worksteal fan-out\x00" + parent + "\x00" + strconv.FormatInt(n, 10)))
	return fanOutEncoding.EncodeToString(sum[:16])
}

// FanOutStatus reads the progress of the fan-out id in one script call:
// its children, how many succeeded and how many died (the first one's id
// and cause), and whether it is running, done (with the final step's
// result, encoded) or failed. It returns an error wrapping
// [queue.ErrNotFound] for an unknown fan-out, or one past the queue's
// ResultRetention since its last child succeeded.
func FanOutStatus(ctx context.Context, c *Client, id string) (FanOutProgress, error) {
	if c == nil {
		return FanOutProgress{}, fmt.Errorf("%w: nil Client", ErrInvalidArgument)
	}
	j, err := c.st.Join(ctx, id)
	p := FanOutProgress{ID: j.ID, Children: j.Children, Done: j.Done, Dead: j.Dead, DeadChild: j.DeadChild, State: flowStates.Join(j.State),
		Cause: j.Cause, Result: j.Result}
	if errors.Is(err, queue.ErrInvalidArgument) {
		return p, fmt.Errorf("%w: fan-out status: %w", ErrInvalidArgument, err)
	}
	if err != nil {
		return p, fmt.Errorf("tasks: fan-out status: %w", err)
	}
	return p, nil
}

// WaitFanOut waits for the final step of the fan-out id, bounded by ctx,
// and returns its result decoded into R. A child (or the final step) that
// dies returns an error wrapping [queue.ErrDead] whose text holds its
// cause; the death of a child wakes the waiter at once, unless it died as
// an expired lease, dead-lettered by a claim or the queue's Tidy (then
// within the queue's WaitBlock). It
// waits with [queue.Queue.Wait], so it does not poll.
func WaitFanOut[R any](ctx context.Context, c *Client, id string) (R, error) {
	var r R
	if c == nil {
		return r, fmt.Errorf("%w: nil Client", ErrInvalidArgument)
	}
	res, err := c.q.Wait(ctx, id)
	if err != nil {
		return r, fmt.Errorf("tasks: fan-out %s: %w", id, err)
	}
	if err := c.codec.Unmarshal(res, &r); err != nil {
		return r, fmt.Errorf("%w: result of fan-out %s: %w", ErrDecode, id, err)
	}
	return r, nil
}

// CallFanOut enqueues a fan-out ([EnqueueFanOut]) and waits for its final
// step's result ([WaitFanOut]). opts are EnqueueFanOut's: with [Unique],
// calls with one key while its fan-out is live share that fan-out, and
// each gets its result.
func CallFanOut[R any](ctx context.Context, c *Client, children []Step, final Step, opts ...EnqueueOption) (R, error) {
	id, err := EnqueueFanOut(ctx, c, children, final, opts...)
	if err != nil {
		var r R
		return r, err
	}
	return WaitFanOut[R](ctx, c, id)
}

// running is the task a handler runs. It is its handler's context, so
// that a task costs one allocation for both: see [runningFrom].
// Its fields are packed: every task allocates one.
type running struct {
	context.Context
	st      *qstore.Store // its queue's storage
	codec   Codec
	id      string
	prev    []byte       // a chain step's previous result
	fanOuts atomic.Int64 // EnqueueFanOut calls so far
	// What InfoFrom reads besides (info.go).
	typ, priority        string
	chain                *taskenv.Chain // nil: not a chain's step
	attempt, maxAttempts int32
	hasPrev              bool
	// leaseGone is when, in unix ns, the attempt's outcome is thrown away
	// (drain.LeaseGone); 0 outside a drain.
	leaseGone int64
}

type taskKey struct{}

func (t *running) Value(key any) any {
	if key == (taskKey{}) {
		return t
	}
	return t.Context.Value(key)
}

// runningFrom returns the task whose handler ctx is, or nil.
func runningFrom(ctx context.Context) *running {
	t, _ := ctx.Value(taskKey{}).(*running)
	return t
}

// ChildResults reads, in the handler of a fan-out's final step, the
// results of its children, in their order, decoded into R: one script
// call. ok is false in the handler of any other task (after that call);
// an error wraps [ErrDecode], or [queue.ErrNotFound] for a result past
// the queue's ResultRetention.
func ChildResults[R any](ctx context.Context) (results []R, ok bool, err error) {
	t := runningFrom(ctx)
	if t == nil {
		return nil, false, nil
	}
	raw, err := t.st.JoinResults(ctx, t.id)
	if errors.Is(err, queue.ErrNotFound) || errors.Is(err, queue.ErrInvalidArgument) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("tasks: child results: %w", err)
	}
	results = make([]R, len(raw))
	for i, data := range raw {
		if data == nil {
			return nil, true, fmt.Errorf("tasks: child %s.%d: %w: no result", t.id, i+1, queue.ErrNotFound)
		}
		if err := t.codec.Unmarshal(data, &results[i]); err != nil {
			return nil, true, fmt.Errorf("%w: result of child %s.%d: %w", ErrDecode, t.id, i+1, err)
		}
	}
	return results, true, nil
}
