package queue

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/worksteal/worksteal/internal/names"
	"github.com/worksteal/worksteal/internal/qstore"
	"github.com/worksteal/worksteal/internal/seams"
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

// BatchMax bounds every count argument (Claim's n, a maintenance job's
// Batch, ...) and the items of one script call: a script blocks Redis
// while it runs, so each call stays around a millisecond of work.
const BatchMax = 1000

// Errors of [New]: they wrap a message naming the field or the name's
// fault.
var (
	ErrInvalidConfig = errors.New("queue: invalid config")
	ErrInvalidName   = errors.New("queue: invalid name")
)

// Errors of the queue's calls; those about an argument wrap a message
// naming it. The queue's storage, an internal package that jobs and tasks
// call too, makes them: they are its values, so errors.Is finds them
// whichever package returned them.
var (
	ErrInvalidArgument error = qstore.ErrInvalidArgument
	ErrEmptyPayload    error = qstore.ErrEmptyPayload
	ErrPayloadTooLarge error = qstore.ErrPayloadTooLarge
	ErrLeaseLost       error = qstore.ErrLeaseLost
	ErrNotFound        error = qstore.ErrNotFound
	ErrDead            error = qstore.ErrDead
	// ErrCanceled: the item was canceled ([Queue.Cancel]); a canceled
	// running handler's context has it as its cause.
	ErrCanceled error = qstore.ErrCanceled
	// ErrFinished: a cancel came after the item was acked or dead-lettered.
	ErrFinished error = qstore.ErrFinished
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
	// [github.com/worksteal/worksteal/jobs.TidyStale]) hands the item to
	// another worker. Default 30s; at least 1ms.
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
	// late Wait sees a cancelled ctx, or an item dead-lettered by a
	// claim (or jobs.TidyStale).
	// Rounded down to whole seconds (the unit of Redis's blocking
	// timeouts), at least 1s. Default 1s.
	WaitBlock time.Duration

	// The retry jitter, set by this module's tests only (internal/seams).
	testSeams
}

type testSeams = seams.Queue

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

// store is the storage's config: c, with its defaults applied and checked.
func (c Config) store() qstore.Config {
	return qstore.Config{
		BackoffBase: c.BackoffBase, BackoffMax: c.BackoffMax, Lease: c.Lease,
		MaxAttempts: c.MaxAttempts, MaxPayload: c.MaxPayload, Prefix: c.Prefix,
		ResultRetention: c.ResultRetention, WaitBlock: c.WaitBlock, Jitter: seams.Jitter(&c.testSeams),
	}
}
