package qstore

import (
	"context"
	"fmt"
	"strconv"
)

var chainScript = newScript("chain")

// Bounds of a [ChainStep], which package tasks checks first.
const (
	ChainIDMax    = 512
	ChainStepsMax = 1000
)

// ChainStep places an item in a chain of items, each enqueued by the ack
// of the one before it ([FollowUp]): the Step-th of Steps, in the chain
// called ID, whose progress [Store.Chain] reads. The zero value places
// the item in no chain.
type ChainStep struct {
	// ID names the chain, 1 to 512 bytes; in [EnqueueOptions], "" names it
	// after the item enqueued (its id is the chain's).
	ID string
	// Step is the item's place in the chain, 1 to Steps.
	Step int
	// Steps is how many items the chain has, 1 to 1000.
	Steps int
}

func (c ChainStep) isZero() bool { return c == ChainStep{} }

func (c ChainStep) validate(ownID bool) error {
	switch {
	case c.ID == "" && !ownID:
		return fmt.Errorf("%w: chain step %d of %d has no chain id", ErrInvalidArgument, c.Step, c.Steps)
	case len(c.ID) > ChainIDMax:
		return fmt.Errorf("%w: chain id of %d bytes is above %d", ErrInvalidArgument, len(c.ID), ChainIDMax)
	case c.Steps < 1 || c.Steps > ChainStepsMax:
		return fmt.Errorf("%w: chain %.40q of %d steps, not in [1, %d]", ErrInvalidArgument, c.ID, c.Steps, ChainStepsMax)
	case c.Step < 1 || c.Step > c.Steps:
		return fmt.Errorf("%w: chain %.40q step %d is not in [1, %d]", ErrInvalidArgument, c.ID, c.Step, c.Steps)
	}
	return nil
}

// FollowUp is the item that an ack enqueues in the same script call
// ([Settlement.FollowUp]): the ack and the enqueue happen together or not
// at all, and only once, so a follow-up is never lost and never added
// twice. The new item inherits the acked item's own attempt limit
// ([EnqueueOptions.MaxAttempts]), if it has one.
type FollowUp struct {
	// Payload of the new item: not empty; one larger than
	// Config.MaxPayload turns the ack into a nack with
	// [ErrPayloadTooLarge] as the cause.
	Payload []byte
	// Chain, when not zero, moves the chain's progress on to the new item
	// (see [Store.Chain]); its ID is required.
	Chain ChainStep
	// Unique, when not empty, is a unique key ([EnqueueOptions.Unique])
	// that the ack hands on to the new item if the acked item holds it,
	// with the lifetime it has left: a chain enqueued under a unique key
	// holds it until its last step is acked or a step dies.
	Unique string
	// Trace, when not empty, is the new item's trace context, as
	// [EnqueueOptions].Trace.
	Trace string
}

// ChainState is where a chain is: running, done or failed.
type ChainState int

// The states of a chain.
const (
	// ChainRunning: its current step is pending, delayed or leased.
	ChainRunning ChainState = iota + 1
	// ChainDone: its last step was acked; Chain.Result is its result.
	ChainDone
	// ChainFailed: its current step is in the dead letters (Chain.Cause
	// says why), or was acked without a follow-up before the last step.
	// [Store.RequeueDead] of that step makes the chain run on.
	ChainFailed
	// ChainCanceled: its current step was canceled ([Store.Cancel]); no
	// later step runs.
	ChainCanceled
)

func (s ChainState) String() string {
	switch s {
	case ChainRunning:
		return "running"
	case ChainDone:
		return "done"
	case ChainFailed:
		return "failed"
	case ChainCanceled:
		return "canceled"
	}
	return "ChainState(" + strconv.Itoa(int(s)) + ")"
}

// Chain is the progress of a chain, read by [Store.Chain].
type Chain struct {
	ID      string
	Step    int    // the current step, 1 to Steps; Steps once done
	Steps   int    // how many the chain has
	Current string // the current step's item id
	State   ChainState
	Cause   string // why it failed (ChainFailed)
	Result  []byte // the last step's result (ChainDone)
}

// Chain reads the progress of chain id in one script call: its current
// step and that step's state. A chain's record lives as long as results
// do (Config.ResultRetention) after its last move, so a step that waits
// longer than that (delayed, or retried) leaves it unreadable, though it
// runs on. It returns ErrNotFound for an unknown chain, and one whose
// current step is gone (purged, or its result past the retention).
func (q *Store) Chain(ctx context.Context, id string) (Chain, error) {
	if id == "" || len(id) > ChainIDMax {
		return Chain{}, fmt.Errorf("%w: chain id of %d bytes, not in [1, %d]", ErrInvalidArgument, len(id), ChainIDMax)
	}
	keys := []string{q.k.chain(id), q.k.results, q.k.values, q.k.dead, q.k.causes, q.k.canceled}
	reply, err := chainScript.Run(ctx, q.rdb, keys).Slice()
	if err != nil {
		return Chain{}, q.wrap("chain", err)
	}
	if len(reply) != 5 {
		return Chain{}, q.wrap("chain", fmt.Errorf("%w: %d values", errUnexpectedScript, len(reply)))
	}
	state, _ := reply[0].(int64)
	current, _ := reply[1].(string)
	step, _ := reply[2].(string)
	steps, _ := reply[3].(string)
	detail, _ := reply[4].(string)
	c := Chain{ID: id, Current: current}
	c.Step, _ = strconv.Atoi(step)
	c.Steps, _ = strconv.Atoi(steps)
	switch {
	case current == "":
		return Chain{}, q.wrap("chain", fmt.Errorf("%w: no chain %s", ErrNotFound, id))
	case state == stateUnknown:
		return c, q.wrap("chain", fmt.Errorf("%w: chain %s: step %d (%s) is gone", ErrNotFound, id, c.Step, current))
	case state == stateDead:
		c.State, c.Cause = ChainFailed, detail
	case state == stateLive:
		c.State = ChainRunning
	case state == stateCanceled:
		c.State = ChainCanceled
	case state == stateDone && c.Step == c.Steps:
		c.State, c.Result = ChainDone, []byte(detail)
	case state == stateDone:
		c.State, c.Cause = ChainFailed, fmt.Sprintf("step %d of %d was acked without a next step", c.Step, c.Steps)
	default:
		return c, q.wrap("chain", fmt.Errorf("%w: %v", errUnexpectedScript, reply))
	}
	return c, nil
}
