package recruiter

import (
	"context"
	"time"
)

// Job is one kind of background work, run in slices by recruited workers.
type Job interface {
	// Name identifies the job in lock keys, spans and metrics; it must be
	// stable across processes and releases, and match [A-Za-z0-9._-]+.
	Name() string
	// Run does one slice of work. It must return promptly once ctx is done:
	// ctx's deadline is the job's budget, and the job's lock expires soon
	// after it.
	Run(ctx context.Context) (Report, error)
}

// Finisher is a Job whose slices stop starting work at their budget but
// finish what they started, for up to Finish past it: the handlers of
// jobs.Drain run to their end, bounded by their lease. Until then the
// recruiter keeps the slice's lock alive, as for any overrun, but neither
// warns nor counts a timeout; past it, the usual rules apply.
type Finisher interface {
	Job
	Finish() time.Duration
}

// Report is what a slice says of itself.
type Report struct {
	Items int  // units of work done in this slice
	More  bool // backlog remains: release the lock so the next recruit continues
}

// Func returns a Job named name whose slices call run.
func Func(name string, run func(context.Context) (Report, error)) Job {
	return funcJob{name: name, run: run}
}

type funcJob struct {
	name string
	run  func(context.Context) (Report, error)
}

func (j funcJob) Name() string                            { return j.name }
func (j funcJob) Run(ctx context.Context) (Report, error) { return j.run(ctx) }
