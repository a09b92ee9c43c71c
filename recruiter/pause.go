package recruiter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/worksteal/worksteal/internal/joblock"
)

// ErrUnknownJob is returned by [Recruiter.Pause] and [Recruiter.Resume]
// for a job that was not registered.
var ErrUnknownJob = errors.New("recruiter: unknown job")

// pauseRecheck is how often a process asks again whether a paused job
// without Every was resumed; a job with Every asks once per Every.
const pauseRecheck = time.Second

// Pause stops job across the fleet for d, from 1ms to 30 days: no slice of
// it starts in any process until d has passed or [Recruiter.Resume] is
// called; a slice already running ends as it would. It is one Redis call,
// and costs the hot path nothing: each process learns of it on its next
// visit to the job's lock, where a paused job is an outcome,
// skipped_paused. The job must be registered in r.
func (r *Recruiter) Pause(ctx context.Context, job string, d time.Duration) error {
	if d <= 0 || d > joblock.PauseMax {
		return fmt.Errorf("recruiter: pause %q for %v: the duration must be positive and at most %v", job, d, joblock.PauseMax)
	}
	return r.setPause(ctx, job, d)
}

// Resume undoes [Recruiter.Pause] across the fleet. Processes that learnt
// of the pause ask again within one Every of the job (one second for a job
// without Every), and the job runs again; this one at its next draw. It is
// one Redis call; resuming a job that is not paused does nothing.
func (r *Recruiter) Resume(ctx context.Context, job string) error {
	return r.setPause(ctx, job, 0)
}

func (r *Recruiter) setPause(ctx context.Context, job string, d time.Duration) error {
	if ctx == nil {
		return errors.New("recruiter: pause or resume with a nil context")
	}
	var e *entry
	for _, x := range r.jobs.Load().entries {
		if x.name == job {
			e = x
		}
	}
	if e == nil {
		return fmt.Errorf("%w %q", ErrUnknownJob, job)
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.RedisTimeout)
	defer cancel()
	if err := joblock.Pause(ctx, r.rdb, e.lock.key, d); err != nil {
		return fmt.Errorf("recruiter: pause or resume %q: %w", job, err)
	}
	now := r.now()
	if d > 0 {
		e.pausedUntil.Store(now.Add(d).UnixNano())
		e.coolOff(now.Add(min(d, e.pauseRecheck(0))))
	} else {
		e.pausedUntil.Store(0)
		e.coolOff(time.Time{})
	}
	return nil
}
