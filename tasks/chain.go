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

// chainStepsMax bounds a chain: the storage's (qstore.ChainStep).
const chainStepsMax = qstore.ChainStepsMax

// Step is one task of a chain ([EnqueueChain]) or of a fan-out
// ([EnqueueFanOut]), made by [Task.Step], whose arguments the client's
// codec encodes at the enqueue, or by [Task.Pipe], which takes the
// previous step's result as its arguments instead.
type Step struct {
	// Deprecated: make a Step with [Task.Step] or [Task.Pipe] ([Raw] for
	// a type known only at run time); the fields will be unexported.
	Type string
	// Deprecated: make a Step with [Task.Step].
	Args any
	pipe bool
	raw  bool // Args are a Raw task's bytes
}

// EnqueueChain adds a chain of tasks, A → B → C, to the client's queue
// and returns the chain's id (its first task's id). Only the first step
// is enqueued: the [Mux] job enqueues each next step in the same script
// call that acks the step before it, with that step's result available to
// it ([PreviousResult], or as its arguments with [Task.Pipe]), so that no step
// is lost between two and none that succeeded runs again. A step that
// fails its last attempt stops the chain in the dead letters; retried
// ([github.com/worksteal/worksteal/inspect.Inspector.RetryDead]), it
// runs on. [ChainStatus] reads the chain's progress; [WaitChain] waits
// for its end.
//
// The options apply to the chain: [Delay] delays its first step,
// [Attempts] gives every step that many attempts, and [Unique] holds its
// key, per the first step's type, from the enqueue until the last step is
// acked or a step dies (or ttl passes): an enqueue under the key meanwhile
// returns this chain's id.
//
// A chain has 1 to 1000 steps; no steps, a step of an invalid type, a
// first step made by Task.Pipe, arguments that do not encode or an invalid
// option fail the call with [ErrInvalidArgument], adding nothing. The
// arguments of every step travel with each step, in one queue item:
// together they must fit the queue's MaxPayload, with the largest previous
// result.
func EnqueueChain(ctx context.Context, c *Client, steps []Step, opts ...EnqueueOption) (string, error) {
	env, err := chainEnvelope(c, steps)
	if err != nil {
		return "", err
	}
	o, err := queueOptions(steps[0].Type, opts)
	if err != nil {
		return "", err
	}
	env.Chain.Unique = o.Unique
	so := storeOptions(o)
	so.Chain = qstore.ChainStep{Step: 1, Steps: len(steps)}
	ctx, sent := c.send(ctx, steps[0].Type, 1, 1)
	so.Trace = sent.trace
	id, _, err := c.st.EnqueueWith(ctx, env.Encode(), so)
	sent.end(id, err)
	if errors.Is(err, queue.ErrInvalidArgument) {
		return "", fmt.Errorf("%w: enqueue chain: %w", ErrInvalidArgument, err)
	}
	if err != nil {
		return "", fmt.Errorf("tasks: enqueue chain of %s: %w", steps[0].Type, err)
	}
	return id, nil
}

// chainEnvelope is the envelope of a chain's first step.
func chainEnvelope(c *Client, steps []Step) (taskenv.Envelope, error) {
	switch {
	case c == nil:
		return taskenv.Envelope{}, fmt.Errorf("%w: nil Client", ErrInvalidArgument)
	case len(steps) == 0:
		return taskenv.Envelope{}, fmt.Errorf("%w: a chain of zero steps", ErrInvalidArgument)
	case len(steps) > chainStepsMax:
		return taskenv.Envelope{}, fmt.Errorf("%w: a chain of %d steps, above %d", ErrInvalidArgument, len(steps), chainStepsMax)
	case steps[0].pipe:
		return taskenv.Envelope{}, fmt.Errorf("%w: chain step 1 (%s) is piped, and has no previous result", ErrInvalidArgument, steps[0].Type)
	}
	encoded := make([]taskenv.Step, len(steps))
	for i, s := range steps {
		if err := names.Check(s.Type); err != nil {
			return taskenv.Envelope{}, fmt.Errorf("%w: chain step %d: task type: %v", ErrInvalidArgument, i+1, err)
		}
		encoded[i] = taskenv.Step{Type: s.Type, Piped: s.pipe}
		if !s.pipe {
			data, err := marshal(c.codec, s.raw, s.Args)
			if err != nil {
				return taskenv.Envelope{}, fmt.Errorf("%w: chain step %d: arguments of %s: %w", ErrInvalidArgument, i+1, s.Type, err)
			}
			encoded[i].Args = data
		}
	}
	return taskenv.Envelope{Type: encoded[0].Type, Codec: c.codec.Name(), Args: encoded[0].Args,
		Chain: &taskenv.Chain{Step: 1, Steps: len(steps), Rest: encoded[1:]}}, nil
}

// nextStep is the envelope and the queue's follow-up of the step after
// the one env is, whose item is id and whose handler returned result; nil
// after the last step.
func nextStep(env taskenv.Envelope, id string, result []byte) *qstore.FollowUp {
	c := env.Chain
	if c == nil || len(c.Rest) == 0 {
		return nil
	}
	s := c.Rest[0]
	chain := c.ID
	if chain == "" { // step 1: the chain is named after it
		chain = id
	}
	args := s.Args
	if s.Piped {
		args = result
	}
	next := taskenv.Envelope{Type: s.Type, Codec: env.Codec, Args: args, Chain: &taskenv.Chain{
		ID: chain, Unique: c.Unique, Step: c.Step + 1, Steps: c.Steps, Piped: s.Piped, Prev: result, Rest: c.Rest[1:],
	}}
	return &qstore.FollowUp{Payload: next.Encode(), Chain: qstore.ChainStep{ID: chain, Step: c.Step + 1, Steps: c.Steps}, Unique: c.Unique}
}

// ChainStatus reads the progress of the chain id in one script call: its
// current step of how many, that step's task id, and whether it is
// running, done (with the last step's result, encoded) or failed (with
// the cause of the step that died). It returns an error wrapping
// [queue.ErrNotFound] for an unknown chain, or one past the queue's
// ResultRetention since it last moved.
func ChainStatus(ctx context.Context, c *Client, id string) (ChainProgress, error) {
	if c == nil {
		return ChainProgress{}, fmt.Errorf("%w: nil Client", ErrInvalidArgument)
	}
	ch, err := c.st.Chain(ctx, id)
	p := ChainProgress{ID: ch.ID, Step: ch.Step, Steps: ch.Steps, Current: ch.Current, State: flowStates.Chain(ch.State),
		Cause: ch.Cause, Result: ch.Result}
	if errors.Is(err, queue.ErrInvalidArgument) {
		return p, fmt.Errorf("%w: chain status: %w", ErrInvalidArgument, err)
	}
	if err != nil {
		return p, fmt.Errorf("tasks: chain status: %w", err)
	}
	return p, nil
}

// WaitChain waits for the end of the chain id, bounded by ctx, and
// returns its last step's result decoded into R. A step that dies stops
// the chain: WaitChain returns an error wrapping [queue.ErrDead] whose
// text holds that step's cause; a canceled chain ([Cancel]), one wrapping
// [queue.ErrCanceled]. It waits with [queue.Queue.Wait] on each
// step in turn, so it does not poll.
func WaitChain[R any](ctx context.Context, c *Client, id string) (R, error) {
	var r R
	for {
		ch, err := ChainStatus(ctx, c, id)
		if err != nil {
			return r, err
		}
		switch ch.State {
		case StateDone:
			if err := c.codec.Unmarshal(ch.Result, &r); err != nil {
				return r, fmt.Errorf("%w: result of chain %s: %w", ErrDecode, id, err)
			}
			return r, nil
		case StateFailed:
			return r, fmt.Errorf("tasks: chain %s: step %d of %d (%s): %w: %s", id, ch.Step, ch.Steps, ch.Current, queue.ErrDead, ch.Cause)
		case StateCanceled:
			return r, fmt.Errorf("tasks: chain %s: step %d of %d (%s): %w", id, ch.Step, ch.Steps, ch.Current, queue.ErrCanceled)
		}
		// Running: wait for the current step to end, then read again. Its
		// result or death shows in the chain's next read.
		if _, err := c.q.Wait(ctx, ch.Current); err != nil && !errors.Is(err, queue.ErrDead) && !errors.Is(err, queue.ErrCanceled) {
			return r, fmt.Errorf("tasks: chain %s: %w", id, err)
		}
	}
}

// CallChain enqueues a chain ([EnqueueChain]) and waits for its last
// step's result ([WaitChain]).
func CallChain[R any](ctx context.Context, c *Client, steps []Step, opts ...EnqueueOption) (R, error) {
	id, err := EnqueueChain(ctx, c, steps, opts...)
	if err != nil {
		var r R
		return r, err
	}
	return WaitChain[R](ctx, c, id)
}

// PreviousResult decodes, in the handler of a chain's step, the result of
// the step before it. ok is false in the handler of a task that is not a
// chain's step, or is its first; an error wraps [ErrDecode].
func PreviousResult[T any](ctx context.Context) (v T, ok bool, err error) {
	t := runningFrom(ctx)
	if t == nil || !t.hasPrev {
		return v, false, nil
	}
	if err := t.codec.Unmarshal(t.prev, &v); err != nil {
		return v, true, fmt.Errorf("%w: previous result: %w", ErrDecode, err)
	}
	return v, true, nil
}
