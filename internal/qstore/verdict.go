package qstore

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/worksteal/worksteal/internal/text"
)

// Verdict is an error that steers the settle of the item whose outcome it
// is, instead of the queue's backoff: package tasks makes them
// (tasks.DeadLetter, tasks.RetryAfter, tasks.Snooze) and [Store.Settle]
// finds one anywhere in a failure's chain (errors.As), whichever door the
// failure came in by. Make it with [NewVerdict].
type Verdict struct {
	steer Steer
	delay time.Duration
	cause error
}

// Steer is what a [Verdict] does with a failed item.
type Steer int

const (
	// RetryIn retries the item after the verdict's delay; the attempt is
	// used, so at its last one the item is dead-lettered as by any failure.
	RetryIn Steer = iota + 1
	// DeadNow dead-letters the item at once, at any attempt.
	DeadNow
	// Snooze runs the item again after the verdict's delay, the attempt not
	// used, up to SnoozeMax times in its life; a snooze past them is a
	// failed attempt (RetryIn) whose cause says so.
	Snooze
)

// SnoozeMax is how many times an item may snooze; settle.lua counts them
// in the queue's hash "snoozes" (id → count).
const SnoozeMax = 100

// VerdictDelayMax is the longest delay a verdict keeps: a longer one is
// cut to it, as a negative one is raised to 0. It is the longest
// EnqueueOptions.Delay.
const VerdictDelayMax = delayMax

// NewVerdict returns the error that steers a failed item so, with its
// delay (RetryIn, Snooze) brought into [0, VerdictDelayMax]. cause is what
// the dead letter or the item's last failure says: the verdict's text is
// cause's, and it unwraps to cause; a nil cause is a text of its own. An
// unknown steer counts as RetryIn.
func NewVerdict(steer Steer, delay time.Duration, cause error) error {
	if steer < RetryIn || steer > Snooze {
		steer = RetryIn
	}
	if cause == nil {
		cause = verdictCauses[steer]
	}
	return &Verdict{steer: steer, delay: min(max(delay, 0), VerdictDelayMax), cause: cause}
}

var verdictCauses = [...]error{
	RetryIn: errors.New("a retry asked for by the handler"),
	DeadNow: errors.New("dead-lettered by the handler"),
	Snooze:  errors.New("snoozed by the handler"),
}

func (v *Verdict) Error() string { return v.cause.Error() }
func (v *Verdict) Unwrap() error { return v.cause }

// Steer is what v does with the item.
func (v *Verdict) Steer() Steer { return v.steer }

// Delay is v's delay, in [0, VerdictDelayMax].
func (v *Verdict) Delay() time.Duration { return v.delay }

// VerdictOf is the Verdict in err's chain, or nil.
func VerdictOf(err error) *Verdict {
	v, _ := errors.AsType[*Verdict](err)
	return v
}

// failure is what settle.lua is sent for an item that failed with err:
// its kind, its cause (for a snooze, "SnoozeMax:cause", the cause it
// keeps if the snooze is one too many) and its delay in ms, the queue's
// backoff unless a Verdict says otherwise.
func (q *Store) failure(it Item, err error) (kind, cause string, delayMs int64) {
	cause = text.Truncate(err.Error(), causeMax, "")
	v := VerdictOf(err)
	switch {
	case v == nil:
		return kindNack, cause, q.cfg.backoff(it.Attempt).Milliseconds()
	case v.steer == DeadNow:
		return kindDead, cause, 0
	case v.steer == Snooze:
		tooMany := fmt.Sprintf("%s (snoozed %d times, the most an item may: this snooze is a failed attempt)", cause, SnoozeMax)
		return kindSnooze, strconv.Itoa(SnoozeMax) + ":" + text.Truncate(tooMany, causeMax, ""), v.delay.Milliseconds()
	}
	return kindNack, cause, v.delay.Milliseconds()
}
