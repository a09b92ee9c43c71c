package tasks

import (
	"context"

	"github.com/worksteal/worksteal/recruiter"
)

// The string forms of the Task methods, kept for one release. Each is its
// Task method on Define(typ), so they enqueue and run the same tasks.

// Handle registers h for the tasks of type typ on m.
//
// Deprecated: use [Task.Handle]: tasks.Define[A, R](typ).Handle(m, h);
// for types known only at run time, [Raw] or [Mux.HandleUnknown].
func Handle[A, R any](m *Mux, typ string, h func(ctx context.Context, args A) (R, error)) error {
	return Define[A, R](typ).Handle(m, h)
}

// Enqueue adds a task of type typ with args to c's queue and returns its
// id.
//
// Deprecated: use [Task.Enqueue]:
// tasks.Define[A, R](typ).Enqueue(ctx, c, args, opts...), or [Raw] for a
// type known only at run time.
func Enqueue[A any](ctx context.Context, c *Client, typ string, args A, opts ...EnqueueOption) (string, error) {
	return Define[A, struct{}](typ).Enqueue(ctx, c, args, opts...)
}

// EnqueueMany adds a task of type typ for each of args and returns their
// ids.
//
// Deprecated: use [Task.EnqueueMany]:
// tasks.Define[A, R](typ).EnqueueMany(ctx, c, args, opts...), or [Raw]
// for a type known only at run time.
func EnqueueMany[A any](ctx context.Context, c *Client, typ string, args []A, opts ...EnqueueOption) ([]string, error) {
	return Define[A, struct{}](typ).EnqueueMany(ctx, c, args, opts...)
}

// Call enqueues a task of type typ and waits for its result.
//
// Deprecated: use [Task.Call]:
// tasks.Define[A, R](typ).Call(ctx, c, args, opts...), or [Raw] for a
// type known only at run time.
func Call[A, R any](ctx context.Context, c *Client, typ string, args A, opts ...EnqueueOption) (R, error) {
	return Define[A, R](typ).Call(ctx, c, args, opts...)
}

// Pipe is a chain's step of type typ whose arguments are the previous
// step's result.
//
// Deprecated: use [Task.Pipe]: tasks.Define[A, R](typ).Pipe(), or
// tasks.Raw(typ).Pipe() for a type known only at run time.
func Pipe(typ string) Step {
	return Raw(typ).Pipe()
}

// Periodic returns a job named name that enqueues a task of type typ with
// args once per tick of its schedule.
//
// Deprecated: use [Task.Periodic]:
// tasks.Define[A, R](typ).Periodic(c, name, args, opts...), or [Raw] for
// a type known only at run time.
func Periodic[A any](c *Client, name, typ string, args A, opts ...EnqueueOption) (recruiter.Job, error) {
	return Define[A, struct{}](typ).Periodic(c, name, args, opts...)
}

// SetLimit sets the limit of the tasks of type typ on c's queue.
//
// Deprecated: use [Task.SetLimit]:
// tasks.Define[A, R](typ).SetLimit(ctx, c, l), or
// tasks.Raw(typ).SetLimit(ctx, c, l) for a type known only at run time.
func (c *Client) SetLimit(ctx context.Context, typ string, l Limit) error {
	return Raw(typ).SetLimit(ctx, c, l)
}
