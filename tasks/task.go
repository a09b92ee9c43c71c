package tasks

import (
	"context"

	"github.com/worksteal/worksteal/recruiter"
)

// Task is a task type with its argument type A and its result type R, so
// that the handler, the enqueues and the calls of a type agree on them at
// compile time, where the string forms ([Handle], [Enqueue], [Call])
// agree only by a string:
//
//	var resize = tasks.Define[ResizeArgs, Thumb]("resize") // once, where both sides see it
//	err := resize.Handle(mux, func(ctx context.Context, a ResizeArgs) (Thumb, error) { ... })
//	thumb, err := resize.Call(ctx, c, ResizeArgs{Image: "cat.png"}) // a Thumb
//
// Its methods are the functions of the same names with the type filled
// in: they check, encode and fail alike. A task without a result declares
// R as struct{}. A Task is a small value, safe to copy and to share; the
// zero Task has no type, and every use of it fails with
// [ErrInvalidArgument]. Types known only at run time (a type read from a
// request, a proxy of other services' tasks) use the string forms, which
// enqueue the same tasks.
type Task[A, R any] struct {
	typ string
}

// Define returns the task of type typ, a name of 1 to 128 bytes of
// [A-Za-z0-9._-], with arguments A and result R. The name is checked
// where the task is used, as the string forms check theirs, so that a
// task can be a package-level variable: an invalid one fails each use
// with [ErrInvalidArgument]. Define a type once and share the variable:
// two Tasks of one type and different A or R meet only at run time, as
// strings do.
func Define[A, R any](typ string) Task[A, R] {
	return Task[A, R]{typ: typ}
}

// Type returns the task's type, the name the queue holds.
func (t Task[A, R]) Type() string { return t.typ }

// Handle registers h for the task on m: [Handle] of its type.
func (t Task[A, R]) Handle(m *Mux, h func(ctx context.Context, args A) (R, error)) error {
	return Handle(m, t.typ, h)
}

// Enqueue adds the task with args to c's queue and returns its id:
// [Enqueue] of its type.
func (t Task[A, R]) Enqueue(ctx context.Context, c *Client, args A, opts ...EnqueueOption) (string, error) {
	return Enqueue(ctx, c, t.typ, args, opts...)
}

// EnqueueMany adds one task for each of args, up to 1,000 in one script
// call, and returns their ids: [EnqueueMany] of its type.
func (t Task[A, R]) EnqueueMany(ctx context.Context, c *Client, args []A, opts ...EnqueueOption) ([]string, error) {
	return EnqueueMany(ctx, c, t.typ, args, opts...)
}

// Call enqueues the task with args and waits for its result: [Call] of
// its type.
func (t Task[A, R]) Call(ctx context.Context, c *Client, args A, opts ...EnqueueOption) (R, error) {
	return Call[A, R](ctx, c, t.typ, args, opts...)
}

// Step is the task with args as a step of a chain ([EnqueueChain]) or of
// a fan-out ([EnqueueFanOut]).
func (t Task[A, R]) Step(args A) Step { return Step{Type: t.typ, Args: args} }

// Pipe is the task as a chain's step whose arguments are the previous
// step's result: [Pipe] of its type. That the previous step's R encodes
// into this A is not checked at compile time.
func (t Task[A, R]) Pipe() Step { return Pipe(t.typ) }

// Periodic returns a job named name that enqueues the task with args once
// per tick of its schedule: [Periodic] of its type.
func (t Task[A, R]) Periodic(c *Client, name string, args A, opts ...EnqueueOption) (recruiter.Job, error) {
	return Periodic(c, name, t.typ, args, opts...)
}
