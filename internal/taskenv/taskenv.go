package taskenv

// Task is a queue item's payload read as a task.
type Task struct {
	Type  string
	Codec string
	Args  []byte // encoded with Codec; a piped chain step's are the previous step's result
	Chain *Chain // nil: a task on its own
}

// Chain is where a chain's step stands.
type Chain struct {
	ID          string // "" at step 1: the chain is named after its first item
	Unique      string // the queue's unique key the chain holds, "" for none
	Step, Steps int
	Piped       bool
}

// Decode reads payload as a task's envelope; an error if it is not one.
var Decode func(payload []byte) (Task, error)
