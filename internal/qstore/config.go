package qstore

import (
	"errors"
	"math/rand/v2"
	"time"
)

// BatchMax bounds every count argument (Claim's n, Tidy's max, ...) and
// the items of one script call: a script blocks Redis while it runs, so
// each call stays around a millisecond of work.
const BatchMax = 1000

// Errors of a queue's calls, which package queue exports: those about an
// argument wrap a message naming it.
var (
	ErrInvalidArgument  = errors.New("queue: invalid argument")
	ErrEmptyPayload     = errors.New("queue: empty payload")
	ErrPayloadTooLarge  = errors.New("queue: payload too large")
	ErrLeaseLost        = errors.New("queue: lease lost")
	ErrNotFound         = errors.New("queue: not found")
	ErrDead             = errors.New("queue: item is dead")
	errUnexpectedScript = errors.New("queue: unexpected script reply")
)

// Config is a queue's configuration: queue.Config's fields, with their
// defaults applied and checked by package queue, which documents them.
type Config struct {
	BackoffBase     time.Duration
	BackoffMax      time.Duration
	Lease           time.Duration
	MaxAttempts     int
	MaxPayload      int
	Prefix          string
	ResultRetention time.Duration
	WaitBlock       time.Duration
	// Jitter draws the retry jitter, uniform in [0, 1) and safe for
	// concurrent use; nil is math/rand/v2.Float64. Set by this repository's
	// tests only (internal/seams). A value out of range is clamped (see
	// backoff).
	Jitter func() float64
}

// backoff is the delay before retry number attempt (1 for the first):
// BackoffBase·2^(attempt-1), capped at BackoffMax, drawn from [d/2, d].
// A jitter out of [0, 1) is clamped: NaN and negative values count as 0
// (d/2), 1 and above as 1 (d), so a retry delay always stays within
// [d/2, d].
func (c Config) backoff(attempt int) time.Duration {
	d := c.BackoffBase
	for i := 1; i < attempt && d < c.BackoffMax; i++ {
		d = min(d*2, c.BackoffMax) // d ≤ BackoffMax/2 here unless it is huge
		if d < 0 {
			d = c.BackoffMax
		}
	}
	jitter := c.Jitter
	if jitter == nil {
		jitter = rand.Float64
	}
	r := jitter()
	switch {
	case !(r > 0): // NaN too, which once made the backoff negative
		r = 0
	case r > 1:
		r = 1
	}
	// float64(d/2) may round up past d/2 above 2^53ns: min keeps d the cap.
	return min(d/2+time.Duration(r*float64(d/2)), d)
}
