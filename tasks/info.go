package tasks

import (
	"context"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/taskenv"
)

// Info is what a handler's context says of the task it runs: see
// [InfoFrom]. Its strings share the claimed item's memory; Info is a
// value, safe to keep.
//
// A [Task.Periodic] task's tick is not in it: the claim does not read
// the task's unique key, which holds it, and a round trip per task is
// more than it is worth. Its EnqueuedAt is within about a second of the
// tick (later for a tick run after an outage).
type Info struct {
	ID    string // the task's id, as Enqueue returned it
	Type  string // its type; under [Mux.HandleUnknown] the task's own, not "*"
	Queue string // the name of the queue it was claimed from
	// Priority is the lane it was claimed from: "default" unless it was
	// enqueued with another ([Priority]).
	Priority string
	// Attempt counts the task's claims so far, 1 on the first.
	// MaxAttempts is its limit: its own ([Attempts]) or else the queue's
	// MaxAttempts. A failure at Attempt >= MaxAttempts dead-letters it.
	Attempt, MaxAttempts int
	// EnqueuedAt is when the task was enqueued by the clock of the
	// process that enqueued it (for a chain's later step: when the step
	// before it succeeded; for a fan-out's child: when the fan-out was
	// enqueued), read from its id; zero for an id this package did not
	// make. Retries keep it.
	EnqueuedAt time.Time
	// For a step of a chain ([EnqueueChain]): the chain's id (its first
	// step's task id), and this step's place, Step of Steps, from 1. All
	// zero for a task not in a chain.
	ChainID     string
	Step, Steps int
}

// LastAttempt reports whether a failure of this attempt dead-letters the
// task.
func (i Info) LastAttempt() bool { return i.Attempt >= i.MaxAttempts }

// InfoFrom returns the task that ctx is the handler context of, and true;
// false for any other context. It reaches every handler a [Mux] runs
// (typed, [Raw], [Mux.HandleUnknown]'s) and every [Middleware], and a
// context derived from theirs. It costs a context lookup and copies no
// memory: the [Mux] keeps what it reads in the context it makes for the
// task anyway. (A [jobs.Drain] handler gets its item as an argument: its
// ID, Attempt, MaxAttempts and [queue.Item.EnqueuedAt]; its items have
// no type or chain, and InfoFrom returns false there.)
func InfoFrom(ctx context.Context) (Info, bool) {
	if ctx == nil {
		return Info{}, false
	}
	t := runningFrom(ctx)
	if t == nil {
		return Info{}, false
	}
	return t.info(), true
}

// info is what InfoFrom returns of t.
func (t *running) info() Info {
	i := Info{ID: t.id, Type: t.typ, Priority: t.priority, Attempt: int(t.attempt), MaxAttempts: int(t.maxAttempts)}
	if t.st != nil {
		i.Queue = t.st.Name()
	}
	i.fromID(t.chain)
	return i
}

// fromID sets what i's ID and its envelope's chain (nil: none) say: when
// it was enqueued, and where in its chain it is.
func (i *Info) fromID(c *taskenv.Chain) {
	i.EnqueuedAt, _ = qstore.IDTime(i.ID)
	if c != nil {
		i.ChainID, i.Step, i.Steps = c.ID, c.Step, c.Steps
		if i.ChainID == "" { // step 1: the chain is named after it
			i.ChainID = i.ID
		}
	}
}
