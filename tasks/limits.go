package tasks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/worksteal/worksteal/internal/names"
	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/queue"
)

// Limit bounds the tasks of one type across the fleet: every process that
// works the queue, whichever job claims. The queue enforces it in the
// script call that claims, in Redis: a task over its type's limit is set
// aside with no attempt used, the tasks of other types behind it are
// claimed, and it is claimed before its type's newer tasks once the limit
// frees. The zero Limit is no limit.
type Limit struct {
	// Running bounds the tasks of the type running at once. A task holds
	// its place from its claim until it is settled or handed back, or
	// until its lease expires: a crashed worker's place comes back with
	// its lease. 0: no bound.
	Running int
	// Rate bounds how many tasks of the type start (are claimed) in any
	// window of Per: a sliding window by Redis's clock, in ms, so that no
	// Per-long span holds more than Rate starts. An upstream's quota.
	// 0: no bound.
	Rate int
	// Per is Rate's window, 1ms to a day; 0 without Rate.
	Per time.Duration
}

// Limits returns the limits set on the client's queue, by task type.
func (c *Client) Limits(ctx context.Context) (map[string]Limit, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil Client", ErrInvalidArgument)
	}
	raw, err := c.st.TypeLimits(ctx)
	if err != nil {
		return nil, fmt.Errorf("tasks: limits: %w", err)
	}
	out := make(map[string]Limit, len(raw))
	for typ, l := range raw {
		out[typ] = Limit(l)
	}
	return out, nil
}

// SetLimit sets the limit of the task's type on c's queue, for every
// process, from their next claims; the zero Limit lifts it. Limits live
// in Redis with the queue, so a process that declares one declares it for
// the fleet, and [Client.Limits] (and the CLI) read them back. Running is
// at most 100,000, Rate too; a nil Client, a Limit out of its bounds or
// an invalid type fails with [ErrInvalidArgument].
func (t Task[A, R]) SetLimit(ctx context.Context, c *Client, l Limit) error {
	typ := t.typ
	if c == nil {
		return fmt.Errorf("%w: nil Client", ErrInvalidArgument)
	}
	if err := names.Check(typ); err != nil {
		return fmt.Errorf("%w: task type: %v", ErrInvalidArgument, err)
	}
	err := c.st.SetTypeLimit(ctx, typ, qstore.TypeLimit(l))
	if errors.Is(err, queue.ErrInvalidArgument) {
		return fmt.Errorf("%w: limit of %s: %w", ErrInvalidArgument, typ, err)
	}
	if err != nil {
		return fmt.Errorf("tasks: limit of %s: %w", typ, err)
	}
	return nil
}
