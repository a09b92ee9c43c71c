package queue

import (
	"context"

	"github.com/worksteal/worksteal/internal/qstore"
)

// DefaultPriority names the lane of the items enqueued without a
// Priority ([EnqueueOptions]): its weight is 1 unless
// [Queue.SetPriorities] gives it one.
const DefaultPriority = qstore.DefaultPriority

// SetPriorities gives priorities their weights, for every process that
// claims from the queue, from its next claim, as {"critical": 6,
// "default": 3, "low": 1}. While several lanes have items, claims take
// from each in proportion to its weight, by a smooth weighted round robin
// whose state lives in Redis with the queue: among any sum-of-weights
// consecutive leases each lane has its weight's share, so the lightest
// is never starved; a lane without items is skipped and banks nothing.
// A priority left out of weights keeps its weight; priorities are never
// removed (items may still wait in their lanes). Weights are 1 to 1000;
// a queue has at most 16 priorities, named as [EnqueueOptions] says.
//
// A queue with priorities claims through the path that also enforces
// task types' limits (package tasks): see the cost in BENCHMARKS.md.
func (q *Queue) SetPriorities(ctx context.Context, weights map[string]int) error {
	return q.st.SetPriorities(ctx, weights)
}

// Priorities returns the weights that [Queue.SetPriorities] gave.
func (q *Queue) Priorities(ctx context.Context) (map[string]int, error) {
	return q.st.Priorities(ctx)
}
