package tasks

import (
	"context"
	"fmt"

	"github.com/worksteal/worksteal/internal/names"
)

// Task is a task type with its argument type A and its result type R, so
// that the handler, the enqueues and the calls of a type agree on them at
// compile time:
//
//	var resize = tasks.Define[ResizeArgs, Thumb]("resize") // once, where both sides see it
//	err := resize.Handle(mux, func(ctx context.Context, a ResizeArgs) (Thumb, error) { ... })
//	thumb, err := resize.Call(ctx, c, ResizeArgs{Image: "cat.png"}) // a Thumb
//
// Its methods are the one way to handle, enqueue, call, chain, schedule
// and limit tasks. A task without a result declares R as struct{}. A Task
// is a small value, safe to copy and to share; the zero Task has no type,
// and every use of it fails with [ErrInvalidArgument]. Types known only
// at run time (a type read from a request, a proxy of other services'
// tasks) use [Raw], whose Task carries the codec's bytes as they are, and
// [Mux.HandleUnknown], which serves the types that no handler has.
type Task[A, R any] struct {
	typ string
	raw bool // made by Raw: A and R are []byte, which pass the codec by
}

// Define returns the task of type typ, a name of 1 to 128 bytes of
// [A-Za-z0-9._-], with arguments A and result R. The name is checked
// where the task is used, so that a task can be a package-level variable:
// an invalid one fails each use with [ErrInvalidArgument]. Define a type
// once and share the variable: two Tasks of one type and different A or R
// meet only at run time, where a mismatch fails the task with
// [ErrDecode].
func Define[A, R any](typ string) Task[A, R] {
	return Task[A, R]{typ: typ}
}

// Raw returns the task of type typ whose arguments and result are bytes
// already in the codec's encoding, which pass the codec by: for types
// known only at run time, and for bytes that were encoded elsewhere (a
// request's body, another service's task). Its tasks are the same as a
// [Define]d Task's of the type: the envelope names the Client's codec, so
// that a typed handler decodes what Raw enqueues and a Raw handler gets
// what a typed enqueue encoded, as bytes; a Raw Call returns the result
// as the handler's codec encoded it. Bytes that are not in the codec's
// encoding fail the task where it is decoded, with [ErrDecode]. A Raw
// handler's arguments share the claimed item's memory; it may keep them.
// (Define[[]byte, []byte] is another thing: it encodes the bytes with the
// codec, as any value.)
func Raw(typ string) Task[[]byte, []byte] {
	return Task[[]byte, []byte]{typ: typ, raw: true}
}

// Type returns the task's type, the name the queue holds.
func (t Task[A, R]) Type() string { return t.typ }

// Handle registers h for the task on m. A type has one handler:
// registering it again returns an error wrapping [ErrDuplicateType]. h
// gets the task's decoded arguments; what it returns is encoded as the
// task's result, which [Task.Call] returns, and an error fails the
// attempt, with its text as cause (see [Mux.Job]). A slice runs several
// tasks at once (jobs.DrainConfig.Concurrency), so h must be safe for
// concurrent use; since delivery is at least once, it must be idempotent.
// opts set how h runs (see [HandleOption]). A nil m or h, or an invalid
// type, fails with [ErrInvalidArgument].
func (t Task[A, R]) Handle(m *Mux, h func(ctx context.Context, args A) (R, error), opts ...HandleOption) error {
	switch {
	case m == nil:
		return fmt.Errorf("%w: nil Mux", ErrInvalidArgument)
	case h == nil:
		return fmt.Errorf("%w: nil handler for %q", ErrInvalidArgument, t.typ)
	}
	if err := names.Check(t.typ); err != nil {
		return fmt.Errorf("%w: task type: %v", ErrInvalidArgument, err)
	}
	typ, raw := t.typ, t.raw
	return m.add(typ, newHandleConfig(opts), func(ctx context.Context, c Codec, _ string, data []byte) ([]byte, error) {
		var args A
		if err := unmarshal(c, raw, data, &args); err != nil {
			return nil, fmt.Errorf("%w: arguments of %s: %w", ErrDecode, typ, err)
		}
		r, err := h(ctx, args)
		if err != nil {
			return nil, err
		}
		out, err := marshal(c, raw, r)
		if err != nil {
			return nil, fmt.Errorf("tasks: result of %s: %w", typ, err)
		}
		return out, nil
	})
}

// Step is the task with args as a step of a chain ([EnqueueChain]) or of
// a fan-out ([EnqueueFanOut]).
func (t Task[A, R]) Step(args A) Step { return Step{Type: t.typ, Args: args, raw: t.raw} }

// Pipe is the task as a chain's step whose arguments are the previous
// step's result, as that step's handler returned it: the previous step's
// R must encode into this A, which is not checked at compile time (a
// mismatch fails the step with [ErrDecode]). It cannot be a chain's first
// step.
func (t Task[A, R]) Pipe() Step { return Step{Type: t.typ, pipe: true} }

// marshal encodes v with c, or passes a Raw task's bytes by.
func marshal(c Codec, raw bool, v any) ([]byte, error) {
	if !raw {
		return c.Marshal(v)
	}
	b, ok := v.([]byte)
	if !ok { // only a Step whose Args were set by hand
		return nil, fmt.Errorf("raw arguments of type %T, not []byte", v)
	}
	return b, nil
}

// unmarshal decodes data into v with c, or hands a Raw task data as it
// is, capped so that an append does not write past it.
func unmarshal(c Codec, raw bool, data []byte, v any) error {
	if !raw {
		return c.Unmarshal(data, v)
	}
	*v.(*[]byte) = data[:len(data):len(data)]
	return nil
}
