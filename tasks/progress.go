package tasks

import (
	"strconv"

	"github.com/worksteal/worksteal/internal/flow"
)

// State is where a chain ([ChainProgress]) or a fan-out
// ([FanOutProgress]) is: running, done, failed or canceled.
type State int

// The states of a chain or a fan-out.
const (
	// StateRunning: a chain's current step, or a fan-out's children or
	// final step, are pending, delayed or running.
	StateRunning State = iota + 1
	// StateDone: a chain's last step, or a fan-out's final step,
	// succeeded; Result is its result, encoded.
	StateDone
	// StateFailed: a chain's current step, or a fan-out's child or final
	// step, is in the queue's dead letters (Cause says why), or a chain's
	// step succeeded without enqueueing the next. A retry of the dead
	// task ([github.com/worksteal/worksteal/inspect.Inspector.RetryDead])
	// makes the chain or fan-out run on.
	StateFailed
	// StateCanceled: the chain or the fan-out was canceled ([Cancel]):
	// no later step, no final step runs.
	StateCanceled
)

// flowStates are the states' values for the storage's flow states
// (internal/flow); a state the storage does not name reads as 0.
var flowStates = flow.States[State]{Running: StateRunning, Done: StateDone, Failed: StateFailed, Canceled: StateCanceled}

func (s State) String() string {
	switch s {
	case StateRunning:
		return "running"
	case StateDone:
		return "done"
	case StateFailed:
		return "failed"
	case StateCanceled:
		return "canceled"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// ChainProgress is the progress of a chain, as [ChainStatus] reads it.
type ChainProgress struct {
	ID      string // the chain's id, its first task's
	Step    int    // the current step, 1 to Steps; Steps once done
	Steps   int    // how many the chain has
	Current string // the current step's task id
	State   State
	Cause   string // why it failed (StateFailed)
	Result  []byte // the last step's result, encoded (StateDone)
}

// FanOutProgress is the progress of a fan-out, as [FanOutStatus] reads
// it.
type FanOutProgress struct {
	ID       string // the fan-out's id, its final step's task id
	Children int    // how many children it has
	Done     int    // children that succeeded; Children once the final step is enqueued
	Dead     int    // children in the dead letters
	// DeadChild is the first dead child's task id ("" when none is dead).
	DeadChild string
	State     State
	Cause     string // why it failed (StateFailed)
	Result    []byte // the final step's result, encoded (StateDone)
}
