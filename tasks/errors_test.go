package tasks_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/worksteal/worksteal/internal/testing/testrig"
	"github.com/worksteal/worksteal/queue"
	"github.com/worksteal/worksteal/tasks"
)

// entryPoint enqueues, one way, a task of type typ with args and opts on
// c, and returns the error.
type entryPoint func(ctx context.Context, c *tasks.Client, typ string, args any, opts []tasks.EnqueueOption) error

// entryPoints are every way of adding a task: a Task's Enqueue, Call,
// EnqueueMany and Periodic, and its Step in a chain or a fan-out.
var entryPoints = []struct {
	name string
	add  entryPoint
}{
	{"Task.Enqueue", func(ctx context.Context, c *tasks.Client, typ string, args any, opts []tasks.EnqueueOption) error {
		return second(tasks.Define[any, int](typ).Enqueue(ctx, c, args, opts...))
	}},
	{"Task.Call", func(ctx context.Context, c *tasks.Client, typ string, args any, opts []tasks.EnqueueOption) error {
		return second(tasks.Define[any, int](typ).Call(ctx, c, args, opts...))
	}},
	{"Task.EnqueueMany", func(ctx context.Context, c *tasks.Client, typ string, args any, opts []tasks.EnqueueOption) error {
		return second(tasks.Define[any, int](typ).EnqueueMany(ctx, c, []any{1, args}, opts...))
	}},
	{"Task.Periodic", func(_ context.Context, c *tasks.Client, typ string, args any, opts []tasks.EnqueueOption) error {
		return second(tasks.Define[any, int](typ).Periodic(c, "nightly", args, opts...))
	}},
	{"EnqueueChain", func(ctx context.Context, c *tasks.Client, typ string, args any, opts []tasks.EnqueueOption) error {
		return second(tasks.EnqueueChain(ctx, c, []tasks.Step{tasks.Define[any, int](typ).Step(args)}, opts...))
	}},
	{"CallChain", func(ctx context.Context, c *tasks.Client, typ string, args any, opts []tasks.EnqueueOption) error {
		return second(tasks.CallChain[int](ctx, c, []tasks.Step{tasks.Define[any, int](typ).Step(args)}, opts...))
	}},
	{"EnqueueFanOut", func(ctx context.Context, c *tasks.Client, typ string, args any, opts []tasks.EnqueueOption) error {
		s := tasks.Define[any, int](typ).Step(args)
		return second(tasks.EnqueueFanOut(ctx, c, []tasks.Step{s}, s, opts...))
	}},
	{"CallFanOut", func(ctx context.Context, c *tasks.Client, typ string, args any, opts []tasks.EnqueueOption) error {
		s := tasks.Define[any, int](typ).Step(args)
		return second(tasks.CallFanOut[int](ctx, c, []tasks.Step{s}, s, opts...))
	}},
}

// The same input fails every entry point with an error wrapping the same
// sentinel, and adds nothing. (EnqueueMany alone also refuses Unique:
// TestEnqueueManyOptions.)
func TestSameInputSameError(t *testing.T) {
	t.Parallel()
	const maxPayload = 256
	b := setup(t, nil, queue.Config{MaxPayload: maxPayload})
	ctx := testrig.Context(t, 30*time.Second)
	for _, in := range []struct {
		what   string
		client *tasks.Client
		typ    string
		args   any
		opts   []tasks.EnqueueOption
		want   error
	}{
		{"nil Client", nil, "t", 1, nil, tasks.ErrInvalidArgument},
		{"empty type", b.client, "", 1, nil, tasks.ErrInvalidArgument},
		{"invalid type", b.client, "a:b", 1, nil, tasks.ErrInvalidArgument},
		{"arguments that do not encode", b.client, "t", make(chan int), nil, tasks.ErrInvalidArgument},
		{"a negative delay", b.client, "t", 1, []tasks.EnqueueOption{tasks.Delay(-time.Second)}, tasks.ErrInvalidArgument},
		{"too many attempts", b.client, "t", 1, []tasks.EnqueueOption{tasks.Attempts(1001)}, tasks.ErrInvalidArgument},
		{"an empty unique key", b.client, "t", 1, []tasks.EnqueueOption{tasks.Unique("", time.Hour)}, tasks.ErrInvalidArgument},
		{"a task above MaxPayload", b.client, "t", strings.Repeat("x", maxPayload), nil, queue.ErrPayloadTooLarge},
	} {
		for _, ep := range entryPoints {
			err := ep.add(ctx, in.client, in.typ, in.args, in.opts)
			other := tasks.ErrInvalidArgument
			if in.want == tasks.ErrInvalidArgument {
				other = queue.ErrPayloadTooLarge
			}
			if !errors.Is(err, in.want) || errors.Is(err, other) {
				t.Errorf("%s with %s: %v; want %v alone", ep.name, in.what, err, in.want)
			}
		}
	}
	if d, err := b.q.Depth(ctx); err != nil || d != (queue.Depth{}) {
		t.Fatalf("Depth = %+v, %v; want nothing added", d, err)
	}
}
