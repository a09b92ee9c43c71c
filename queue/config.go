package queue

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/worksteal/worksteal/internal/hooks"
	"github.com/worksteal/worksteal/internal/names"
)

// Defaults applied to zero fields of [Config]; each field's doc says its
// own.
const (
	backoffBaseDefault     = time.Second
	backoffMaxDefault      = 10 * time.Minute
	leaseDefault           = 30 * time.Second
	maxAttemptsDefault     = 5
	maxPayloadDefault      = 1 << 20
	prefixDefault          = "worksteal"
	resultRetentionDefault = 24 * time.Hour
	waitBlockDefault       = time.Second
)

// BatchMax bounds every count argument (Claim's n, Tidy's max, ...) and
// the items of one script call: a script blocks Redis while it runs, so
// each call stays around a millisecond of work.
const BatchMax = 1000

// Errors of this package. Those about a config, a name or an argument wrap a
// message naming the field or argument.
var (
	ErrInvalidConfig    = errors.New("queue: invalid config")
	ErrInvalidName      = errors.New("queue: invalid name")
	ErrInvalidArgument  = errors.New("queue: invalid argument")
	ErrEmptyPayload     = errors.New("queue: empty payload")
	ErrPayloadTooLarge  = errors.New("queue: payload too large")
	ErrLeaseLost        = errors.New("queue: lease lost")
	ErrNotFound         = errors.New("queue: not found")
	ErrDead             = errors.New("queue: item is dead")
	errUnexpectedScript = errors.New("queue: unexpected script reply")
)

// Config configures a [Queue]. The zero value is valid: every field has a
// documented default.
type Config struct {
	// BackoffBase is the delay before the first retry of a nacked item; it
	// doubles with each attempt, up to BackoffMax, and each delay is drawn
	// uniformly from its upper half (jitter, so retries of a burst of
	// failures spread out). Default 1s.
	BackoffBase time.Duration
	// BackoffMax caps the retry delay. Default 10m.
	BackoffMax time.Duration
	// Lease is how long a claim lasts: past it, the next claim (or
	// [Queue.Tidy]) hands the item to another worker. Default 30s; at
	// least 1ms.
	Lease time.Duration
	// MaxAttempts is how many claims an item gets: a Nack or an expired
	// lease at the last one moves it to the dead letters. Default 5.
	MaxAttempts int
	// MaxPayload bounds payloads and results, in bytes. Default 1 MiB.
	MaxPayload int
	// Prefix starts every Redis key of the queue. Default "worksteal".
	Prefix string
	// ResultRetention is how long an acked item's result is kept for
	// [Queue.Result] and [Queue.Wait]. Default 24h; at least 1ms.
	ResultRetention time.Duration
	// WaitBlock is the longest one blocking read of [Queue.Wait]; between
	// reads Wait re-reads the item's state and its ctx, so it bounds how
	// late Wait sees a cancelled ctx, or an item dead-lettered by Tidy or
	// Claim.
	// Rounded down to whole seconds (the unit of Redis's blocking
	// timeouts), at least 1s. Default 1s.
	WaitBlock time.Duration

	// Set by this repository's tests only (internal/hooks): the retry
	// jitter, uniform in [0, 1) and safe for concurrent use; nil is
	// math/rand/v2.Float64. A value out of range is clamped (see backoff).
	jitter func() float64
}

func init() {
	hooks.QueueConfig = func(cfg any, jitter func() float64) any {
		c := cfg.(Config)
		c.jitter = jitter
		return c
	}
}

func (c Config) withDefaults() Config {
	c.BackoffBase = cmp.Or(c.BackoffBase, backoffBaseDefault)
	c.BackoffMax = cmp.Or(c.BackoffMax, backoffMaxDefault)
	c.Lease = cmp.Or(c.Lease, leaseDefault)
	c.MaxAttempts = cmp.Or(c.MaxAttempts, maxAttemptsDefault)
	c.MaxPayload = cmp.Or(c.MaxPayload, maxPayloadDefault)
	c.Prefix = cmp.Or(c.Prefix, prefixDefault)
	c.ResultRetention = cmp.Or(c.ResultRetention, resultRetentionDefault)
	c.WaitBlock = cmp.Or(c.WaitBlock, waitBlockDefault)
	return c
}

func (c Config) validate() error {
	switch {
	case c.BackoffBase < 0:
		return fmt.Errorf("%w: BackoffBase %v is negative", ErrInvalidConfig, c.BackoffBase)
	case c.BackoffMax < c.BackoffBase:
		return fmt.Errorf("%w: BackoffMax %v is below BackoffBase %v", ErrInvalidConfig, c.BackoffMax, c.BackoffBase)
	case c.Lease < time.Millisecond:
		return fmt.Errorf("%w: Lease %v is below 1ms", ErrInvalidConfig, c.Lease)
	case c.MaxAttempts < 1:
		return fmt.Errorf("%w: MaxAttempts %d is below 1", ErrInvalidConfig, c.MaxAttempts)
	case c.MaxPayload < 1:
		return fmt.Errorf("%w: MaxPayload %d is below 1", ErrInvalidConfig, c.MaxPayload)
	case c.ResultRetention < time.Millisecond:
		return fmt.Errorf("%w: ResultRetention %v is below 1ms", ErrInvalidConfig, c.ResultRetention)
	case c.WaitBlock < time.Second:
		return fmt.Errorf("%w: WaitBlock %v is below 1s", ErrInvalidConfig, c.WaitBlock)
	}
	if err := names.Check(c.Prefix); err != nil {
		return fmt.Errorf("%w: Prefix: %v", ErrInvalidConfig, err)
	}
	return nil
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
	jitter := c.jitter
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
