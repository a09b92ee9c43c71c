// Package worksqueue lets a recruiter ask a job which queue it works, so
// that Register can refuse a queue under another key prefix than the
// recruiter's: its jobs would then be listed under one prefix and its
// queues under another, and neither inspect, the dashboard nor the CLI
// would show them together. It adds no exported API: the jobs of
// packages jobs and tasks embed a [Mark] under an unexported name, and
// only this package calls its unexported method (as qstore.Handle does).
package worksqueue

// Mark says which queue a job works: its key prefix and its name.
type Mark struct{ prefix, queue string }

// New returns the mark of the queue called queue under prefix.
func New(prefix, queue string) Mark { return Mark{prefix, queue} }

func (m Mark) worksQueue() Mark { return m }

// Of returns the prefix and name of the queue that job works, and
// whether it says (a job without a Mark, or with a zero one, does not).
func Of(job any) (prefix, queue string, ok bool) {
	j, ok := job.(interface{ worksQueue() Mark })
	if !ok {
		return "", "", false
	}
	m := j.worksQueue()
	return m.prefix, m.queue, m.queue != ""
}
