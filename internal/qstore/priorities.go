package qstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/worksteal/worksteal/internal/names"
)

// DefaultPriority names the lane of the items enqueued without a
// priority: pending itself. Its weight is 1 unless SetPriorities gives it
// one.
const DefaultPriority = "default"

// Bounds of the priorities: a claim looks at every lane.
const (
	prioritiesMax = 16
	weightMax     = 1000
)

// errUnknownPriority is the text of the scripts' error for a priority
// without a weight.
const errUnknownPriority = "unknown priority"

func checkPriority(p string) error {
	if p == "" {
		return nil
	}
	if err := names.Check(p); err != nil {
		return fmt.Errorf("%w: priority: %v", ErrInvalidArgument, err)
	}
	return nil
}

// SetPriorities gives the priorities their weights, for every process
// and from the next claim: while each has items waiting, claims take
// them in proportion to their weights. A priority that is not in
// weights keeps the weight it had; one that never had one is the
// default's. Weights are 1 to 1000, priorities at most 16 and named as
// task types are.
func (q *Store) SetPriorities(ctx context.Context, weights map[string]int) error {
	if len(weights) == 0 {
		return fmt.Errorf("%w: no priorities", ErrInvalidArgument)
	}
	args := make([]any, 0, 2*len(weights))
	for p, w := range weights {
		if err := checkPriority(p); err != nil || p == "" {
			return cmpErr(err, fmt.Errorf("%w: empty priority", ErrInvalidArgument))
		}
		if w < 1 || w > weightMax {
			return fmt.Errorf("%w: weight %d of priority %s is not in [1, %d]", ErrInvalidArgument, w, p, weightMax)
		}
		args = append(args, p, w)
	}
	old, err := q.Priorities(ctx)
	if err != nil {
		return err
	}
	for p := range weights {
		old[p] = 0
	}
	if len(old) > prioritiesMax {
		return fmt.Errorf("%w: %d priorities, at most %d", ErrInvalidArgument, len(old), prioritiesMax)
	}
	return q.wrap("set priorities", q.rdb.HSet(ctx, q.k.weights, args...).Err())
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// Priorities returns the weights of the queue's priorities.
func (q *Store) Priorities(ctx context.Context) (map[string]int, error) {
	raw, err := q.rdb.HGetAll(ctx, q.k.weights).Result()
	if err != nil {
		return nil, q.wrap("priorities", err)
	}
	out := make(map[string]int, len(raw))
	for p, v := range raw {
		if w, err := strconv.Atoi(v); err == nil {
			out[p] = w
		}
	}
	return out, nil
}

// priorityErr names the priority in a script's refusal of it.
func priorityErr(err error, p string) error {
	if err != nil && strings.Contains(err.Error(), errUnknownPriority) {
		return fmt.Errorf("%w: priority %q has no weight (see SetPriorities)", ErrInvalidArgument, p)
	}
	return err
}
