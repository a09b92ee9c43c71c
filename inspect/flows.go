package inspect

import (
	"context"
	"errors"
	"fmt"

	"github.com/worksteal/worksteal/internal/flow"
	"github.com/worksteal/worksteal/internal/qstore"
)

// FlowState is where a chain or a fan-out stands.
type FlowState int

// The states of a chain or a fan-out.
const (
	FlowUnknown FlowState = iota
	// FlowRunning: a step (a chain's current one, a fan-out's children
	// or final step) is pending, delayed or leased.
	FlowRunning
	// FlowDone: its last step was acked.
	FlowDone
	// FlowFailed: a step is a dead letter (Cause says why); retried, it
	// lets the flow run on.
	FlowFailed
	// FlowCanceled: it was canceled ([Inspector.Cancel], tasks.Cancel):
	// no later step (no final step) runs. It comes last so that the
	// states before it keep their values.
	FlowCanceled
)

// flowStates are the states' values for the storage's flow states
// (internal/flow, shared with package tasks).
var flowStates = flow.States[FlowState]{Unknown: FlowUnknown, Running: FlowRunning, Done: FlowDone, Failed: FlowFailed,
	Canceled: FlowCanceled}

// String returns the state's name: "running", "done", "failed",
// "canceled" or "unknown".
func (s FlowState) String() string {
	switch s {
	case FlowRunning:
		return "running"
	case FlowDone:
		return "done"
	case FlowFailed:
		return "failed"
	case FlowCanceled:
		return "canceled"
	}
	return "unknown"
}

// Chain is the progress of a chain of tasks: its steps before Step are
// done, Step is Current's item, and those after wait for it.
type Chain struct {
	ID      string // the chain's, its first step's item id
	Step    int    // the current step, 1 to Steps
	Steps   int
	Current string // the current step's item id
	State   FlowState
	Cause   string // why it failed
}

// Chain reads the progress of the chain id of queue (a [Task]'s Chain);
// ErrNotFound if the queue keeps no record of it (the record lasts the
// queue's ResultRetention after the chain's last move).
func (in *Inspector) Chain(ctx context.Context, queue, id string) (Chain, error) {
	c, err := readFlow(ctx, in, queue, "chain", id, (*qstore.Store).Chain)
	if err != nil {
		return Chain{}, err
	}
	return Chain{ID: c.ID, Step: c.Step, Steps: c.Steps, Current: c.Current, State: flowStates.Chain(c.State), Cause: c.Cause}, nil
}

// FanOut is the progress of a fan-out: its children, run side by side,
// then its final step, whose item id is the fan-out's.
type FanOut struct {
	ID        string
	Children  int
	Done      int    // children acked
	Dead      int    // children in the dead letters
	DeadChild string // the first dead child's item id
	State     FlowState
	Cause     string // why it failed
}

// FanOut reads the progress of the fan-out id of queue; a child's item
// id is the fan-out's and ".n". ErrNotFound if the queue keeps no record
// of it.
func (in *Inspector) FanOut(ctx context.Context, queue, id string) (FanOut, error) {
	j, err := readFlow(ctx, in, queue, "fan-out", id, (*qstore.Store).Join)
	if err != nil {
		return FanOut{}, err
	}
	return FanOut{ID: j.ID, Children: j.Children, Done: j.Done, Dead: j.Dead, DeadChild: j.DeadChild, State: flowStates.Join(j.State),
		Cause: j.Cause}, nil
}

// readFlow reads the record id of queue's chains or fan-outs (what).
func readFlow[T any](ctx context.Context, in *Inspector, queue, what, id string, read func(*qstore.Store, context.Context, string) (T, error)) (T, error) {
	var zero T
	st, err := in.queue(ctx, queue)
	if err != nil {
		return zero, err
	}
	rec, err := read(st, ctx, id)
	if errors.Is(err, qstore.ErrNotFound) {
		return zero, fmt.Errorf("%w: %s %.80s in queue %s", ErrNotFound, what, id, queue)
	}
	if err != nil {
		return zero, in.wrap(err)
	}
	return rec, nil
}
