package tasks

import (
	"fmt"
	"time"

	"github.com/worksteal/worksteal/internal/qstore"
)

// DeadLetter returns an error that a handler returns to dead-letter its
// task now, whatever attempts it has left: no further attempt runs. The
// dead letter's cause is the text of the error the handler returns (with
// whatever wraps it); cause is that error's text and what it unwraps to
// (nil: "dead-lettered by the handler"). A chain stops at the step as at
// any dead step, and a fan-out fails at once with this child's cause;
// retried from the dead letters, the task, the chain or the fan-out runs on.
func DeadLetter(cause error) error { return qstore.NewVerdict(qstore.DeadNow, 0, cause) }

// RetryAfter returns an error that a handler returns to fail its attempt
// and run the task again after d, instead of the queue's backoff or the
// type's [RetryDelay]. The attempt is used: at the last one the task is
// dead-lettered, as by any error. cause is the error's text and what it
// unwraps to (nil: "a retry asked for by the handler"). A negative d is 0
// (again at once), one past a year is a year.
func RetryAfter(d time.Duration, cause error) error {
	return qstore.NewVerdict(qstore.RetryIn, d, cause)
}

// Snooze returns an error that a handler returns to run its task again
// after d without using an attempt: the next run has the same attempt
// number, and a task at its last attempt is not dead-lettered. A task may
// snooze 100 times in its life (the queue counts them with the task); a
// snooze past them is a failed attempt, retried after d or at the last
// attempt dead-lettered, with a cause that says so. A negative d is 0,
// one past a year is a year. The error's text is "tasks: snoozed for d".
// A snoozed chain step or fan-out child holds its chain or fan-out, which
// waits for it.
func Snooze(d time.Duration) error {
	return qstore.NewVerdict(qstore.Snooze, d, fmt.Errorf("tasks: snoozed for %v", min(max(d, 0), qstore.VerdictDelayMax)))
}

// RetryDelay sets a task type's retry delay: after a handler error that
// says none ([RetryAfter], [Snooze] and [DeadLetter] do), the task runs
// again after delay(attempt, err) instead of the queue's backoff, attempt
// being the failed attempt's number (1 for the first) and err what the
// handler returned (a panic is an error wrapping [jobs.ErrHandlerPanic],
// a timeout one wrapping [ErrTimeout]). Its result is kept in bounds as
// RetryAfter's. It does not apply to a task that fails before its handler
// (its type unknown, its envelope undecodable). A nil delay leaves the
// queue's backoff.
func RetryDelay(delay func(attempt int, err error) time.Duration) HandleOption {
	return handleOptionFunc(func(c *handleConfig) { c.retryDelay = delay })
}

// steer is a handler's error as the queue settles it: err as it is when
// it says how, or when the type has no retry delay; else with the type's
// delay for this attempt.
func (c *handleConfig) steer(attempt int, err error) error {
	if c.retryDelay == nil || qstore.VerdictOf(err) != nil {
		return err
	}
	return qstore.NewVerdict(qstore.RetryIn, c.retryDelay(attempt, err), err)
}

// lastAttempt reports whether an attempt that failed with err, the
// item's attempt out of maxAttempts, leaves the task dead: counted so in
// the Mux's stats.
func lastAttempt(attempt, maxAttempts int, err error) bool {
	v := qstore.VerdictOf(err)
	switch {
	case v == nil:
		return attempt >= maxAttempts
	case v.Steer() == qstore.DeadNow:
		return true
	case v.Steer() == qstore.Snooze:
		return false
	}
	return attempt >= maxAttempts
}

// snoozed reports whether err is a [Snooze].
func snoozed(err error) bool {
	v := qstore.VerdictOf(err)
	return v != nil && v.Steer() == qstore.Snooze
}
